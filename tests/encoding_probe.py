"""Run by tests/test_token_encoding.py in a fresh interpreter: which tokenizers a gpt-4o turn loads.

``python -m tests.encoding_probe HOME`` counts a request (messages and tool schemas) for
``openai:gpt-4o`` the way Hermes does, streams one tool-calling answer from the fake server (litellm
counts the prompt again inside ``completion``), and notes which tiktoken encodings are loaded after
each. Then it counts for ``anthropic:claude-sonnet-5`` and ``openai:gpt-4``, puts litellm's own
``default_encoding`` module back, and counts the same requests with litellm alone, so the test
can compare. Prints one JSON object. One interpreter for all of it: ``import litellm`` costs seconds.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import tiktoken.registry

from hermes_tui import llm
from hermes_tui.config import Config
from hermes_tui.llm import LLMClient, StreamResult
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.lazy_probe import MESSAGES, TOOLS

DEFAULT_ENCODING = "litellm.litellm_core_utils.default_encoding"
REQUESTS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "with_tools": ([*MESSAGES, {"role": "assistant", "content": "naïve café 日本語 <|endoftext|> " + "x" * 3000}], TOOLS),
    "plain": (MESSAGES, None),
}
MODELS = {"gpt-4o": ("openai", "gpt-4o"), "gpt-4": ("openai", "gpt-4"), "claude": ("anthropic", "claude-sonnet-5")}


def loaded() -> dict[str, Any]:
    """The tiktoken encodings loaded so far, and whether litellm's own default_encoding module ran."""
    module = sys.modules.get(DEFAULT_ENCODING)
    return {"encodings": sorted(tiktoken.registry.ENCODINGS), "litellm_default_module": hasattr(module, "__file__")}


def counts(client: LLMClient) -> dict[str, int]:
    return {kind: client.count_tokens(messages, tools) for kind, (messages, tools) in REQUESTS.items()}


def main(home: Path) -> None:
    report: dict[str, Any] = {"hermes": {}}
    keys = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-test"}
    with FakeLLMServer() as server:
        clients = {name: LLMClient(replace(Config(home=home, workspace=home), provider=provider, model=model,
                                           api_keys=keys,
                                           api_base=server.url if provider == "anthropic" else server.openai_base))
                   for name, (provider, model) in MODELS.items()}
        report["hermes"]["gpt-4o"] = counts(clients["gpt-4o"])
        report["after_count"] = loaded()
        server.queue(Reply(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})], usage=(321, 45)))
        items = list(clients["gpt-4o"].stream(*REQUESTS["with_tools"], threading.Event()))
        assert isinstance(items[-1], StreamResult) and items[-1].tool_calls, items
        report["after_stream"] = loaded()
        for name in ("gpt-4", "claude"):
            report["hermes"][name] = counts(clients[name])
    del sys.modules[DEFAULT_ENCODING]  # litellm's own module again: its counts as they are without Hermes
    importlib.import_module(DEFAULT_ENCODING)
    report["restored"] = loaded()
    lib = llm._lib()
    report["litellm"] = {name: {kind: int(lib.token_counter(model=client.model_string, messages=messages,
                                                            tools=tools or None))
                                for kind, (messages, tools) in REQUESTS.items()}
                         for name, client in clients.items()}
    print(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
