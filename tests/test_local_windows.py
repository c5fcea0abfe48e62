"""Windows and token counts from local servers: asked when the server says, assumed (and said so)
when it does not; counts a server did not send are marked as estimates, tool schemas included."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hermes_tui.agent.context import ContextWindow
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.events import Usage
from hermes_tui.llm import LLMClient
from hermes_tui.memory.store import MemoryStore
from hermes_tui.providers import LOCAL_CONTEXT_WINDOW
from hermes_tui.skills.manager import SkillManager
from hermes_tui.windows import ASSUMED, SERVER, SETTING, ask_server, forget_answers
from tests.fakes.server import FakeLLMServer, Reply


class _Introspection(BaseHTTPRequestHandler):
    """Answers the endpoints of ``ROUTES`` (path -> JSON), 404 for the rest."""

    routes: ClassVar[dict[str, Any]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.routes.get(self.path)
        data = json.dumps(body).encode() if body is not None else b'{"detail":"Not Found"}'
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()


@pytest.fixture
def introspection() -> Iterator[tuple[str, dict[str, Any]]]:
    routes: dict[str, Any] = {}
    handler = type("Handler", (_Introspection,), {"routes": routes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", routes
    forget_answers()  # a kept answer belongs to this server; a later test's may get its port
    server.shutdown()
    server.server_close()


def _config(hermes_home: Path, provider: str, base: str, **extra: str) -> Config:
    return Config.load({"HERMES_PROVIDER": provider, "HERMES_MODEL": "m", "HERMES_API_BASE": base,
                        "HERMES_HOME": str(hermes_home), **extra})


def test_llama_cpp_vllm_and_ollama_say_their_window(introspection, hermes_home: Path) -> None:
    url, routes = introspection
    routes["/props"] = {"default_generation_settings": {"n_ctx": 4096}}  # llama.cpp's llama-server
    assert ask_server(_config(hermes_home, "openai-compatible", url + "/v1")) == 4096
    routes.clear()
    forget_answers()  # the same address, another server
    routes["/v1/models"] = {"data": [{"id": "m", "max_model_len": 16384}]}  # vLLM
    assert ask_server(_config(hermes_home, "openai-compatible", url + "/v1")) == 16384
    routes["/api/ps"] = {"models": [{"name": "m:latest", "context_length": 6144}]}  # Ollama, model loaded
    assert ask_server(_config(hermes_home, "ollama", url)) == 6144
    routes["/api/ps"] = {"models": []}
    routes["/api/show"] = {"parameters": "temperature 0.7\nnum_ctx 12288"}  # Ollama, from the Modelfile
    assert ask_server(_config(hermes_home, "ollama", url)) == 12288


def test_a_server_that_does_not_say_gets_the_assumed_window(introspection, hermes_home: Path) -> None:
    url, routes = introspection
    config = _config(hermes_home, "openai-compatible", url + "/v1")
    window = ContextWindow(LLMClient(config), config)
    assert window.limit() == LOCAL_CONTEXT_WINDOW == 8_192 and window.window().source == ASSUMED and window.assumed
    config = _config(hermes_home, "openai-compatible", url + "/v1", HERMES_CONTEXT_TOKENS="2048")
    window = ContextWindow(LLMClient(config), config)
    assert window.limit() == 2048 and window.window().source == SETTING and not window.assumed
    routes["/props"] = {"default_generation_settings": {"n_ctx": 4096}}
    window = ContextWindow(LLMClient(config), config)
    assert window.limit() == 4096 and window.window().source == SERVER  # the server's own number wins


def test_counts_the_server_did_not_send_are_estimates_with_the_tool_schemas(
        fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    fake_llm.strict_local = True
    fake_llm.stream_usage = False  # like llama.cpp's server
    config = Config.load({"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": "local-model",
                          "HERMES_API_BASE": fake_llm.openai_base, "HERMES_HOME": str(hermes_home),
                          "HERMES_WORKSPACE": str(workspace)})
    memory = MemoryStore(config.db_path)
    loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
    fake_llm.queue(Reply(text="hello there"))
    usage = [e for e in loop.run_turn("hi") if isinstance(e, Usage)][-1]
    assert usage.estimated and usage.context_assumed and usage.context_limit == LOCAL_CONTEXT_WINDOW
    without_tools = loop.llm.count_tokens(fake_llm.requests[-1].body["messages"])
    assert usage.prompt_tokens > without_tools + 500  # the tool schemas are counted too
    assert usage.to_dict()["estimated"] is True and usage.to_dict()["context_assumed"] is True
    fake_llm.stream_usage = True  # a server that sends its counts: they are not estimates
    fake_llm.queue(Reply(text="again", usage=(321, 4)))
    usage = [e for e in loop.run_turn("hi again") if isinstance(e, Usage)][-1]
    assert not usage.estimated and usage.prompt_tokens == 321
    memory.close()


def test_a_count_the_server_sent_is_never_taken_for_litellms_stand_in(
        fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    """A server whose own prompt count equals the count of the messages alone (no tool schemas)
    sent it: it is no estimate, and nothing is counted to find that out."""
    config = Config.load({"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": "local-model",
                          "HERMES_API_BASE": fake_llm.openai_base, "HERMES_HOME": str(hermes_home),
                          "HERMES_WORKSPACE": str(workspace)})
    client = LLMClient(config)
    messages = [{"role": "user", "content": "Read a.txt, please."}]
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
    alone = client.count_tokens(messages)
    fake_llm.queue(Reply(text="ok", usage=(alone, 2)))
    result = list(client.stream(messages, tools, threading.Event()))[-1]
    assert result.usage is not None and result.usage.prompt_tokens == alone and not result.usage.estimated
    fake_llm.stream_usage = False  # like llama.cpp's server: litellm's stand-in, replaced by an estimate
    fake_llm.queue(Reply(text="ok"))
    result = list(client.stream(messages, tools, threading.Event()))[-1]
    assert result.usage is not None and result.usage.estimated and result.usage.prompt_tokens > alone
