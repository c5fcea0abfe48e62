"""The window a local OpenAI-style server reports, read from the server itself: llama.cpp's
``/props``, vLLM's ``/v1/models`` ``max_model_len``, and llama-cpp-python's refusal of an
overlong prompt (it has no endpoint that says). Asked once per server; no answer falls back to
the assumed window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent.context import ContextWindow
from hermes_tui.config import Config
from hermes_tui.llm import LLMClient
from hermes_tui.providers import LOCAL_CONTEXT_WINDOW
from hermes_tui.windows import ASSUMED, OVERFLOW_TOKENS, SERVER, Window, forget_answers
from tests.fakes.server import FakeLLMServer


@pytest.fixture(autouse=True)
def _fresh_answers() -> Iterator[None]:
    """A kept answer belongs to one server: a later test's server may get the same port."""
    forget_answers()
    yield
    forget_answers()


def _window(server: FakeLLMServer, hermes_home: Path) -> Window:
    config = Config.load({"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": "local-model",
                          "HERMES_API_BASE": server.openai_base, "HERMES_HOME": str(hermes_home)})
    return ContextWindow(LLMClient(config), config).window()


def test_llama_cpp_python_says_its_window_by_refusing_an_overlong_prompt(
        fake_llm: FakeLLMServer, hermes_home: Path) -> None:
    """``python -m llama_cpp.server --n_ctx 4096`` serves no /props and no max_model_len."""
    fake_llm.llama_cpp_python_window = 4096
    assert _window(fake_llm, hermes_home) == Window(4096, SERVER)
    assert fake_llm.introspections[-2:] == ["/extras/tokenize/count", "/v1/completions"]
    assert not fake_llm.requests  # no chat request: nothing reached the model


def test_the_overlong_probe_goes_only_to_llama_cpp_python(fake_llm: FakeLLMServer, hermes_home: Path) -> None:
    """Another server (a hosted one may bill a prompt) is never sent a million tokens."""
    assert _window(fake_llm, hermes_home) == Window(LOCAL_CONTEXT_WINDOW, ASSUMED)
    assert "/v1/completions" not in fake_llm.introspections
    fake_llm.llama_cpp_python_window = OVERFLOW_TOKENS + 10  # larger than the probe: it is answered, not refused
    assert _window(fake_llm, hermes_home) == Window(LOCAL_CONTEXT_WINDOW, ASSUMED)


def test_llama_server_props_and_vllm_max_model_len(fake_llm: FakeLLMServer, hermes_home: Path) -> None:
    fake_llm.props = {"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 1}
    assert _window(fake_llm, hermes_home) == Window(4096, SERVER)
    forget_answers()
    fake_llm.props = {"n_ctx": 3072}  # older llama-server builds said it at the top level
    assert _window(fake_llm, hermes_home) == Window(3072, SERVER)
    forget_answers()
    fake_llm.props = None
    fake_llm.models = [{"id": "local-model", "object": "model", "max_model_len": 16384}]
    assert _window(fake_llm, hermes_home) == Window(16384, SERVER)


def test_the_answer_is_kept_per_server_and_no_answer_is_not(fake_llm: FakeLLMServer, hermes_home: Path) -> None:
    assert _window(fake_llm, hermes_home).source == ASSUMED  # the server does not say (yet)
    fake_llm.llama_cpp_python_window = 4096
    assert _window(fake_llm, hermes_home) == Window(4096, SERVER)
    asked = len(fake_llm.introspections)
    assert _window(fake_llm, hermes_home) == Window(4096, SERVER)  # a new session, a sub-agent: not asked again
    assert len(fake_llm.introspections) == asked
    with FakeLLMServer() as other:  # another server is asked for its own
        other.props = {"default_generation_settings": {"n_ctx": 2048}}
        assert _window(other, hermes_home) == Window(2048, SERVER)


def test_a_server_that_cannot_be_reached_falls_back(hermes_home: Path) -> None:
    with FakeLLMServer() as gone:
        base = gone.openai_base
    config = Config.load({"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": "m", "HERMES_API_BASE": base,
                          "HERMES_HOME": str(hermes_home)})
    assert ContextWindow(LLMClient(config), config).window() == Window(LOCAL_CONTEXT_WINDOW, ASSUMED)
