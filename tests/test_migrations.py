"""The named, append-only schema steps (``db.Migrations``): each store's names are recorded in the
file, a file made before names were recorded (counted by ``user_version``) is taken over, and a
step added at the end runs once on an existing file, alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlite_utils import Database

from hermes_tui.db import MIGRATIONS_TABLE, Migrations, connect, immediate
from hermes_tui.memory.schema import MIGRATIONS
from hermes_tui.memory.store import MemoryStore
from hermes_tui.web.webdb import WEB_SCHEMA, WebDB
from tests.helpers import old_memory_store


def recorded(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(f"SELECT store, name FROM {MIGRATIONS_TABLE} ORDER BY rowid").fetchall()
    finally:
        conn.close()
    found: dict[str, list[str]] = {}
    for store, name in rows:
        found.setdefault(store, []).append(name)
    return found


def test_each_store_in_the_shared_file_records_its_own_steps(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    MemoryStore(path).close()
    WebDB(path)
    names = recorded(path)
    assert names["memory"] == [step.__name__ for step in MIGRATIONS]
    assert names["web"] == [step.__name__ for step in WEB_SCHEMA.steps]
    assert "tui" not in names  # the terminal app's state is the store's since step 13
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    conn.close()


def test_the_skills_index_records_its_steps_in_its_own_file(tmp_path: Path) -> None:
    from hermes_tui.skills.index import INDEX_SCHEMA, SkillIndex

    path = tmp_path / "skills.sqlite3"
    SkillIndex(path).close()
    assert recorded(path) == {"skills": [step.__name__ for step in INDEX_SCHEMA.steps]}
    conn = sqlite3.connect(path)
    try:
        assert INDEX_SCHEMA.apply(conn) == []  # nothing runs twice
    finally:
        conn.close()


def test_a_file_counted_by_user_version_is_taken_over_and_finished(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    conn = old_memory_store(path, 8)
    conn.execute("INSERT INTO sessions (source, started, last_activity) VALUES ('tui', 1, 1)")
    conn.execute("INSERT INTO messages (session_id, role, content, created) VALUES (1, 'user', 'kept wombats', 1)")
    conn.close()
    with MemoryStore(path) as store:
        assert [hit.message_id for hit in store.search("wombats")] == [1]
    assert recorded(path)["memory"] == [step.__name__ for step in MIGRATIONS]
    with MemoryStore(path) as store:  # nothing runs twice
        assert len(store.get_messages(1)) == 1


def test_a_step_added_at_the_end_runs_once_on_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite3"
    schema = Migrations("example")
    calls: list[str] = []

    @schema
    def example_table(db: Database) -> None:
        calls.append("table")
        db["things"].create({"id": int, "name": str}, pk="id")

    def apply() -> list[str]:
        conn = connect(path)
        try:
            with immediate(conn):
                return schema.apply(conn)
        finally:
            conn.close()

    assert apply() == ["example_table"]
    assert apply() == []

    @schema
    def example_colour(db: Database) -> None:
        calls.append("colour")
        db["things"].add_column("colour", str)

    assert apply() == ["example_colour"] and apply() == []
    assert calls == ["table", "colour"]
    assert recorded(path) == {"example": ["example_table", "example_colour"]}


def test_how_each_step_ended_moves_into_its_messages_status(tmp_path: Path) -> None:
    """Release 10 kept turn outcomes in a side table, and a denial or cancellation before that
    only in the result's text; both become the message's ``status`` column once, on upgrade."""
    from hermes_tui.agent.toolkit import CANCELLED, DENIED
    from hermes_tui.conversation import Status

    path = tmp_path / "memory.sqlite3"
    conn = old_memory_store(path, 10)
    conn.execute("INSERT INTO sessions (source, started, last_activity) VALUES ('tui', 1, 1)")
    rows = [("user", "cancelled turn"), ("user", "failed turn"), ("tool", "boom"), ("tool", DENIED.format(name="run_bash")),
            ("tool", CANCELLED), ("tool", "fine"), ("user", "fine turn")]
    conn.executemany("INSERT INTO messages (session_id, role, content, created) VALUES (1, ?, ?, 1)", rows)
    conn.executemany("INSERT INTO turn_outcomes (message_id, outcome) VALUES (?, ?)",
                     [(1, "cancelled"), (2, "error"), (3, "failed")])
    conn.close()
    with MemoryStore(path) as store:
        assert [m.status for m in store.get_messages(1)] == [
            Status.CANCELLED, Status.FAILED, Status.FAILED, Status.DENIED, Status.CANCELLED, Status.OK, Status.OK]
        store.set_status(6, Status.FAILED)
        assert store.get_messages(1)[5].status is Status.FAILED
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'turn_outcomes'").fetchone() == (0,)
    finally:
        conn.close()


# The terminal app's own tables as its one schema step ("tui", "tui_tables") made them, before
# undo, usage and exported files moved into the store (memory step 13).
_TUI_TABLES = (
    """CREATE TABLE IF NOT EXISTS tui_session_usage (
        session_id INTEGER NOT NULL REFERENCES sessions(id), model TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL, PRIMARY KEY (session_id, model))""",
    """CREATE TABLE IF NOT EXISTS tui_undone_messages (
        message_id INTEGER PRIMARY KEY REFERENCES messages(id), undone REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tui_session_files (
        session_id INTEGER NOT NULL REFERENCES sessions(id), path TEXT NOT NULL,
        sha256 TEXT NOT NULL, PRIMARY KEY (session_id, path))""",
)


def test_the_tuis_undo_marks_usage_and_exports_move_into_the_store(tmp_path: Path) -> None:
    """/undo's marks lived in a TUI table no other surface read, so ``-c -p`` and the web sent
    undone turns again: they become the ``undone`` status; usage and export records keep their rows."""
    from hermes_tui.background import Background
    from hermes_tui.conversation import Status
    from hermes_tui.memory import resume
    from hermes_tui.memory.usage import UsageLedger

    path = tmp_path / "memory.sqlite3"
    conn = old_memory_store(path, 12)
    for sql in _TUI_TABLES:
        conn.execute(sql)
    conn.execute("INSERT INTO sessions (source, started, last_activity) VALUES ('tui', 1, 1)")
    conn.executemany("INSERT INTO messages (session_id, role, content, created) VALUES (1, ?, ?, 1)",
                     [("user", "kept"), ("assistant", "kept answer"), ("user", "regretted"), ("assistant", "taken back")])
    conn.executemany("INSERT INTO tui_undone_messages (message_id, undone) VALUES (?, 5)", [(3,), (4,)])
    conn.execute("INSERT INTO tui_session_usage (session_id, model, calls, prompt_tokens) VALUES (1, 'm', 2, 30)")
    conn.execute("INSERT INTO tui_session_files (session_id, path, sha256) VALUES (1, '/x/export.md', 'ab')")
    conn.close()
    with MemoryStore(path) as store:
        assert [m.status for m in store.get_messages(1)] == [Status.OK, Status.OK, Status.UNDONE, Status.UNDONE]
        assert [m.content for m in resume.sendable(store, 1)] == ["kept", "kept answer"]
    ledger = UsageLedger(path, Background())
    assert [(u.model, u.calls, u.prompt_tokens) for u in ledger.load(1)] == [("m", 2, 30)]
    conn = sqlite3.connect(path)
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not {"tui_undone_messages", "tui_session_usage", "tui_session_files"} & tables
        assert conn.execute("SELECT path FROM session_files").fetchall() == [("/x/export.md",)]
    finally:
        conn.close()


def _ids_after_forgetting(store: MemoryStore) -> tuple[int, int, int, int]:
    """Forget the newest session, then start another: (old session, new session, old last
    message, new first message)."""
    from hermes_tui.memory.forget import forget_session

    old = store.new_session("tui")
    last = store.add_message(old, "user", "paste sk-ant-forgotten-0123456789abcdef")
    forget_session(store, old)
    new = store.new_session("tui")
    return old, new, last, store.add_message(new, "user", "hello")


def test_forgotten_session_and_message_ids_are_never_given_out_again(tmp_path: Path) -> None:
    """/undo in a new session offered a forgotten session's turn: SQLite reused the largest ids.
    A file made by step 14 (upgraded) and a new file both keep every id once given out."""
    path = tmp_path / "memory.sqlite3"
    conn = old_memory_store(path, 14)
    conn.execute("INSERT INTO sessions (source, started, last_activity) VALUES ('tui', 1, 1)")
    conn.execute("INSERT INTO messages (session_id, role, content, created) VALUES (1, 'user', 'kept wombats', 1)")
    conn.close()
    for file in (path, tmp_path / "new.sqlite3"):
        with MemoryStore(file) as store:
            old, new, last, first = _ids_after_forgetting(store)
            assert new > old and first > last
            assert store.get_messages(new)[0].content == "hello" and not store.search("forgotten")
        with MemoryStore(file) as store:  # and after a restart
            old, new, last, first = _ids_after_forgetting(store)
            assert new > old and first > last
    with MemoryStore(path) as store:
        assert [hit.message_id for hit in store.search("wombats")] == [1]  # the index and triggers still work
    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert check.execute("PRAGMA foreign_key_check").fetchall() == []
        foreign = check.execute("PRAGMA foreign_key_list(messages)").fetchall()
        assert [(fk[2], fk[3]) for fk in foreign] == [("sessions", "session_id")]
    finally:
        check.close()
