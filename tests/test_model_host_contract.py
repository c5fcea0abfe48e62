"""One contract for every place model calls run (``llm.ModelHost``), against the fake server.

The same calls go through ``LLMClient`` to each host: this process (``LocalHost``), the TUI's
stream helper (``llm_host.StreamHost``) and the per-user warm helper of ``-p`` runs
(``warm.WarmHost``), in both wire formats. For the two helpers, litellm is made unusable in this
process first, so a helper that silently fell back to parsing here fails the test instead of
passing it. One helper of each kind serves the whole module (starting one imports litellm).
"""

from __future__ import annotations

import inspect
import threading
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import llm, llm_host, warm
from hermes_tui.config import Config
from hermes_tui.events import TextDelta
from hermes_tui.llm import LLMClient, LocalHost, ModelHost, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.llm_host import StreamHost
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import wait_until

pytestmark = pytest.mark.timeout(900)  # each helper's first start imports litellm: a minute loaded

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.txt"}]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
SLOW = Reply(text=" ".join(f"w{n}" for n in range(200)), chunk_size=4, chunk_delay=0.5)  # ~25 s to stream


@pytest.fixture(scope="module")
def stream_host() -> Iterator[StreamHost]:
    host = StreamHost()
    host.start()
    yield host
    host.stop()


@pytest.fixture(scope="module")
def warm_host(runtime: Path) -> warm.WarmHost:
    """One for the module, as a ``-p`` run has one; the helper starts at its first call."""
    return warm.WarmHost()


def _forbid_litellm_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden() -> Any:
        raise AssertionError("a helper's call ran in the calling process")

    monkeypatch.setattr(llm, "_lib", forbidden)


# What each helper runs in its own process: every call (the TUI's process never imports litellm).
EVERY = frozenset({"stream", "complete", "count_tokens", "count_many", "max_input_tokens"})
REMOTE = {"local": frozenset(), "stream-helper": EVERY, "warm-helper": EVERY}

Host = Callable[..., ModelHost]


@pytest.fixture(params=list(REMOTE))
def host(request: pytest.FixtureRequest, fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
         runtime: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    """``host(*methods)``: the host under test, got once the test has computed what this process
    would answer; when the host runs all ``methods`` elsewhere, this process can no longer."""
    name: str = request.param
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HERMES_HELPER", "on")

    def get(*methods: str) -> ModelHost:
        chosen: ModelHost = (LocalHost() if name == "local" else request.getfixturevalue("stream_host")
                             if name == "stream-helper" else request.getfixturevalue("warm_host"))
        if REMOTE[name] and set(methods) <= REMOTE[name]:
            _forbid_litellm_here(monkeypatch)
        return chosen

    return get


def _collect(client: LLMClient) -> list[Any]:
    return list(client.stream(MESSAGES, TOOLS, threading.Event()))


def test_a_stream_brings_text_tool_calls_and_usage(fake_llm_env: FakeLLMServer, host: Host) -> None:
    fake_llm_env.queue(Reply(text="Let me look at **a.txt**.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})],
                             usage=(321, 45), chunk_size=3))
    items = _collect(LLMClient(Config.load(), host("stream")))
    result = items[-1]
    assert isinstance(result, StreamResult) and not result.cancelled
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == result.text == "Let me look at **a.txt**."
    assert sum(isinstance(i, TextDelta) for i in items) > 3  # piece by piece, not at the end
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.completion_tokens) == (321, 45)


def test_complete_takes_its_timeout_as_a_keyword_across_the_process_boundary(
        fake_llm_env: FakeLLMServer, host: Host) -> None:
    client = LLMClient(Config.load(), host("complete"))
    fake_llm_env.queue(Reply(text="The whole answer."))
    assert client.complete([{"role": "user", "content": "Summarize."}], timeout=60.0) == "The whole answer."
    # The deadline reaches wherever the call runs: a reply slower than it is cut there.
    fake_llm_env.queue(SLOW)
    with pytest.raises(LLMError) as caught:
        client.complete([{"role": "user", "content": "Summarize slowly."}], timeout=1.0)
    assert "did not finish answering within 1 s" in caught.value.message


def test_complete_is_abandoned_when_its_cancel_is_set(fake_llm_env: FakeLLMServer,
                                                      host: Host) -> None:
    client = LLMClient(Config.load(), host("complete"))
    fake_llm_env.queue(SLOW, Reply(text="next"))
    cancel = threading.Event()
    sent = len(fake_llm_env.requests)

    def cancel_once_sent() -> None:  # the user gives up while the answer streams
        wait_until(lambda: len(fake_llm_env.requests) > sent)
        cancel.set()

    threading.Thread(target=cancel_once_sent, daemon=True).start()
    with pytest.raises(LLMError) as caught:
        client.complete([{"role": "user", "content": "Summarize slowly."}], timeout=120.0, cancel=cancel)
    assert "abandoned" in caught.value.message
    assert client.complete([{"role": "user", "content": "Again."}], timeout=60.0) == "next"


def test_token_counts_and_the_window_are_the_ones_this_process_would_find(host: Host) -> None:
    config = Config.load()
    here = LocalHost()
    expected = (here.count_tokens(config, MESSAGES, TOOLS), here.count_tokens(config, MESSAGES, None),
                here.max_input_tokens(config))
    client = LLMClient(config, host("count_tokens", "max_input_tokens"))
    found = (client.count_tokens(MESSAGES, TOOLS), client.count_tokens(MESSAGES), client.max_input_tokens())
    assert found == expected
    assert found[0] > found[1] > 0  # the tool schemas count too
    if config.provider == "anthropic":
        assert isinstance(found[2], int) and found[2] > 0


def test_many_counts_are_one_call_with_the_counts_this_process_would_find(host: Host) -> None:
    config = Config.load()
    lists = [MESSAGES[:1], MESSAGES[1:], MESSAGES, [{"role": "tool", "tool_call_id": "c1", "content": "x " * 300}]]
    here = LocalHost()
    expected = [here.count_tokens(config, messages, None) for messages in lists]
    client = LLMClient(config, host("count_many"))
    assert client.count_many(lists) == expected
    assert expected[3] > expected[2] > expected[1] > 0
    assert client.count_many([]) == []


def test_a_provider_error_is_the_same_one_line_everywhere(fake_llm_env: FakeLLMServer,
                                                          host: Host) -> None:
    client = LLMClient(Config.load(), host("stream", "complete"))
    fake_llm_env.queue(Fault(401), Fault(401))
    with pytest.raises(LLMError) as streamed:
        _collect(client)
    with pytest.raises(LLMError) as completed:
        client.complete([{"role": "user", "content": "Summarize."}], timeout=60.0)
    for error in (streamed.value, completed.value):
        assert error.status == 401 and "rejected the API key" in error.message and not error.retryable


# -- the shape of the contract -------------------------------------------------------------------


METHODS = ("stream", "complete", "count_tokens", "count_many", "max_input_tokens")


def test_every_host_has_each_method_of_the_protocol_with_its_signature() -> None:
    declared = {name for name, value in vars(ModelHost).items() if inspect.isfunction(value) and name[0] != "_"}
    assert declared == set(METHODS)
    for implementation in (LocalHost, StreamHost, warm.WarmHost):
        for name in METHODS:
            ours = inspect.signature(getattr(implementation, name))
            theirs = inspect.signature(getattr(ModelHost, name))
            assert list(ours.parameters.items()) == list(theirs.parameters.items()), (implementation, name)


def test_every_request_record_is_served_and_each_method_has_one() -> None:
    records = set(typing.get_args(llm_host.Request))
    assert set(llm_host.SERVED) == records
    fields = {record: tuple(f for f in record.__dataclass_fields__ if f != "config") for record in records}
    for name in METHODS:
        parameters = [p for p in inspect.signature(getattr(ModelHost, name)).parameters
                      if p not in ("self", "config", "cancel")]
        assert tuple(parameters) in fields.values(), name
