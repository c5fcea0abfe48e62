"""Another process on the same database: Hermes keeps its SQLite locks, so nothing is corrupted.

Closing any descriptor of a database file drops every POSIX lock the process holds on it; a
foreign process that then opens and closes the file thinks it is the last user, checkpoints and
deletes the WAL under the live connections ("disk I/O error", then "malformed"). These tests run
real foreign processes (Python's sqlite3 and the ``sqlite3`` shell the README quotes) against a
live web app and a live TUI, then check the WAL, the next requests, and the file's integrity.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from hermes_tui import db
from hermes_tui.config import Config
from hermes_tui.memory.store import MemoryStore
from hermes_tui.tui.app import build_app
from hermes_tui.web.context import EXTENSION
from hermes_tui.web.webdb import WebDB
from tests.fakes.server import FakeLLMServer, Reply
from tests.tui_harness import SIZE, send_and_wait, server  # noqa: F401 - fixture
from tests.web_harness import app, chat, llm, login, make_app, ndjson, web_env  # noqa: F401 - fixtures

FOREIGN = """
import sqlite3, sys
for _ in range(5):
    conn = sqlite3.connect(sys.argv[1])
    conn.execute("SELECT count(*) FROM sessions").fetchone()
    conn.close()
"""

needs_shell = pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")


def foreign_opens_and_closes(path: Path, *shell_sql: str) -> None:
    """Open and close the file from other processes, as a probe, a backup or the README would."""
    subprocess.run([sys.executable, "-c", FOREIGN, str(path)], check=True, timeout=60)
    for sql in shell_sql:
        subprocess.run(["sqlite3", str(path), sql], check=True, timeout=60, capture_output=True)


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def assert_intact(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@needs_shell
def test_the_web_keeps_its_locks_while_other_processes_open_the_database(
    app: Flask, llm: FakeLLMServer, web_env: Path
) -> None:
    path = Config.load().db_path
    client = app.test_client()
    token = login(client)
    assert wal_of(path).exists()

    # The README's own command, plus a probe that opens and closes the file five times.
    foreign_opens_and_closes(path, "DELETE FROM web_login_attempts", "SELECT count(*) FROM messages")

    assert wal_of(path).exists(), "another process deleted the WAL under the live server"
    llm.queue(Reply(text="still here"))
    events = ndjson(chat(client, token, "hello"))
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert answer == "still here", [e for e in events if e["type"] != "keepalive"]
    assert client.get("/api/sessions").status_code == 200
    foreign_opens_and_closes(path)
    assert wal_of(path).exists()

    app.extensions[EXTENSION].state.close()  # the restart
    assert_intact(path)
    with MemoryStore(path) as store:
        assert any(m.content == "still here" for s in store.list_sessions() for m in store.get_messages(s.id))


@needs_shell
def test_the_tui_keeps_its_locks_while_other_processes_open_the_database(
    server: FakeLLMServer, hermes_home: Path
) -> None:
    config = Config.load()
    path = config.db_path
    app = build_app(config)
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            server.queue(Reply(text="first answer"), Reply(text="second answer"))
            await send_and_wait(app, pilot, "one")
            # A second store in the same process (the web in the same interpreter, doctor...)
            # must not reopen the live file either.
            WebDB(path)
            foreign_opens_and_closes(path, "SELECT count(*) FROM messages")
            seen["wal_after_foreign"] = wal_of(path).exists()
            await send_and_wait(app, pilot, "two")

    try:
        asyncio.run(main())
    finally:
        app.memory.close()
    assert seen["wal_after_foreign"], "another process deleted the WAL under the live TUI"
    assert_intact(path)
    with MemoryStore(path) as store:
        texts = [m.content for s in store.list_sessions() for m in store.get_messages(s.id)]
    assert "first answer" in texts and "second answer" in texts, texts


def test_prepare_never_reopens_a_live_database(tmp_path: Path) -> None:
    """Setting the mode again while a connection is open goes by path: the connection keeps its
    locks, so a foreign process that opens and closes the file leaves the WAL alone."""
    path = tmp_path / "shared.sqlite3"
    conn = db.connect(db.prepare(path))
    db.enable_wal(conn)
    conn.execute("CREATE TABLE sessions (x)")
    conn.execute("INSERT INTO sessions VALUES (1)")
    path.chmod(0o644)
    db.prepare(path)
    assert path.stat().st_mode & 0o777 == 0o600
    foreign_opens_and_closes(path)
    assert wal_of(path).exists(), "the foreign process found no lock and deleted the WAL"
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
    conn.close()
