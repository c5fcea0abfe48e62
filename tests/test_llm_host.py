"""Streams parsed in the helper process (hermes_tui/llm_host.py) against the fake server.

The helper runs the same ``LLMClient.stream`` the caller would, so the test compares the two on
the same replies: the same text, tool calls, usage and error lines. Then what only a second
process can do wrong: cancel across the socket, a helper killed mid-stream, a caller killed
(the helper must not outlive it), and a client without the key.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import llm_host, wire
from hermes_tui.config import Config
from hermes_tui.events import Notice, TextDelta
from hermes_tui.llm import LLMClient, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.llm_host import StreamHost, StreamRequest
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.txt"}]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
LONG = " ".join(f"word{n}" for n in range(400))


@pytest.fixture(scope="module")
def host() -> Iterator[StreamHost]:
    """One helper for the module, as the app has one per process (starting one imports litellm)."""
    helper = StreamHost()
    helper.start()
    yield helper
    helper.stop()


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


def collect(client: LLMClient, cancel: threading.Event | None = None) -> list[Any]:
    return list(client.stream(MESSAGES, TOOLS, cancel or threading.Event()))


def summary(items: list[Any]) -> tuple[Any, ...]:
    """What a caller uses from a stream; call ids differ per request, so they are left out."""
    result = items[-1]
    assert isinstance(result, StreamResult)
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    return (text, result.text, [(c.name, c.raw) for c in result.tool_calls], result.usage, result.cancelled)


def test_the_helper_streams_what_the_caller_would_parse_itself(env: FakeLLMServer, host: StreamHost) -> None:
    reply = Reply(text="Let me look at **a.txt** first.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})],
                  usage=(321, 45), chunk_size=3)
    env.queue(reply, reply)
    config = Config.load()
    here = collect(LLMClient(config))
    there = collect(LLMClient(config, host))
    assert summary(there) == summary(here)
    text, _, calls, usage, _ = summary(there)
    assert text == "Let me look at **a.txt** first." and calls == [("read_file", '{"path": "a.txt"}')]
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (321, 45)
    assert sum(isinstance(i, TextDelta) for i in there) > 5  # streamed piece by piece, not at the end
    assert env.requests[1].messages == env.requests[0].messages


def test_errors_and_retry_notices_arrive_as_the_same_lines(env: FakeLLMServer, host: StreamHost) -> None:
    config = Config.load()
    outcomes = []
    for client in (LLMClient(config), LLMClient(config, host)):
        env.queue(Fault(429, retry_after=0), Fault(401))
        notices: list[str] = []
        with pytest.raises(LLMError) as caught:
            for item in client.stream(MESSAGES, None, threading.Event()):
                if isinstance(item, Notice):
                    notices.append(item.message)
        error = caught.value
        outcomes.append((notices, error.message, error.status, error.retryable, error.too_long))
    assert outcomes[1] == outcomes[0]
    notices, message, status, _, _ = outcomes[1]
    assert len(notices) == 1 and "429" in notices[0]
    assert status == 401 and "rejected the API key" in message


def test_cancel_reaches_the_helper_and_it_serves_the_next_stream(env: FakeLLMServer, host: StreamHost) -> None:
    env.queue(Reply(text=LONG, chunk_size=5, chunk_delay=0.02), Reply(text="next"))
    client = LLMClient(Config.load(), host)
    cancel = threading.Event()
    items: list[Any] = []
    for item in client.stream(MESSAGES, None, cancel):
        items.append(item)
        if isinstance(item, TextDelta):
            cancel.set()
    result = items[-1]
    assert isinstance(result, StreamResult) and result.cancelled
    assert 0 < len(result.text) < len(LONG) and not result.tool_calls
    assert summary(collect(client))[0] == "next"


def test_a_caller_hanging_up_mid_stream_closes_the_providers_stream(env: FakeLLMServer, host: StreamHost) -> None:
    """The caller stops reading (its turn thread gave up, or it died): the helper must not keep
    downloading the answer, and it serves the next stream."""
    env.queue(Reply(text=LONG, chunk_size=5, chunk_delay=0.02), Reply(text="next"))
    client = LLMClient(Config.load(), host)
    items = client.stream(MESSAGES, None, threading.Event())
    assert isinstance(next(i for i in items if isinstance(i, TextDelta)), TextDelta)
    items.close()  # hangs up: the connection to the helper closes, no "cancel" was sent
    deadline = time.monotonic() + 10
    while env.open_connections and time.monotonic() < deadline:
        time.sleep(0.02)
    assert env.open_connections == 0
    assert summary(collect(client))[0] == "next"


@on_wire("anthropic")
def test_a_helper_killed_mid_stream_is_one_line_and_the_next_stream_starts_another(
        env: FakeLLMServer, host: StreamHost) -> None:
    env.queue(Reply(text=LONG, chunk_size=5, chunk_delay=0.02), Reply(text="after the crash"))
    client = LLMClient(Config.load(), host)
    killed = host.pid
    assert killed is not None
    received = ""
    with pytest.raises(LLMError) as caught:
        for item in client.stream(MESSAGES, None, threading.Event()):
            if isinstance(item, TextDelta):
                received += item.text
                if host.pid == killed:
                    os.kill(killed, signal.SIGKILL)
    assert received and len(received) < len(LONG)
    message = caught.value.message
    assert "helper process" in message and "stopped unexpectedly" in message and "\n" not in message
    assert summary(collect(client))[0] == "after the crash"
    assert host.pid not in (None, killed)


@on_wire("openai")
def test_a_helper_found_dead_is_replaced_without_a_word(env: FakeLLMServer, host: StreamHost) -> None:
    env.queue(Reply(text="before"), Reply(text="fine"))
    client = LLMClient(Config.load(), host)
    collect(client)  # ready
    dead = host.pid
    assert dead is not None
    os.kill(dead, signal.SIGKILL)
    items = collect(client)
    assert summary(items)[0] == "fine" and not any(isinstance(i, Notice) for i in items)
    assert host.pid != dead


def test_only_its_caller_can_connect(env: FakeLLMServer, host: StreamHost) -> None:
    collect(LLMClient(Config.load(), host))  # ready
    address = host._address  # where the helper listens
    assert stat.S_IMODE(os.stat(os.path.dirname(address)).st_mode) == 0o700
    with pytest.raises(AuthenticationError):
        Client(address, family="AF_UNIX", authkey=b"a guessed key")
    env.queue(Reply(text="still serving"))
    assert summary(collect(LLMClient(Config.load(), host)))[0] == "still serving"


def test_without_a_helper_the_caller_parses_its_streams_itself(env: FakeLLMServer, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """A temporary folder too deep for a Unix socket's address: the helper cannot listen, and
    the answer still comes (parsed here), with a line in the log."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    env.queue(Reply(text="parsed here", tool_calls=[ToolCall("read_file", {"path": "b.txt"})]),
              Reply(text="and again"))
    helper = StreamHost()
    try:
        client = LLMClient(Config.load(), helper)
        assert summary(collect(client))[:3] == ("parsed here", "parsed here", [("read_file", '{"path": "b.txt"}')])
        assert summary(collect(client))[0] == "and again"
        assert helper.pid is None and not list(deep.iterdir())  # nothing left behind
        assert any("streaming in this process" in r.getMessage() for r in caplog.records)
    finally:
        helper.stop()


CALLER = """
import sys, time
from hermes_tui.llm_host import StreamHost
host = StreamHost()
host.start()
host._ready.wait(120)
print(host.pid, host._address, flush=True)
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for a parent that never reaps it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as status:
            return status.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_the_helper_ignores_the_callers_folder_and_ends_with_it_even_after_kill_9(tmp_path: Path) -> None:
    """The caller runs in the workspace, where the model writes files: a planted ``litellm.py``
    there must not be what the helper imports."""
    planted = tmp_path / "planted"
    (tmp_path / "litellm.py").write_text(f"open({str(planted)!r}, 'w').close()\n")
    caller = subprocess.Popen([sys.executable, "-c", CALLER], stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent)))
    try:
        assert caller.stdout is not None
        pid_text, address = caller.stdout.readline().split()
        helper = int(pid_text)
        assert not _gone(helper) and os.path.exists(address)
        assert not planted.exists()  # ready means litellm was imported: the real one
        caller.send_signal(signal.SIGKILL)
        caller.wait()
        deadline = time.monotonic() + 30
        while not _gone(helper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(helper), "the helper outlived the process that started it"
        assert not os.path.exists(os.path.dirname(address))  # its socket folder went with it
    finally:
        caller.kill()
        caller.wait()


class Planted:
    """A pickle whose unpickling creates a folder."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def test_the_helper_never_unpickles_even_from_a_client_with_the_key(env: FakeLLMServer, host: StreamHost,
                                                                     tmp_path: Path) -> None:
    collect(LLMClient(Config.load(), host))  # ready
    marker = tmp_path / "ran"
    for attack in ("pickle", "forged"):
        connection = Client(host._address, family="AF_UNIX", authkey=host._key)
        if attack == "pickle":
            connection.send(Planted(marker))
        else:  # a real request, signed with another key
            request = StreamRequest(Config.load(), MESSAGES, None)
            connection.send_bytes(wire.sign(b"not the key", wire.dumps(llm_host.RECORDS, request)))
        with pytest.raises((EOFError, ConnectionResetError)):
            connection.recv_bytes()  # refused: hung up, no answer
        connection.close()
        assert not marker.exists(), attack
    env.queue(Reply(text="still serving"))
    assert summary(collect(LLMClient(Config.load(), host)))[0] == "still serving"
