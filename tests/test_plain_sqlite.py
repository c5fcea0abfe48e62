"""The memory store is an ordinary SQLite file (issue 19): other clients read it, search it with
MATCH and snippet(), and add, change and delete messages, with nothing but SQLite; and a file
written by the release before (schema 10, whose index called a Python function from the
schema) upgrades in place.

The other client is the real ``sqlite3`` shell (Debian's, installed by .ci/run), plus Python's
sqlite3 module with no function registered.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from hermes_tui.memory.schema import MIGRATIONS, refresh_index_columns
from hermes_tui.memory.store import MemoryStore
from tests.helpers import old_memory_store

needs_shell = pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
CJK = "東京で会議があります"
ESCAPED = "build \x1b[31mFAILED\x1b[0m at step two"
CALLS = [{"id": "c1", "type": "function", "function": {"name": "run_bash", "arguments": '{"command": "wc -l 東京.py"}'}}]


def shell(path: Path, sql: str) -> str:
    """Run ``sql`` with the sqlite3 shell; its output, or the test fails with its error."""
    done = subprocess.run(["sqlite3", "-bail", str(path), sql], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


def integrity(path: Path) -> None:
    shell(path, "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check');"
                "INSERT INTO sessions_fts (sessions_fts) VALUES ('integrity-check');")


def hermes_store(path: Path) -> tuple[int, int]:
    """A store Hermes wrote: CJK, terminal escapes, a tool call, a summary; (session, CJK message)."""
    with MemoryStore(path) as store:
        session = store.new_session(title="Planning the 東京 trip")
        cjk = store.add_message(session, "user", CJK)
        store.add_message(session, "tool", ESCAPED, tool_call_id="c0", name="run_bash")
        store.add_message(session, "assistant", None, tool_calls=CALLS)
        store.add_message(session, "assistant", "plain words about the staging server")
        store.set_summary(session, "Deployed to staging-eu after a 会議.")
    return session, cjk


@needs_shell
def test_the_sqlite3_shell_reads_searches_and_writes_the_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    session, cjk = hermes_store(path)
    # Search and snippets, as a user of the shell or of Datasette would write them.
    snippet = shell(path, "SELECT snippet(messages_fts, 0, '[', ']', '…', 6) FROM messages_fts"
                          " WHERE messages_fts MATCH 'staging'")
    assert "[staging]" in snippet
    assert "staging-eu" in shell(path, "SELECT summary FROM sessions_fts WHERE sessions_fts MATCH 'staging'")
    assert shell(path, "SELECT count(*) FROM messages_fts_source").strip() == "4"
    # Another client adds, changes and removes messages; the index stays whole.
    shell(path, f"INSERT INTO messages (session_id, role, content, created)"
                f" VALUES ({session}, 'user', 'added by the shell about zanzibar', 0)")
    integrity(path)
    shell(path, "UPDATE messages SET content = 'changed by the shell about madagascar' WHERE content LIKE '%zanzibar%'")
    # A client that changes a text clears its index column (Hermes' doctor refreshes the rest).
    shell(path, "UPDATE sessions SET title = 'renamed by the shell', index_title = NULL")
    integrity(path)
    with MemoryStore(path) as store:
        assert store.search("zanzibar") == []
        added = store.search("madagascar")
        assert len(added) == 1 and added[0].session_id == session
        assert cjk in [hit.message_id for hit in store.search("東京")]  # the index column, as Hermes wrote it
        assert store.search("FAILED") and "\x1b" not in store.search("FAILED")[0].snippet
        assert store.search("wc")  # the command of the tool call
        assert store.search_sessions("renamed")
        store.delete_session(session)
    integrity(path)
    assert shell(path, "SELECT count(*) FROM messages").strip() == "0"


def test_a_client_without_hermes_functions_writes_and_hermes_refreshes_the_index(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    session, _ = hermes_store(path)
    plain = sqlite3.connect(path)
    with plain:
        plain.execute("INSERT INTO messages (session_id, role, content, created) VALUES (?, 'user', ?, 0)",
                      (session, "大阪の天気"))
        plain.execute("UPDATE sessions SET title = 'Planning the 札幌 trip'")  # its index column left as it was
        plain.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        plain.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('integrity-check')")
    plain.close()
    with MemoryStore(path) as store:
        # Indexed as written: a CJK run is one token, the title by its old index column...
        assert store.search("大阪") == [] and store.search_sessions("札幌") == []
        with store._write() as conn:  # what doctor's rebuild runs
            assert refresh_index_columns(conn) == 2
            conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
            conn.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('integrity-check')")
        assert len(store.search("大阪")) == 1  # ...then by character pairs, as Hermes' own
        assert store.search_sessions("札幌")
        assert store.search_sessions("東京") == []


def _release_10_store(path: Path) -> None:
    """A file as the release before this one wrote it (schema 10): its index views call
    hermes_index_text, which only a Hermes connection has."""
    conn = old_memory_store(path, 10)
    conn.execute("INSERT INTO sessions (source, title, summary, started, last_activity)"
                 " VALUES ('tui', 'Old 東京 plans', 'Summary: staging-eu is down', 1, 1)")
    rows = [(CJK, None), (ESCAPED, None), (None, json.dumps(CALLS))] + [(f"note {n} about wombats", None)
                                                                       for n in range(50)]
    conn.executemany("INSERT INTO messages (session_id, role, content, tool_calls, created) VALUES (1, 'user', ?, ?, 1)",
                     rows)
    conn.close()


@needs_shell
def test_a_store_of_the_release_before_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    _release_10_store(path)
    failed = subprocess.run(["sqlite3", str(path), "INSERT INTO messages (session_id, role, content, created)"
                             " VALUES (1, 'user', 'x', 0)"], capture_output=True, text=True)
    assert "no such function: hermes_index_text" in failed.stderr  # what other clients met before
    with MemoryStore(path) as store:
        assert {h.message_id for h in store.search("東京")} == {1, 3}  # the message and the command
        assert len(store.search("wombats", limit=100)) == 50
        assert store.search("wc") and store.search("FAILED")
        assert store.search_sessions("staging")[0].session_id == 1
    assert shell(path, "PRAGMA user_version").strip() == str(len(MIGRATIONS))
    assert "hermes_index" not in shell(path, "SELECT group_concat(sql, ' ') FROM sqlite_master")
    shell(path, "INSERT INTO messages (session_id, role, content, created) VALUES (1, 'user', 'now it works', 0)")
    integrity(path)
    assert shell(path, "SELECT count(*) FROM messages WHERE index_content IS NOT NULL").strip() == "2"  # CJK, escapes
