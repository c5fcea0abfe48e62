"""The terminal app's own small tables in memory.sqlite3: usage per session and model (/cost),
the messages /undo and /retry took out of a conversation, and the files /export and /copy wrote.

Their schema steps are the TUI's own (``db.Migrations("tui")``), so the core schema does not know
the terminal app; the first keeps ``IF NOT EXISTS``, as files made before steps were recorded have
these tables already. Their foreign keys point at ``sessions`` and ``messages``: forgetting a session
or purging a message removes these rows too (the store deletes every referring row).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui import db

if TYPE_CHECKING:
    from sqlite_utils import Database

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tui_session_usage (
        session_id INTEGER NOT NULL REFERENCES sessions(id),
        model TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        PRIMARY KEY (session_id, model)
    )""",
    """CREATE TABLE IF NOT EXISTS tui_undone_messages (
        message_id INTEGER PRIMARY KEY REFERENCES messages(id),
        undone REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS tui_session_files (
        session_id INTEGER NOT NULL REFERENCES sessions(id),
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (session_id, path)
    )""",
)
TUI_SCHEMA = db.Migrations("tui")
_created: set[Path] = set()


@TUI_SCHEMA
def tui_tables(database: Database) -> None:
    """Usage per session and model, undone messages, the files /export and /copy wrote."""
    for statement in SCHEMA:
        database.execute(statement)


def connect(path: Path) -> sqlite3.Connection:
    """A short-lived connection (autocommit; ``immediate`` for writes) with the tables in place."""
    conn = db.connect(path)
    if path not in _created:
        with db.immediate(conn):
            TUI_SCHEMA.apply(conn)
        _created.add(path)
    return conn
