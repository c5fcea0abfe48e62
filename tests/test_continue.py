"""``-c``/``--continue``: the last session of this workspace, headless and in the TUI; the session id
at the end of every plain headless run; the TUI's empty start names the last session (issue 23 §9)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hermes_tui.db import connect
from hermes_tui.headless import session_line
from hermes_tui.memory.doctor import repair
from hermes_tui.memory.schema import MIGRATIONS
from hermes_tui.memory.store import MemoryStore
from hermes_tui.tui.app import HermesApp
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply
from tests.helpers import cli, old_memory_store
from tests.memory_harness import pages_of, smash
from tests.tui_harness import notices, run, send_and_wait, server, wait_for

__all__ = ["server"]


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


def stored(hermes_home: Path, workspace: Path | str | None, *texts: str, title: str | None = None) -> int:
    """A session of ``workspace`` holding ``texts`` as user messages."""
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        session_id = memory.new_session(title=title, workspace=None if workspace is None else str(workspace))
        for text in texts:
            memory.add_message(session_id, "user", text)
    return session_id


# -- the store ---------------------------------------------------------------------------------


def test_the_last_session_is_this_workspaces_newest_with_messages(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.sqlite3") as memory:
        here, there = "/work/here", "/work/there"
        older = memory.new_session(workspace=here)
        memory.add_message(older, "user", "first")
        newer = memory.new_session(workspace=here)
        memory.add_message(newer, "user", "second")
        memory.new_session(workspace=here)  # newest, but empty: nothing to continue
        elsewhere = memory.new_session(workspace=there)
        memory.add_message(elsewhere, "user", "other folder")
        assert memory.last_session(here).id == newer
        memory.add_message(older, "user", "later activity")
        assert memory.last_session(here).id == older
        assert memory.last_session("/nowhere") is None


def _version_8_store(path: Path) -> None:
    """A file as the schema before the workspace column wrote it, with one session of messages."""
    conn = old_memory_store(path, 8)
    conn.execute("INSERT INTO sessions (source, title, started, last_activity) VALUES ('tui', 'old one', 1, 1)")
    conn.executemany("INSERT INTO messages (session_id, role, content, created) VALUES (1, 'user', ?, 1)",
                     [(f"note {n} about wombats " * 20,) for n in range(300)])
    conn.close()


def test_an_older_store_gains_the_column_and_its_sessions_belong_to_no_workspace(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    _version_8_store(path)
    with MemoryStore(path) as memory:
        assert memory.get_session(1).title == "old one"
        assert memory.last_session(str(tmp_path)) is None  # where it ran was never stored
        new = memory.new_session(workspace=str(tmp_path))
        memory.add_message(new, "user", "hello")
        assert memory.last_session(str(tmp_path)).id == new
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    conn.close()


def test_doctor_rebuilds_a_damaged_older_store_by_column_name(tmp_path: Path) -> None:
    """The rebuilt store has the new column; rows of the old layout still fit (they were copied by
    position, which a table with one more column refuses)."""
    path = tmp_path / "memory.sqlite3"
    _version_8_store(path)
    leaves = pages_of(path, "messages", "leaf")
    smash(path, leaves[len(leaves) // 2])
    report = repair(path)
    assert report.backup is not None and report.saved_sessions == 1
    with MemoryStore(path) as memory:
        assert memory.get_session(1).title == "old one"  # not a "recovered" stand-in
        assert 250 < len(memory.get_messages(1)) < 300


# -- headless ----------------------------------------------------------------------------------


@on_wire("openai")
def test_headless_names_the_session_and_continues_the_last_one(env: FakeLLMServer, hermes_home: Path,
                                                               workspace: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    env.queue(Reply(text="Noted."))
    first = cli("-p", "remember kiwi")
    assert first.returncode == 0, first.stderr
    session_id = MemoryStore(hermes_home / "memory.sqlite3").list_sessions()[0].id
    assert first.stderr.splitlines()[-1] == session_line(session_id)  # the id, in one last line
    assert f"--session {session_id}" in session_line(session_id) and "-c" in session_line(session_id)

    env.queue(Reply(text="It was kiwi."))
    again = cli("-c", "-p", "which fruit?")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "It was kiwi.\n"
    assert f"hermes: continuing session {session_id} (remember kiwi)" in again.stderr.splitlines()
    assert again.stderr.splitlines()[-1] == session_line(session_id)
    sent = str(env.requests[-1].messages)
    assert "remember kiwi" in sent and "which fruit?" in sent
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        assert len(memory.list_sessions()) == 1

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("HERMES_WORKSPACE", str(elsewhere))
    asked = len(env.requests)
    none = cli("-c", "-p", "anything?")
    assert none.returncode == 1  # as Claude Code's -c: one line, no new session
    (line,) = none.stderr.splitlines()
    assert line == f"hermes: there is no earlier session in {elsewhere} to continue; run without -c to start one."
    assert len(env.requests) == asked


def test_headless_continue_with_session_is_one_line(hermes_home: Path, workspace: Path) -> None:
    result = cli("-c", "--session", "3", "-p", "hi")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("hermes: -c continues") and "use one of them" in line
    assert not (hermes_home / "memory.sqlite3").exists()


# -- the TUI -----------------------------------------------------------------------------------


def test_tui_continue_resumes_this_workspaces_last_session(server: FakeLLMServer, hermes_home: Path,
                                                           workspace: Path, tmp_path: Path) -> None:
    mine = stored(hermes_home, workspace, "the plan is apples")
    stored(hermes_home, tmp_path / "other", "someone else's folder")  # newer, another workspace
    server.queue(Reply(text="Apples, yes."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("Resumed session" in n for n in notices(app)))
        assert f"ℹ Resumed session {mine}: your next message continues it." in notices(app)
        assert app.session.session_id == mine
        assert not any(n.startswith("Last session here") for n in notices(app))
        await send_and_wait(app, pilot, "what was the plan?")
        assert "the plan is apples" in str(server.requests[-1].messages)

    run(scenario, continue_last=True)


def test_tui_continue_without_an_earlier_session_starts_fresh(server: FakeLLMServer, hermes_home: Path,
                                                              workspace: Path, tmp_path: Path) -> None:
    stored(hermes_home, tmp_path / "other", "not here")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("to continue" in n for n in notices(app)))
        (line,) = [n for n in notices(app) if "to continue" in n]
        assert line.endswith("to continue: your first message starts a new one.")
        assert app.session.session_id is None

    run(scenario, continue_last=True)


def test_an_empty_start_names_this_workspaces_last_session_safely(server: FakeLLMServer, hermes_home: Path,
                                                                  workspace: Path, tmp_path: Path) -> None:
    hostile = "\x1b]0;pwned\x07\x1b[31m[bold]fix[/bold] the\u202e build\x1b[0m\nsecond line"
    session_id = stored(hermes_home, workspace, "hello", title=hostile)
    stored(hermes_home, tmp_path / "other", "a newer session elsewhere")
    stored(hermes_home, None, "a newer one from before workspaces were stored")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any(n.startswith("ℹ Last session") for n in notices(app)))
        (line,) = [n for n in notices(app) if "Last session" in n]
        assert line == (f"ℹ Last session here: #{session_id} “[bold]fix[/bold] the build second line” · "
                        f"/resume {session_id} or hermes-tui -c")
        assert app.session.session_id is None  # only a hint: nothing resumed

    run(scenario)


def test_a_tui_session_records_its_workspace(server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    server.queue(Reply(text="hi"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hello")

    run(scenario)
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        info = memory.last_session(os.path.realpath(workspace))
        assert info is not None and info.first_user_line == "hello"
