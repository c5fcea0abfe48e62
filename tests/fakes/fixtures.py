"""Pytest fixtures for the fake LLM server (registered by tests/conftest.py as a plugin).

* ``fake_llm``: a started ``FakeLLMServer``, stopped after the test.
* ``fake_llm_env``: the same, run once per wire format ("openai", "anthropic"), with the HERMES_* and
  key variables set so ``Config.load()`` points Hermes at it; ``server.wire_under_test`` names the wire.
* ``on_wire(wire)``: runs a ``fake_llm_env`` test in one wire format only (see its docstring).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.server import WIRES, FakeLLMServer, Wire


def wire_env(server: FakeLLMServer, wire: Wire) -> dict[str, str]:
    """The environment variables that point Hermes at ``server`` over ``wire``."""
    if wire == "anthropic":
        return {"HERMES_PROVIDER": "anthropic", "HERMES_MODEL": "claude-sonnet-4-5",
                "HERMES_API_BASE": server.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    return {"HERMES_PROVIDER": "openai", "HERMES_MODEL": "test-model",
            "HERMES_API_BASE": server.openai_base, "OPENAI_API_KEY": "sk-test"}


def on_wire(*wires: Wire) -> pytest.MarkDecorator:
    """Run a ``fake_llm_env`` test over ``wires`` only, instead of both.

    For tests of a layer above the wire (signals, permissions, checkpoints, start-up) that spawn a
    real ``hermes-tui``: its second run only repeated LiteLLM's parse of the same stream, at
    seconds of ``import litellm`` each, while the tests of the wire itself (test_fake_server,
    test_engine, test_history, test_llm_host, and the headless cut-stream and provider-error
    tests) keep both formats.
    Such tests alternate wires, so each format still goes through every layer somewhere.
    """
    return pytest.mark.parametrize("fake_llm_env", wires, indirect=True)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A running fake LLM server (answers "ok" until something is queued)."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(params=WIRES)
def fake_llm_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """A running fake server with Hermes' environment pointing at it, once per wire format."""
    wire: Wire = request.param
    with FakeLLMServer() as server:
        server.wire_under_test = wire
        for name, value in wire_env(server, wire).items():
            monkeypatch.setenv(name, value)
        yield server
