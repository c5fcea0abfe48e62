"""Crash safety: the real ``hermes-tui -p`` killed mid-tool or mid-stream, then its session resumed.

Every resume runs against the fake server in strict mode, which refuses (as the real APIs do)
a conversation with an unanswered tool call, so a resume only passes if the stored history
was made sendable again.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.agent.history import INTERRUPTED
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.events import ToolCallStarted, TurnFinished
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import HERMES_TUI, headless_turn

LONG_TEXT = "".join(f"word{n} " for n in range(3000))
WAIT = 60.0  # generous bound for liveness on a loaded machine


class Running:
    """``hermes-tui -p ... --json`` as a child process, its events read as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([HERMES_TUI, "-p", *args, "--json"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ))
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.text = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.put(json.loads(line))

    def wait_for(self, kind: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.2)
            except queue.Empty:
                assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
                continue
            if event["type"] == "text_delta":
                self.text += event["text"]
            if event["type"] == kind:
                return event
        raise AssertionError(f"no {kind} event within {WAIT} s")

    def stream_for(self, seconds: float) -> str:
        """Read text deltas for ``seconds``; returns all the text received so far."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.wait_for("text_delta")
        return self.text

    def finish(self, sig: int) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=WAIT)


@pytest.fixture
def strict(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> Iterator[FakeLLMServer]:
    fake_llm_env.strict = True
    yield fake_llm_env


def stored(hermes_home: Path, session_id: int) -> list[dict[str, Any]]:
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    try:
        return [m.to_llm() for m in memory.get_messages(session_id)]
    finally:
        memory.close()


def resume(server: FakeLLMServer, session_id: int) -> str:
    """Continue the session as ``-p --session`` does, in this process (the killed run is the real
    one); it must be answered without a refusal. Returns what was sent."""
    server.reset()
    server.queue(Reply(text="Resumed fine."))
    assert headless_turn("Where were we?", session_id)[-1] == TurnFinished("Resumed fine.", 0, "done")
    assert server.violations == [] and server.refused == []
    return json.dumps(server.requests[0].messages)


# The kill and the signal are above the wire, each on one; a resumed broken history is answered on
# both wires in test_history (test_resume_of_a_broken_session_is_answered) and just below.
@on_wire("openai")
def test_kill_9_during_a_tool_then_resume(strict: FakeLLMServer, hermes_home: Path) -> None:
    strict.queue(Reply(text="Running it.", tool_calls=[ToolCall("run_bash", {"command": "sleep 4"})]))
    run = Running("Run the slow command.", "--yes")
    session_id = run.wait_for("turn_started")["session_id"]
    usage = run.wait_for("usage")  # --json usage events say how full the window is
    assert usage["context_limit"] and 0 < usage["context_tokens"] < usage["context_limit"]
    run.wait_for("tool_call_started")
    run.finish(signal.SIGKILL)
    messages = stored(hermes_home, session_id)
    assert messages[-1]["role"] == "assistant" and messages[-1]["tool_calls"]  # the call, without its result
    sent = resume(strict, session_id)
    assert INTERRUPTED in sent and "Run the slow command." in sent


@on_wire("anthropic")
def test_kill_9_during_a_stream_keeps_the_partial_answer(strict: FakeLLMServer, hermes_home: Path) -> None:
    strict.queue(Reply(text=LONG_TEXT, chunk_size=6, chunk_delay=0.02))
    run = Running("Tell me a long story.")
    session_id = run.wait_for("turn_started")["session_id"]
    run.wait_for("text_delta")
    seen_before = run.stream_for(1.0)  # what had arrived 2.5 s before the kill must be saved
    run.stream_for(2.5)  # (PERSIST_EVERY is 1 s: the margin is for a loaded machine)
    run.finish(signal.SIGKILL)
    messages = stored(hermes_home, session_id)
    assert messages[-1]["role"] == "assistant"
    saved = messages[-1]["content"]
    assert LONG_TEXT.startswith(saved) and len(saved) >= len(seen_before) > 0
    sent = resume(strict, session_id)
    assert saved[:200] in sent


# Each signal once, each on its own wire: the signal handling is above the wire.
@pytest.mark.parametrize("fake_llm_env,sig,code", [("openai", signal.SIGTERM, 143), ("anthropic", signal.SIGHUP, 129)],
                         indirect=["fake_llm_env"])
def test_sigterm_and_sighup_act_like_ctrl_c(strict: FakeLLMServer, hermes_home: Path, sig: int, code: int) -> None:
    strict.queue(Reply(text=LONG_TEXT, chunk_size=6, chunk_delay=0.02))
    run = Running("Tell me a long story.")
    session_id = run.wait_for("turn_started")["session_id"]
    run.wait_for("text_delta")
    run.stream_for(0.5)
    assert run.finish(sig) == code
    messages = stored(hermes_home, session_id)
    assert messages[-1]["role"] == "assistant" and LONG_TEXT.startswith(messages[-1]["content"])
    assert len(messages[-1]["content"]) >= len(run.text)  # everything shown was stored
    assert len(strict.requests) == 1  # cancelled: no skill, no summary call
    resume(strict, session_id)


@on_wire("anthropic")
def test_sigterm_during_a_tool_stores_its_cancellation(strict: FakeLLMServer, hermes_home: Path) -> None:
    strict.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "sleep 30"})]))
    run = Running("Run the slow command.", "--yes")
    session_id = run.wait_for("turn_started")["session_id"]
    run.wait_for("tool_call_started")
    assert run.finish(signal.SIGTERM) == 143
    messages = stored(hermes_home, session_id)
    assert messages[-1]["role"] == "tool" and "ancel" in messages[-1]["content"]
    resume(strict, session_id)


class FillingStore(MemoryStore):
    """A real store whose file stops growing on demand: SQLite's ``max_page_count`` makes every
    write that needs a new page fail with the same "database or disk is full" as a full disk."""

    def __init__(self, path: Path) -> None:
        self._connections: list[sqlite3.Connection] = []
        self.full = False
        super().__init__(path)

    def _connect(self) -> sqlite3.Connection:
        conn = super()._connect()
        self._connections.append(conn)
        if self.full:
            self._cap(conn)
        return conn

    def _cap(self, conn: sqlite3.Connection) -> None:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages if self.full else 2**30}")

    def fill(self, full: bool = True) -> None:
        self.full = full
        for conn in self._connections:
            self._cap(conn)


def test_full_disk_mid_turn_leaves_a_sendable_history(strict: FakeLLMServer, hermes_home: Path,
                                                      workspace: Path) -> None:
    (workspace / "big.txt").write_text("a fairly long line of text\n" * 2000)
    config = Config.load()
    memory = FillingStore(config.db_path)
    skills = SkillManager(config.skills_dir)
    try:
        strict.queue(Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "big.txt"})]))
        agent = AgentLoop(config, memory, skills)
        with pytest.raises(Exception, match=r"(?i)full"):  # the store may phrase it its own way
            for event in agent.run_turn("Read big.txt."):
                if isinstance(event, ToolCallStarted):
                    memory.fill()  # the call is stored; its 54 KB result will not fit
        memory.fill(False)
        assert stored(hermes_home, agent.session_id)[-1]["tool_calls"]  # a call without its result

        strict.queue(Reply(text="Carrying on."))  # the same agent goes on: its view is repaired
        assert list(agent.run_turn("Go on."))[-1] == TurnFinished("Carrying on.", 0, "done")
        strict.queue(Reply(text="Resumed."))  # and so does a resumed one
        again = AgentLoop(config, memory, skills, session_id=agent.session_id)
        assert list(again.run_turn("And now?"))[-1] == TurnFinished("Resumed.", 0, "done")
        assert strict.violations == [] and strict.refused == []
        assert INTERRUPTED in json.dumps(strict.requests[-1].messages)
    finally:
        memory.close()
