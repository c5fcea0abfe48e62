"""MemoryStore: every message of every session in one SQLite file, searchable with FTS5.

Several processes (the TUI, the web server, a headless run) and several threads in each may
use the same file at once, so the store relies on WAL (readers never block the writer), a
10 s ``busy_timeout`` and short ``BEGIN IMMEDIATE`` write transactions (a writer queues for
the lock up front instead of failing with "database is locked" when it upgrades a read).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.db import Migrations, connect, enable_wal, immediate, prepare
from hermes_tui.memory import search as ranking
from hermes_tui.memory.errors import StoreError, check_header, describe
from hermes_tui.memory.maintenance import FTS_TABLES, Maintenance
from hermes_tui.memory.query import ROLES, parse
from hermes_tui.memory.search import SearchHit, SessionHit
from hermes_tui.memory.text import (
    ELLIPSIS,
    HIT_END,
    HIT_START,
    INDEX_TAIL,
    SNIPPET_SCAN,
    index_text,
)
from hermes_tui.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:  # sqlite-utils (and click, pluggy) load only for a schema upgrade
    from sqlite_utils import Database

__all__ = [
    "HIT_END", "HIT_START", "MemoryStore", "Message", "SearchHit", "SessionHit", "SessionInfo",
    "StoreError",
]

log = logging.getLogger(__name__)

FIRST_LINE_CHARS = 120


@dataclass(frozen=True)
class Message:
    id: int
    session_id: int
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    created: float

    def to_llm(self) -> dict[str, Any]:
        """The OpenAI chat-format dict; optional keys only when set (providers reject nulls)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True)
class Compaction:
    """Messages up to ``through_id`` are sent as ``summary``; tool results up to
    ``trim_through_id`` (None: none) are sent trimmed."""

    through_id: int
    trim_through_id: int | None
    summary: str


@dataclass(frozen=True)
class SessionInfo:
    id: int
    source: str
    title: str | None
    summary: str | None
    started: float
    last_activity: float
    message_count: int
    first_user_line: str | None


# --------------------------------------------------------------------------- schema


_FTS_SCHEMA = (
    # What the index sees of a message: its text, and the tool names it mentions (a tool
    # result's name, the functions an assistant calls) so "read_file" finds calls and results.
    # HIT_START/HIT_END become spaces (separators either way, so tokens are unchanged): a
    # snippet can then never contain them except as the markers snippet() adds.
    """
    CREATE VIEW messages_fts_source AS
    SELECT id,
           replace(replace(content, char(2), ' '), char(3), ' ') AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    # External content: FTS5 stores only the index, and must be told the exact old values
    # to remove, hence the BEFORE triggers that read them while the row is still there.
    """
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names)
        SELECT id, content, tool_names FROM messages_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_delete BEFORE DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names)
        SELECT 'delete', id, content, tool_names FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_old BEFORE UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names)
        SELECT 'delete', id, content, tool_names FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_new AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names)
        SELECT id, content, tool_names FROM messages_fts_source WHERE id = new.id;
    END
    """,
)


def _v1_core(db: Database) -> None:
    """Sessions, messages, and the FTS5 index that triggers keep in step with ``messages``."""
    db["sessions"].create(
        {
            "id": int,
            "source": str,
            "title": str,
            "summary": str,
            "started": float,
            "last_activity": float,
        },
        pk="id",
        not_null={"source", "started", "last_activity"},
    )
    db["sessions"].create_index(["last_activity"])
    db["messages"].create(
        {
            "id": int,
            "session_id": int,
            "role": str,
            "content": str,
            "tool_calls": str,
            "tool_call_id": str,
            "name": str,
            "created": float,
        },
        pk="id",
        not_null={"session_id", "role", "created"},
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["messages"].create_index(["session_id", "id"])
    for sql in _FTS_SCHEMA:
        db.execute(sql)


_V2_INDEX = (
    # Replaces v1's index: what it sees of a message now comes from text.index_text (escapes
    # and control characters removed, CJK runs as character pairs, huge texts by head and
    # tail), a Python function every store connection registers. Triggers as in v1.
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    """
    CREATE VIEW messages_fts_source AS
    SELECT id,
           hermes_index_text(content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names
      FROM messages
    """,
    *_FTS_SCHEMA[1:],
    # (the stored messages are copied into the new index after the last step: see REINDEXING)
    # Session titles and summaries, searchable the same way (search_sessions).
    """
    CREATE VIEW sessions_fts_source AS
    SELECT id, hermes_index_text(title) AS title, hermes_index_text(summary) AS summary
      FROM sessions
    """,
    """
    CREATE VIRTUAL TABLE sessions_fts USING fts5(
        title, summary,
        content = 'sessions_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
        INSERT INTO sessions_fts (rowid, title, summary)
        SELECT id, title, summary FROM sessions_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_delete BEFORE DELETE ON sessions BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, title, summary)
        SELECT 'delete', id, title, summary FROM sessions_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_update_old BEFORE UPDATE OF title, summary ON sessions BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, title, summary)
        SELECT 'delete', id, title, summary FROM sessions_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_update_new AFTER UPDATE OF title, summary ON sessions BEGIN
        INSERT INTO sessions_fts (rowid, title, summary)
        SELECT id, title, summary FROM sessions_fts_source WHERE id = new.id;
    END
    """,
    "INSERT INTO sessions_fts (rowid, title, summary)"
    " SELECT id, title, summary FROM sessions_fts_source",
)


def _v2_clean_cjk_index(db: Database) -> None:
    """Index clean text, CJK by character pairs, huge messages by head and tail; summaries."""
    for sql in _V2_INDEX:
        db.execute(sql)


_V3_LONG = (
    # A search hit's metadata and snippet come from here for messages longer than the snippet
    # scan, so a hit on a 10 MB log never loads 10 MB: its row's later columns (created, name)
    # sit at the end of a chain of overflow pages, and substr() loads the whole value.
    """
    CREATE TABLE long_messages (
        id INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        session_id INTEGER NOT NULL,
        role TEXT NOT NULL,
        created FLOAT NOT NULL,
        tool_names TEXT,
        head TEXT NOT NULL,
        tail TEXT NOT NULL
    )
    """,
    f"""
    CREATE TRIGGER long_messages_insert AFTER INSERT ON messages
    WHEN length(new.content) > {SNIPPET_SCAN} BEGIN
        INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
        SELECT new.id, new.session_id, new.role, new.created, tool_names,
               substr(new.content, 1, {SNIPPET_SCAN}), substr(new.content, -{INDEX_TAIL})
          FROM messages_fts_source WHERE id = new.id;
    END
    """,
    f"""
    CREATE TRIGGER long_messages_update AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        DELETE FROM long_messages WHERE id = new.id;
        INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
        SELECT new.id, new.session_id, new.role, new.created, tool_names,
               substr(new.content, 1, {SNIPPET_SCAN}), substr(new.content, -{INDEX_TAIL})
          FROM messages_fts_source WHERE id = new.id AND length(new.content) > {SNIPPET_SCAN};
    END
    """,
    f"""
    INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
    SELECT m.id, m.session_id, m.role, m.created, s.tool_names,
           substr(m.content, 1, {SNIPPET_SCAN}), substr(m.content, -{INDEX_TAIL})
      FROM messages m JOIN messages_fts_source s ON s.id = m.id
     WHERE length(m.content) > {SNIPPET_SCAN}
    """,
)


def _v3_long_messages(db: Database) -> None:
    """Head, tail and metadata of long messages, for cheap snippets (see ``_V3_LONG``)."""
    for sql in _V3_LONG:
        db.execute(sql)


def _v4_background_merges(db: Database) -> None:
    """FTS5 merges move from inside appends to the upkeep thread (maintenance.py); a level
    merges at once only past 64 segments (the default, 16, made some appends take 30 ms)."""
    for table in FTS_TABLES:
        db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('automerge', 0)")
        db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('crisismerge', 64)")


def _v5_compactions(db: Database) -> None:
    """Compaction summaries: what is *sent* in place of a session's older messages.

    The messages themselves stay untouched in ``messages``; a row here says that the messages
    up to ``through_id`` are replaced by ``summary`` when the session is sent to the model,
    and that tool results up to ``trim_through_id`` are sent trimmed.
    """
    db["compactions"].create(
        {"id": int, "session_id": int, "through_id": int, "trim_through_id": int, "summary": str, "created": float},
        pk="id",
        not_null={"session_id", "through_id", "summary", "created"},
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["compactions"].create_index(["session_id", "id"])


def _v6_frequent_top(db: Database) -> None:
    """bm25's best messages for words too frequent to rank while searching (search.py)."""
    db.execute(
        """
        CREATE TABLE frequent_top (
            term TEXT NOT NULL,
            rowid_ INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            score FLOAT NOT NULL,
            PRIMARY KEY (term, rowid_)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX frequent_top_rowid ON frequent_top (rowid_)")
    db.execute("CREATE TABLE frequent_terms (term TEXT PRIMARY KEY, upto INTEGER NOT NULL)")


def _tool_args_sql(calls: str) -> str:
    """The argument values of the tool calls in the JSON ``calls`` (a column, or a parameter)."""
    return f"""
    (SELECT group_concat(CASE WHEN json_valid(args) THEN (SELECT group_concat(a.value, ' ') FROM json_each(args) a)
                              ELSE args END, ' ')
       FROM (SELECT json_extract(value, '$.function.arguments') AS args
               FROM json_each({calls}) WHERE type = 'object'))"""


_TOOL_ARGS = _tool_args_sql("tool_calls")

_V7_TOOL_ARGS = (
    # What the agent did becomes searchable: a third column holds the argument values of the
    # tools an assistant message calls (the commands run, the paths touched), so "wc" finds
    # eight ``wc -l *.py`` runs. The ``tool:`` filter still reads only tool_names.
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    f"""
    CREATE VIEW messages_fts_source AS
    SELECT id,
           hermes_index_text(content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names,
           hermes_index_text({_TOOL_ARGS}) AS tool_args
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names, tool_args,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names, tool_args)
        SELECT id, content, tool_names, tool_args FROM messages_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_delete BEFORE DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names, tool_args)
        SELECT 'delete', id, content, tool_names, tool_args FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_old BEFORE UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names, tool_args)
        SELECT 'delete', id, content, tool_names, tool_args FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_new AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names, tool_args)
        SELECT id, content, tool_names, tool_args FROM messages_fts_source WHERE id = new.id;
    END
    """,
    # (the stored messages are copied into the new index after the last step: see REINDEXING)
    # the new table's merge settings, as v4 set them for the old one
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 0)",
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 64)",
)


def _v7_tool_arguments(db: Database) -> None:
    """Index the arguments of tool calls beside their names (see ``_V7_TOOL_ARGS``)."""
    for sql in _V7_TOOL_ARGS:
        db.execute(sql)


def _v8_pending_summaries(db: Database) -> None:
    """Sessions whose summary is still to be written (learning/pending.py); ``told``: the user
    was told once that it is pending."""
    db["pending_summaries"].create(
        {"session_id": int, "since": float, "told": int},
        pk="session_id",
        not_null={"since", "told"},
        foreign_keys=[("session_id", "sessions", "id")],
    )


def _v9_session_workspace(db: Database) -> None:
    """The workspace folder each session ran in, so ``-c`` and the TUI's start can find the last
    session of this folder. Sessions stored before this step have none (NULL)."""
    db["sessions"].add_column("workspace", str)
    db["sessions"].create_index(["workspace", "last_activity"])


def _v10_turn_outcomes(db: Database) -> None:
    """How a turn ended when it did not end with an answer ("cancelled", "error"), keyed by the
    user's message: an export or a resumed view can say so. Rows go with their message."""
    db["turn_outcomes"].create(
        {"message_id": int, "outcome": str},
        pk="message_id",
        not_null={"outcome"},
        foreign_keys=[("message_id", "messages", "id")],
    )


def fts_triggers(table: str, fts: str, columns: Sequence[str], watched: Sequence[str]) -> list[str]:
    """The four triggers that keep the external-content FTS5 table ``fts`` in step with ``table``
    through its source view ``{fts}_source``. FTS5 must be told the exact old values to remove,
    hence the BEFORE triggers, which read them while the row is still there."""
    cols, source, of = ", ".join(columns), f"{fts}_source", ", ".join(watched)
    add = f"INSERT INTO {fts} (rowid, {cols}) SELECT id, {cols} FROM {source} WHERE id = new.id;"
    remove = f"INSERT INTO {fts} ({fts}, rowid, {cols}) SELECT 'delete', id, {cols} FROM {source} WHERE id = old.id;"
    return [
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_delete BEFORE DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_update_old BEFORE UPDATE OF {of} ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_update_new AFTER UPDATE OF {of} ON {table} BEGIN {add} END",
    ]


MESSAGE_INDEX_COLUMNS = ("content", "tool_names", "tool_args")
MESSAGE_WATCHED = ("content", "name", "tool_calls", "index_content", "index_tool_args")
SESSION_INDEX_COLUMNS = ("title", "summary")
SESSION_WATCHED = ("title", "summary", "index_title", "index_summary")
INDEX_COLUMN = "hermes_index_column"
"""The SQL function Hermes' own writes fill the index columns with (never used by the schema)."""


def index_column(text: str | None) -> str | None:
    """What an index column holds: what the index sees of ``text`` when that is not ``text``
    itself (escapes, CJK, huge texts), else NULL, so most rows store nothing twice."""
    indexed = index_text(text)
    return None if indexed == text else indexed


_V11_PLAIN_INDEX = (
    # The index no longer calls a Python function from the schema: what it sees of a row is in
    # plain columns, filled by Hermes when it writes (``index_column``; NULL: the text as it is).
    # So the file stays an ordinary SQLite file: the sqlite3 shell, Datasette or a backup script
    # can read it, search it with MATCH and snippet(), and insert a message (indexed as it is).
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    "DROP TRIGGER sessions_fts_insert",
    "DROP TRIGGER sessions_fts_delete",
    "DROP TRIGGER sessions_fts_update_old",
    "DROP TRIGGER sessions_fts_update_new",
    "DROP TABLE sessions_fts",
    "DROP VIEW sessions_fts_source",
    "ALTER TABLE messages ADD COLUMN index_content TEXT",
    "ALTER TABLE messages ADD COLUMN index_tool_args TEXT",
    "ALTER TABLE sessions ADD COLUMN index_title TEXT",
    "ALTER TABLE sessions ADD COLUMN index_summary TEXT",
    f"""
    CREATE VIEW messages_fts_source AS
    SELECT id,
           coalesce(index_content, content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names,
           coalesce(index_tool_args, {_TOOL_ARGS}) AS tool_args
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names, tool_args,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    *fts_triggers("messages", "messages_fts", MESSAGE_INDEX_COLUMNS, MESSAGE_WATCHED),
    # (the stored messages are filled and copied into the new index after the last step: REINDEXING)
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 0)",
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 64)",
    # Sessions are few: filled and indexed here.
    f"UPDATE sessions SET index_title = {INDEX_COLUMN}(title), index_summary = {INDEX_COLUMN}(summary)",
    """
    CREATE VIEW sessions_fts_source AS
    SELECT id, coalesce(index_title, title) AS title, coalesce(index_summary, summary) AS summary
      FROM sessions
    """,
    """
    CREATE VIRTUAL TABLE sessions_fts USING fts5(
        title, summary,
        content = 'sessions_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    *fts_triggers("sessions", "sessions_fts", SESSION_INDEX_COLUMNS, SESSION_WATCHED),
    "INSERT INTO sessions_fts (rowid, title, summary) SELECT id, title, summary FROM sessions_fts_source",
)


def _v11_plain_index(db: Database) -> None:
    """What the index sees in plain columns instead of a function in the schema (see
    ``_V11_PLAIN_INDEX``): other SQLite clients can read, search and add to the file."""
    for sql in _V11_PLAIN_INDEX:
        db.execute(sql)


SCHEMA = Migrations("memory", [
    _v1_core,
    _v2_clean_cjk_index,
    _v3_long_messages,
    _v4_background_merges,
    _v5_compactions,
    _v6_frequent_top,
    _v7_tool_arguments,
    _v8_pending_summaries,
    _v9_session_workspace,
    _v10_turn_outcomes,
    _v11_plain_index,
])
"""The memory's schema steps, by name (``db.Migrations``); ``PRAGMA user_version`` still counts
them, as files made before the names were recorded did.

Append only: a new table (e.g. for the web dashboard) is a new function at the end. The steps
run inside one ``BEGIN IMMEDIATE`` transaction with their records, so processes that open a
fresh file at the same moment cannot both apply one.
"""
MIGRATIONS = SCHEMA.steps

REINDEXING = (_v2_clean_cjk_index, _v7_tool_arguments, _v11_plain_index)
"""Steps that replace the message index with an empty one. The stored messages are copied into
the final index once, after the last step (``_reindex``), in chunks that report progress: a store
two such steps behind is indexed once, not twice. So no step may read ``messages_fts``."""

REINDEX_CHUNK = 5_000
"""Messages indexed per statement while reindexing (a report to the progress after each)."""



# --------------------------------------------------------------------------- connections


class _ConnectionPool:
    """Lends each operation a connection of its own, whatever thread it runs on.

    Why a pool rather than one connection per thread: web servers start a thread per request,
    so thread-bound connections would pile up; and rather than one shared connection behind a
    lock: with WAL, searches from a TUI worker and a web thread can then read in parallel, and a
    write waiting for another process's lock never stalls readers in this one. A connection is
    only ever used by one thread at a time (hence ``check_same_thread=False`` is safe).
    """

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        describe: Callable[[sqlite3.Error], StoreError | None],
        max_idle: int = 4,
    ) -> None:
        self._connect = connect
        self._describe = describe
        self._max_idle = max_idle
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise RuntimeError("MemoryStore is closed")
            conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except sqlite3.Error as exc:
            # Damage, a full disk, a read-only file: one readable line instead of SQLite's code.
            error = self._describe(exc)
            if error is None or error is exc:
                raise
            raise error from exc
        finally:
            if conn is not None:
                self._give_back(conn)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:  # e.g. a failed COMMIT: never lend out an open transaction
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # a damaged or vanished file: drop the connection
                conn.close()
                return
        with self._lock:
            keep = not self._closed and len(self._idle) < self._max_idle
            if keep:
                self._idle.append(conn)
        if not keep:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


# --------------------------------------------------------------------------- the store


class MemoryStore:
    """Sessions and messages in SQLite with an FTS5 index; safe across threads and processes.

    Any thread may call any method: each call borrows a pooled connection of its own (see
    ``_ConnectionPool``). Other processes may use the same file at the same time.
    """

    def __init__(self, path: str | Path, on_upgrade: Callable[[str], None] | None = None,
                 progress: Progress = NO_PROGRESS) -> None:
        """Open (or create) the store; raises ``StoreError`` (one readable line) when the file
        is damaged, truncated or cannot be created. A file this process may not write opens
        read-only for browsing: ``read_only`` is True, ``notice`` says so, writes raise.

        ``on_upgrade`` gets one line before a stored file is brought to this version's schema,
        which reindexes every message (minutes for a million): the user should know why; and
        ``progress`` is told how far the reindex got."""
        self.path = Path(path)
        self._on_upgrade = on_upgrade
        self._progress = progress
        self.read_only = not _writable(self.path)
        self.notice: str | None = None
        if self.read_only:
            self.notice = (f"memory database {self.path} is read-only: browsing works, new "
                           "messages are not saved (make the file and its folder writable)")
        else:
            try:
                prepare(self.path)  # before the first connection: SQLite copies the file's mode
            except OSError as exc:
                raise StoreError(self.path, f"the file cannot be created ({exc.strerror})",
                                 "check that its folder exists and is writable") from exc
        check_header(self.path)
        self._pool = _ConnectionPool(self._connect, lambda exc: describe(self.path, exc))
        # This process's writers (appends, the upkeep thread) queue here rather than in SQLite's
        # busy handler, which sleeps 1, 2, 5... ms between tries: an append that met a merge
        # step waited for the sleep, not for the step (bench/memory_search.py).
        self._writer = threading.Lock()
        self._upkeep: Maintenance | None = None
        try:
            with self._pool.connection() as conn:
                self._migrate(conn)
        except BaseException:
            self._pool.close()
            raise
        if not self.read_only:
            self._upkeep = Maintenance(self.path, self._pool.connection, self._writer)

    # -- lifecycle

    def close(self) -> None:
        if self._upkeep is not None:
            self._upkeep.close()
        self._pool.close()

    def maintain(self) -> None:
        """Do the pending index merges and a checkpoint now, rather than in the background."""
        if self._upkeep is not None:
            self._upkeep.run_once()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> sqlite3.Connection:
        conn = connect(self.path, read_only=self.read_only, check_same_thread=False)
        if not self.read_only:
            enable_wal(conn)
        # The upkeep thread checkpoints, between appends rather than inside one.
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        # NORMAL in WAL mode: commits survive an application crash without an fsync per message.
        conn.execute("PRAGMA synchronous = NORMAL")
        # Schema steps 2 to 10 call hermes_index_text in views (an old file upgrades through
        # them); Hermes' own writes fill the index columns with hermes_index_column (step 11).
        conn.create_function("hermes_index_text", 1, index_text, deterministic=True)
        conn.create_function(INDEX_COLUMN, 1, index_column, deterministic=True)
        # Freed pages are zeroed, so forgotten text cannot be read back from the file.
        conn.execute("PRAGMA secure_delete = ON")
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if _user_version(conn) >= len(SCHEMA.steps):
            return
        if self.read_only:
            raise StoreError(self.path, "the file is read-only and needs an upgrade to this version",
                             "make it writable and open it once")
        with immediate(conn):
            version = _user_version(conn)
            if version >= len(SCHEMA.steps):
                return  # another process upgraded it meanwhile
            if version and self._on_upgrade is not None:
                (count,) = conn.execute("SELECT count(*) FROM messages").fetchone()
                messages = f"{count:,} message" + ("" if count == 1 else "s")
                self._on_upgrade(f"Upgrading the memory store {self.path} to this version: reindexing "
                                 f"{messages}, once (a large store takes minutes).")
            ran = SCHEMA.apply(conn, legacy=version)
            conn.execute(f"PRAGMA user_version = {len(SCHEMA.steps)}")
            if version and any(step.__name__ in ran for step in REINDEXING):
                _reindex(conn, self._progress)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction taking the write lock up front (waits, never fails fast)."""
        if self.read_only:
            raise StoreError(self.path, "the file is read-only", "make the file and its folder "
                             "writable to save new messages")
        with self._writer, self._pool.connection() as conn, immediate(conn):
            yield conn
        if self._upkeep is not None:
            self._upkeep.wrote()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read snapshot, so multi-statement reads see a single consistent state."""
        with self._pool.connection() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    # -- sessions

    def new_session(self, source: str = "tui", title: str | None = None, workspace: str | None = None) -> int:
        """``workspace``: the folder the session works in (``last_session`` finds it by that)."""
        now = time.time()
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (source, title, started, last_activity, workspace, index_title)"
                f" VALUES (?1, ?2, ?3, ?4, ?5, {INDEX_COLUMN}(?2))",
                (source, title, now, now, workspace),
            )
            return int(cur.lastrowid)

    def set_summary(self, session_id: int, text: str | None) -> None:
        self._update_session(session_id, "summary", text)

    def set_title(self, session_id: int, title: str | None) -> None:
        self._update_session(session_id, "title", title)

    def _update_session(self, session_id: int, column: str, value: str | None) -> None:
        with self._write() as conn:
            sql = f"UPDATE sessions SET {column} = ?1, index_{column} = {INDEX_COLUMN}(?1) WHERE id = ?2"
            cur = conn.execute(sql, (value, session_id))
            if cur.rowcount == 0:
                raise KeyError(f"no session {session_id}")

    def get_session(self, session_id: int) -> SessionInfo | None:
        with self._read() as conn:
            rows = conn.execute(_SESSIONS_SQL + " WHERE s.id = ?", (session_id,)).fetchall()
        return _session_info(rows[0]) if rows else None

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Newest activity first (the index on ``last_activity`` makes this a short range scan)."""
        with self._read() as conn:
            rows = conn.execute(
                _SESSIONS_SQL + " ORDER BY s.last_activity DESC, s.id DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [_session_info(row) for row in rows]

    def last_session(self, workspace: str) -> SessionInfo | None:
        """The session of this workspace with the latest activity that holds a message (an empty
        one has nothing to continue), or None."""
        with self._read() as conn:
            rows = conn.execute(
                _SESSIONS_SQL + " WHERE s.workspace = ? AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
                " ORDER BY s.last_activity DESC, s.id DESC LIMIT 1", (workspace,)).fetchall()
        return _session_info(rows[0]) if rows else None

    # -- messages

    def add_message(
        self,
        session_id: int,
        role: str,
        content: str | None,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> int:
        row = _message_row(
            session_id,
            {
                "role": role,
                "content": content,
                "tool_calls": tool_calls,
                "tool_call_id": tool_call_id,
                "name": name,
            },
            time.time(),
        )
        with self._write() as conn:
            _touch_session(conn, session_id, row[-1])
            return int(conn.execute(_INSERT_MESSAGE_SQL, row).lastrowid)

    def bulk_add_messages(self, session_id: int, rows: Iterable[Mapping[str, Any]]) -> int:
        """Append many messages in one transaction (imports, benchmarks); returns how many.

        Each row is a mapping with ``role`` and ``content`` and optionally ``tool_calls``,
        ``tool_call_id``, ``name`` and ``created`` (epoch seconds, default now).
        """
        now = time.time()
        values = [_message_row(session_id, row, row.get("created", now)) for row in rows]
        if not values:
            return 0
        with self._write() as conn:
            _touch_session(conn, session_id, max(v[-1] for v in values))
            conn.executemany(_INSERT_MESSAGE_SQL, values)
        return len(values)

    def update_message(self, message_id: int, content: str | None,
                       tool_calls: list[dict[str, Any]] | None = None) -> None:
        """Rewrite a message in place: a streamed answer is stored as it grows, so a crash
        (kill -9) loses at most the last moments of it."""
        with self._write() as conn:
            conn.execute(
                f"UPDATE messages SET content = ?1, tool_calls = ?2, index_content = {INDEX_COLUMN}(?1),"
                f" index_tool_args = {INDEX_COLUMN}({_tool_args_sql('?2')}) WHERE id = ?3",
                (content, json.dumps(tool_calls) if tool_calls is not None else None, message_id),
            )

    def set_outcome(self, message_id: int, outcome: str) -> None:
        """Record how a message's step ended when it did not succeed: a user message's turn
        ("cancelled", "error"; see ``_v10_turn_outcomes``) or a tool result ("failed")."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO turn_outcomes (message_id, outcome) VALUES (?, ?)",
                         (message_id, outcome))

    def outcomes(self, session_id: int) -> dict[int, str]:
        """The recorded outcomes of a session's turns and tool calls, by message id."""
        with self._read() as conn:
            rows = conn.execute("SELECT t.message_id, t.outcome FROM turn_outcomes t JOIN messages m"
                                " ON m.id = t.message_id WHERE m.session_id = ?", (session_id,)).fetchall()
        return {int(m): str(o) for m, o in rows}

    def add_compaction(self, session_id: int, through_id: int, summary: str,
                       trim_through_id: int | None = None) -> int:
        """Record that messages up to ``through_id`` are sent as ``summary`` from now on."""
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO compactions (session_id, through_id, trim_through_id, summary, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, through_id, trim_through_id, summary, time.time()),
            )
            return int(cur.lastrowid)

    def latest_compaction(self, session_id: int) -> Compaction | None:
        """The newest compaction of a session (the one a resumed session sends), or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT through_id, trim_through_id, summary FROM compactions"
                " WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else Compaction(row[0], row[1], row[2])

    def get_messages(self, session_id: int) -> list[Message]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, session_id, role, content, tool_calls, tool_call_id, name, created"
                " FROM messages WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
        return [
            Message(
                id=r[0],
                session_id=r[1],
                role=r[2],
                content=r[3],
                tool_calls=json.loads(r[4]) if r[4] is not None else None,
                tool_call_id=r[5],
                name=r[6],
                created=r[7],
            )
            for r in rows
        ]

    # -- forgetting

    def delete_session(self, session_id: int) -> int:
        """Forget a whole session: its messages, its rows in any table that refers to it, and
        every trace in the index and the WAL (see ``_scrub``). Returns how many messages went;
        raises ``KeyError`` for an unknown session."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise KeyError(f"no session {session_id}")
            (count,) = conn.execute(
                "SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            _delete_with_dependents(conn, "sessions", "id = ?", (session_id,))
            _optimize_index(conn)
        self._scrub()
        return int(count)

    def purge_message(self, message_id: int) -> bool:
        """Forget one message (a pasted key, a private matter) as thoroughly as ``delete_session``.
        False when there is no such message."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone() is None:
                return False
            _delete_with_dependents(conn, "messages", "id = ?", (message_id,))
            _optimize_index(conn)
        self._scrub()
        return True

    def _scrub(self) -> None:
        """Copy the WAL into the file and empty it, so old page versions holding forgotten text
        are gone from both (secure_delete has zeroed the freed pages). Readers in other
        processes can hold the WAL for a moment, hence a few tries."""
        with self._pool.connection() as conn:
            for _ in range(50):
                busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if not busy:
                    return
                time.sleep(0.05)
        log.warning("memory: the WAL could not be truncated after forgetting (readers busy)")

    # -- search

    def search(self, query: str, limit: int = 20, session_id: int | None = None) -> list[SearchHit]:
        """Messages matching ``query`` (syntax: ``query.py``), best first; see ``search.py``.

        No text can make this raise: the query is parsed into quoted tokens and operators we
        write, and malformed syntax degrades to plain words. No words: ``[]``.
        ``SearchHit.score`` is ``-bm25`` (higher is better); snippets mark the query's words
        with ``HIT_START``/``HIT_END``.
        """
        parsed = parse(query)
        if limit <= 0 or parsed.empty:
            return []
        with self._read() as conn:
            scope = ranking.Scope.of(conn, session_id, parsed.roles)
            if scope is None:
                return []
            want = self._upkeep.want_best if self._upkeep is not None else None
            return ranking.search(conn, parsed, scope, limit, want)


    def search_sessions(self, query: str, limit: int = 5) -> list[SessionHit]:
        """Sessions whose title or summary matches any word of ``query``, best first.

        Same syntax as ``search`` (role and tool filters do not apply to sessions)."""
        parsed = parse(query)
        if limit <= 0 or not parsed.clauses:
            return []
        with self._read() as conn:
            return ranking.search_sessions(conn, parsed, limit)


    def recall(self, query: str, limit: int = 20) -> list[SearchHit]:
        """What the Memory pane, the web and ``search_memory`` all show for ``query``: the sessions
        whose title or summary match (role ``"summary"``, ``message_id`` 0; none when the query
        filters by role or tool), then the messages, tool calls' arguments included."""
        parsed = parse(query)
        sessions = [] if parsed.roles or parsed.tools else self.search_sessions(query, limit=RECALL_SESSIONS)
        return [SearchHit(session_id=s.session_id, message_id=0, role="summary", snippet=s.snippet,
                          created=s.last_activity, score=s.score) for s in sessions] + self.search(query, limit)


RECALL_SESSIONS = 3  # session summaries listed before the messages by recall()

_INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, name, created,"
    " index_content, index_tool_args)"
    f" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, {INDEX_COLUMN}(?3), {INDEX_COLUMN}({_tool_args_sql('?4')}))"
)

_SESSIONS_SQL = """
SELECT s.id, s.source, s.title, s.summary, s.started, s.last_activity,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
       (SELECT substr(m.content, 1, 2000) FROM messages m
         WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1)
  FROM sessions s"""






def _writable(path: Path) -> bool:
    """Whether this process may write the file and create its -wal/-shm files beside it."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not path.exists():
        return os.access(folder, os.W_OK)
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)




def _delete_with_dependents(
    conn: sqlite3.Connection, table: str, where: str, args: tuple[Any, ...]
) -> None:
    """Delete rows of ``table`` and, first, the rows of every table whose foreign key points at
    them (found in the schema, so tables added later by other features are covered too)."""
    for child, column, parent_column in _referrers(conn, table):
        _delete_with_dependents(
            conn,
            child,
            f'"{column}" IN (SELECT "{parent_column}" FROM "{table}" WHERE {where})',
            args,
        )
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', args)


def _referrers(conn: sqlite3.Connection, table: str) -> list[tuple[str, str, str]]:
    """(child table, its column, the referenced column) for foreign keys pointing at ``table``."""
    found = []
    names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    for (name,) in names:
        for fk in conn.execute(f'PRAGMA foreign_key_list("{name}")').fetchall():
            # (id, seq, table, from, to, on_update, on_delete, match); "to" is None for the pk
            if fk[2] == table and name != table:
                found.append((name, fk[3], fk[4] or "rowid"))
    return found


def _reindex(conn: sqlite3.Connection, progress: Progress) -> None:
    """Fill the index columns of every stored message and copy it into the (new, empty) index,
    ``REINDEX_CHUNK`` at a time.

    The index's triggers are set aside meanwhile: filling a column they watch would otherwise
    ask FTS5 to remove rows it never held. (FTS5's 'rebuild' fails with "SQL logic error" on the
    source view; a plain copy does the same.) The columns are the index's own, so this stays
    right whatever a later step adds."""
    triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                            " AND name LIKE 'messages_fts_%'").fetchall()
    for name, _sql in triggers:
        conn.execute(f'DROP TRIGGER "{name}"')
    columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(messages_fts)"))
    fill = (f"UPDATE messages SET index_content = {INDEX_COLUMN}(content),"
            f" index_tool_args = {INDEX_COLUMN}({_TOOL_ARGS}) WHERE id > ? AND id <= ?")
    copy = (f"INSERT INTO messages_fts (rowid, {columns}) SELECT id, {columns}"
            " FROM messages_fts_source WHERE id > ? AND id <= ?")
    total, first, last = conn.execute("SELECT count(*), min(id), max(id) FROM messages").fetchone()
    progress.start("Reindexing the memory store", total)
    try:
        low, left = (first or 0) - 1, total
        while left > 0:
            bound = conn.execute("SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
                                 (low, REINDEX_CHUNK - 1)).fetchone()
            high = last if bound is None else bound[0]
            conn.execute(fill, (low, high))
            conn.execute(copy, (low, high))
            progress.advance(min(REINDEX_CHUNK, left))
            low, left = high, left - REINDEX_CHUNK
    finally:
        progress.done()
    for _name, sql in triggers:
        conn.execute(sql)


def refresh_index_columns(conn: sqlite3.Connection) -> int:
    """Bring every index column in line with its text; returns how many rows changed.

    For rows another SQLite client wrote: a message it added is indexed as it is (its columns
    are NULL), and one whose text it changed without clearing the column is still indexed by
    the old column (never inconsistently: the triggers read the same view on both sides). A
    full scan through Python, so it is for ``doctor``, not for every start. The triggers move
    each changed row's index entry."""
    column, args = INDEX_COLUMN, _TOOL_ARGS
    changed = conn.execute(
        f"UPDATE messages SET index_content = {column}(content), index_tool_args = {column}({args})"
        f" WHERE index_content IS NOT {column}(content) OR index_tool_args IS NOT {column}({args})").rowcount
    return changed + conn.execute(
        f"UPDATE sessions SET index_title = {column}(title), index_summary = {column}(summary)"
        f" WHERE index_title IS NOT {column}(title) OR index_summary IS NOT {column}(summary)").rowcount


def _optimize_index(conn: sqlite3.Connection) -> None:
    """Merge each FTS5 index into one segment: a delete only adds a tombstone, and the words
    of a forgotten message stay in the old segment until a merge that includes it."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _message_row(session_id: int, row: Mapping[str, Any], created: float) -> tuple[Any, ...]:
    role = row["role"]
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    tool_calls = row.get("tool_calls")
    return (
        session_id,
        role,
        row.get("content"),
        json.dumps(tool_calls) if tool_calls is not None else None,
        row.get("tool_call_id"),
        row.get("name"),
        float(created),
    )


def _touch_session(conn: sqlite3.Connection, session_id: int, when: float) -> None:
    cur = conn.execute(
        "UPDATE sessions SET last_activity = max(last_activity, ?) WHERE id = ?", (when, session_id)
    )
    if cur.rowcount == 0:
        raise KeyError(f"no session {session_id}")


def _first_line(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            if len(line) > FIRST_LINE_CHARS:
                line = line[: FIRST_LINE_CHARS - 1] + ELLIPSIS
            return line
    return None


def _session_info(row: tuple[Any, ...]) -> SessionInfo:
    return SessionInfo(
        id=row[0],
        source=row[1],
        title=row[2],
        summary=row[3],
        started=row[4],
        last_activity=row[5],
        message_count=row[6],
        first_user_line=_first_line(row[7]),
    )
