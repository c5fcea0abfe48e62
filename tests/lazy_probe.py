"""Run by tests/test_lazy_imports.py in a fresh interpreter: every provider through the lazy import.

``python -m tests.lazy_probe HOME`` imports litellm the way a cold turn does (``llm._lib()``, which
installs ``hermes_tui.lazy_imports``), then streams through every entry of ``PROVIDER_TABLE``
against the fake server (text, a tool call, usage, a retried 429, a refused key) and counts tokens,
and prints one JSON object: what each call returned, and which deferred modules ran when. One
interpreter for all of it: each ``import litellm`` costs seconds.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from hermes_tui import lazy_imports, llm
from hermes_tui.config import Config
from hermes_tui.events import Notice, TextDelta
from hermes_tui.llm import LLMClient, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.providers import PROVIDER_TABLE
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import JumpingClock

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.txt"}]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
NATIVE_WIRE = {"ollama"}  # Ollama's own /api/chat, which the fake server does not speak: errors only


def stream(client: LLMClient) -> dict[str, Any]:
    """One streamed call: its text, tool calls, usage and notices, or its error line."""
    try:
        items = list(client.stream(MESSAGES, TOOLS, threading.Event()))
    except LLMError as error:
        return {"error": str(error)}
    result = items[-1]
    assert isinstance(result, StreamResult)
    usage = result.usage
    return {
        "text": "".join(i.text for i in items if isinstance(i, TextDelta)),
        "calls": [[c.name, c.raw] for c in result.tool_calls],
        "usage": [usage.prompt_tokens, usage.completion_tokens] if usage else None,
        "notices": [i.message for i in items if isinstance(i, Notice)],
    }


def main(home: Path) -> None:
    report: dict[str, Any] = {}
    llm._lib()
    report["after_import"] = lazy_imports.ran()
    reply = Reply(text="Let me look at a.txt.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})],
                  usage=(321, 45), chunk_size=3)
    with FakeLLMServer() as server:
        base = Config(home=home, workspace=home)
        for name, provider in PROVIDER_TABLE.items():
            anthropic = provider.litellm_prefix == "anthropic"
            keys = {provider.key_env_var: "sk-test"} if provider.key_env_var else {}
            config = replace(base, provider=name, model=provider.default_model, api_keys=keys,
                             api_base=server.url if anthropic else server.openai_base)
            client = LLMClient(config, clock=JumpingClock())
            calls: dict[str, Any] = {}
            if name not in NATIVE_WIRE:
                server.queue(reply)
                calls["tool_call"] = stream(client)
                server.queue(Fault(429), Reply(text="made it"))
                calls["retried"] = stream(client)
                server.queue(Fault(401))
            calls["refused"] = stream(client)
            calls["tokens"] = client.count_tokens(MESSAGES, TOOLS)
            report[name] = calls
    report["after_streams"] = lazy_imports.ran()
    report["blocked_loaded"] = [name for name in lazy_imports.BLOCKED if name in sys.modules]
    report["called_ran"] = lazy_imports.called_ran()
    report["proxy_types"] = "litellm.proxy._types" in sys.modules
    report["frozen"] = gc.get_freeze_count()
    report["called_functions"] = {  # run now (dir() runs a body): each listed name is a function there
        name: sorted(f for f in functions if inspect.isfunction(getattr(importlib.import_module(name), f)))
        for name, functions in lazy_imports.CALLED.items() if dir(importlib.import_module(name))}
    print(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
