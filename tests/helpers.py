"""Small helpers shared by engine, headless and surface tests."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from hermes_tui.agent.runtime import build_agent, headless_surface
from hermes_tui.cli import tui_main
from hermes_tui.config import Config
from hermes_tui.events import Event
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager

HERMES_TUI = str(Path(sys.executable).with_name("hermes-tui"))


def run_cli(*args: str, stdin: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run the installed ``hermes-tui`` entry point as a user would, with the test's environment."""
    return subprocess.run(
        [HERMES_TUI, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ), stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``hermes-tui ARGS`` in this process: ``tui_main(argv)``, the code ``run_cli`` runs, with
    stdin, stdout and stderr as strings. A new interpreter would add only its seconds of ``import
    litellm`` and what the program does as a process; tests of that (exit by signal, kill -9, the
    skipped teardown, the environment children inherit, a terminal) keep ``run_cli``."""
    out, err = io.StringIO(), io.StringIO()
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    root, hermes = logging.getLogger(), logging.getLogger("hermes_tui")
    level = hermes.level
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _stdin(io.StringIO(stdin or "")):
            try:
                code = tui_main(list(args))
            except SystemExit as exc:  # argparse (--help, --version, a usage error): as Python exits on it
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:  # what a run sets for its process: headless signal handlers, the log file
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for handler in [h for h in root.handlers if getattr(h, "_hermes", False)]:
            root.removeHandler(handler)
            handler.close()
        hermes.setLevel(level)
    return subprocess.CompletedProcess([HERMES_TUI, *args], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def headless_turn(text: str, session_id: int | None = None) -> list[Event]:
    """One turn of a ``-p --yes`` agent in this process, built as ``hermes-tui -p`` builds it
    (``build_agent`` on the headless surface without an approver, from the environment's config);
    ``session_id`` resumes that session as ``--session`` does. For tests whose point is past the
    command line: a second ``-p`` would only import litellm again (seconds)."""
    config = Config.load()
    with MemoryStore(config.db_path) as memory:
        agent = build_agent(config, memory, SkillManager(config.skills_dir), headless_surface(None),
                            session_id=session_id)
        return list(agent.run_turn(text))


def types(events: Iterable[Event]) -> list[str]:
    return [event.type for event in events]


class MovedClock:
    """A clock that stands still until the test moves it (``now``)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class JumpingClock:
    """A clock that moves ``step`` seconds at every read: every wait counted on it (``clock.wait_for``:
    a retry's backoff) ends at its first look."""

    def __init__(self, step: float = 1_000.0) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def assert_history_valid(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call has exactly one tool result, after it: valid for every provider."""
    pending: list[str] = []
    for message in messages:
        if message["role"] == "assistant":
            assert not pending, f"tool calls without results before the next assistant message: {pending}"
            pending = [call["id"] for call in message.get("tool_calls") or []]
        elif message["role"] == "tool":
            assert message["tool_call_id"] in pending, f"unexpected tool result {message['tool_call_id']}"
            pending.remove(message["tool_call_id"])
        elif message["role"] == "user":
            assert not pending, f"tool calls without results before a user message: {pending}"
    assert not pending, f"tool calls without results at the end: {pending}"


def hold_slow_clients(port: int, count: int) -> list[socket.socket]:
    """Half send half a request head, half a complete head and a trickle of the promised body."""
    held = []
    for n in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if n % 2:
            sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slo")
        else:
            sock.sendall(b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-"
                         b"urlencoded\r\nContent-Length: 100000\r\n\r\npassword=")
        held.append(sock)
    return held


def says_http_500(text: str) -> bool:
    """The number 500 on its own (a status), not inside another (a port such as 50053 or 35001)."""
    return re.search(r"(?<!\d)500(?!\d)", text) is not None


def wait_until(predicate: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Poll ``predicate`` (a bound for a stuck test, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def old_memory_store(path: Path, version: int) -> sqlite3.Connection:
    """An autocommit connection to a new file at memory schema ``version``, as a release of
    that schema made it (its views call ``hermes_index_text``, which this connection has); the
    caller adds the rows and closes it."""
    from sqlite_utils import Database

    from hermes_tui.memory.schema import INDEX_COLUMN, MIGRATIONS, index_column
    from hermes_tui.memory.text import index_text

    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("hermes_index_text", 1, index_text, deterministic=True)
    conn.create_function(INDEX_COLUMN, 1, index_column, deterministic=True)  # step 11 fills columns
    db = Database(conn)
    for step in MIGRATIONS[:version]:
        step(db)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn
