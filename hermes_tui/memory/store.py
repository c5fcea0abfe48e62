"""MemoryStore: every message of every session in one SQLite file, searchable with FTS5.

Several processes (the TUI, the web server, a headless run) and several threads in each may
use the same file at once, so the store relies on WAL (readers never block the writer), a
10 s ``busy_timeout`` and short ``BEGIN IMMEDIATE`` write transactions (a writer queues for
the lock up front instead of failing with "database is locked" when it upgrades a read).
The schema and its steps are in ``schema.py``, the connections in ``pool.py``, ranking in
``search.py``, rows and their records in ``records.py``, what forgetting deletes in ``forget.py``;
what is left is the store's API, each method one short transaction.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.conversation import ChatMessage, ImageRef, Status, parse_calls
from hermes_tui.db import connect, enable_wal, immediate, prepare
from hermes_tui.memory import attachments, records
from hermes_tui.memory.errors import StoreError, check_header, describe
from hermes_tui.memory.maintenance import Maintenance
from hermes_tui.memory.pool import ConnectionPool
from hermes_tui.memory.records import Compaction, SessionInfo
from hermes_tui.memory.schema import INDEX_COLUMN, REINDEXING, SCHEMA, index_column, reindex, tool_args_sql
from hermes_tui.memory.text import (
    HIT_END,
    HIT_START,
    index_text,
)
from hermes_tui.progress import NO_PROGRESS, Progress
from hermes_tui.textsafe import well_formed

if TYPE_CHECKING:  # searching and forgetting are imported when first asked for: a turn does neither
    from hermes_tui.memory.search import SearchHit, SessionHit

__all__ = [
    "HIT_END", "HIT_START", "ChatMessage", "MemoryStore", "SessionInfo", "StoreError",
]

log = logging.getLogger(__name__)

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
        self._pool = ConnectionPool(self._connect, lambda exc: describe(self.path, exc))
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
                reindex(conn, self._progress)

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

    def new_session(self, source: str = "tui", title: str | None = None, workspace: str | None = None,
                    parent_id: int | None = None) -> int:
        """``workspace``: the folder the session works in (``last_session`` finds it by that);
        ``parent_id``: a sub-agent's session names the session that delegated to it."""
        now = time.time()
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (source, title, started, last_activity, workspace, index_title, parent_id)"
                f" VALUES (?1, ?2, ?3, ?4, ?5, {INDEX_COLUMN}(?2), ?6)",
                (source, title, now, now, workspace, parent_id),
            )
            return _new_id(cur)

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
            rows = conn.execute(records.SESSIONS_SQL + " WHERE s.id = ?", (session_id,)).fetchall()
        return records.session_info(rows[0]) if rows else None

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Newest activity first (the index on ``last_activity`` makes this a short range scan).
        ``limit`` and ``offset`` count the user's sessions: each sub-agent's (``delegate``) comes
        right after its parent's, oldest first, so delegating never pushes older sessions off a
        list; one whose parent is gone is listed as any session."""
        with self._read() as conn:
            rows = conn.execute(
                records.SESSIONS_SQL + " WHERE s.parent_id IS NULL OR s.parent_id NOT IN (SELECT id FROM sessions)"
                " ORDER BY s.last_activity DESC, s.id DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            found = conn.execute(records.SESSIONS_SQL + " WHERE s.parent_id IN (SELECT value FROM json_each(?))"
                                 " ORDER BY s.id", (json.dumps([row[0] for row in rows]),)).fetchall()
        children: dict[int | None, list[SessionInfo]] = {}
        for child in map(records.session_info, found):
            children.setdefault(child.parent_id, []).append(child)
        return [each for info in map(records.session_info, rows) for each in (info, *children.get(info.id, []))]

    def subagent_sessions(self, parent_id: int) -> list[int]:
        """The sessions of the sub-agents ``parent_id`` delegated to, oldest first."""
        with self._read() as conn:
            rows = conn.execute("SELECT id FROM sessions WHERE parent_id = ? ORDER BY id", (parent_id,)).fetchall()
        return [row[0] for row in rows]

    def last_session(self, workspace: str) -> SessionInfo | None:
        """The session of this workspace with the latest activity that holds a message (an empty
        one has nothing to continue; a sub-agent's is not the user's), or None."""
        with self._read() as conn:
            rows = conn.execute(
                records.SESSIONS_SQL + " WHERE s.workspace = ? AND s.parent_id IS NULL AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
                " ORDER BY s.last_activity DESC, s.id DESC LIMIT 1", (workspace,)).fetchall()
        return records.session_info(rows[0]) if rows else None

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
        status: Status = Status.OK,
        images: Sequence[ImageRef] = (),
    ) -> int:
        """Append a message; ``tool_calls`` in the OpenAI form, as the column keeps them (other
        SQLite clients and the index read that form); they are read back typed (``ChatMessage``).
        ``images``: references to bytes already kept (``memory.attachments.keep``)."""
        row = records.message_row(
            session_id,
            {
                "role": role,
                "content": content,
                "tool_calls": tool_calls,
                "tool_call_id": tool_call_id,
                "name": name,
                "status": status,
            },
            time.time(),
        )
        with self._write() as conn:
            _touch_session(conn, session_id, row[records.CREATED])
            message_id = _new_id(conn.execute(records.INSERT_MESSAGE_SQL, row))
            conn.executemany(
                "INSERT INTO message_images (message_id, position, path, sha256, mime, width, height)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(message_id, n, i.path, i.sha256, i.mime, i.width, i.height) for n, i in enumerate(images)])
            return message_id

    def bulk_add_messages(self, session_id: int, rows: Iterable[Mapping[str, Any]]) -> int:
        """Append many messages in one transaction (imports, benchmarks); returns how many.

        Each row is a mapping with ``role`` and ``content`` and optionally ``tool_calls``,
        ``tool_call_id``, ``name``, ``status`` and ``created`` (epoch seconds, default now).
        """
        now = time.time()
        values = [records.message_row(session_id, row, row.get("created", now)) for row in rows]
        if not values:
            return 0
        with self._write() as conn:
            _touch_session(conn, session_id, max(v[records.CREATED] for v in values))
            conn.executemany(records.INSERT_MESSAGE_SQL, values)
        return len(values)

    def update_message(self, message_id: int, content: str | None,
                       tool_calls: list[dict[str, Any]] | None = None) -> None:
        """Rewrite a message in place: a streamed answer is stored as it grows, so a crash
        (kill -9) loses at most the last moments of it."""
        with self._write() as conn:
            conn.execute(
                f"UPDATE messages SET content = ?1, tool_calls = ?2, index_content = {INDEX_COLUMN}(?1),"
                f" index_tool_args = {INDEX_COLUMN}({tool_args_sql('?2')}) WHERE id = ?3",
                (well_formed(content), json.dumps(records.well_formed_calls(tool_calls)) if tool_calls is not None else None,
                 message_id),
            )

    def set_status(self, message_id: int, status: Status) -> None:
        """How a message's step ended, once known after it was stored: a user message's turn
        (failed before an answer, cancelled)."""
        with self._write() as conn:
            conn.execute("UPDATE messages SET status = ? WHERE id = ?", (status.value, message_id))

    def mark_undone(self, message_ids: Iterable[int]) -> None:
        """Take messages out of their conversation (/undo, /retry): memory keeps them, searchable,
        and no surface sends them to the model again (``memory.resume``)."""
        with self._write() as conn:
            conn.executemany("UPDATE messages SET status = ? WHERE id = ?",
                             [(Status.UNDONE.value, i) for i in sorted(set(message_ids))])

    def add_compaction(self, session_id: int, through_id: int, summary: str,
                       trim_through_id: int | None = None) -> int:
        """Record that messages up to ``through_id`` are sent as ``summary`` from now on."""
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO compactions (session_id, through_id, trim_through_id, summary, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, through_id, trim_through_id, summary, time.time()),
            )
            return _new_id(cur)

    def latest_compaction(self, session_id: int) -> Compaction | None:
        """The newest compaction of a session (the one a resumed session sends), or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT through_id, trim_through_id, summary FROM compactions"
                " WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else Compaction(row[0], row[1], row[2])

    def keep_session_prompt(self, session_id: int, memory: str, skills_index: str) -> None:
        """Store the prompt parts a session fixed at its first turn; the first record stands."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO session_prompts (session_id, memory, skills_index) VALUES (?, ?, ?)",
                         (session_id, memory, skills_index))

    def session_prompt(self, session_id: int) -> tuple[str, str] | None:
        """(memory block, skills index) as the session's first turn sent them, or None (none kept yet)."""
        with self._read() as conn:
            row = conn.execute("SELECT memory, skills_index FROM session_prompts WHERE session_id = ?",
                               (session_id,)).fetchone()
        return None if row is None else (row[0], row[1])

    def get_messages(self, session_id: int) -> list[ChatMessage]:
        """A session's messages in order, their calls parsed once here."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, session_id, role, content, tool_calls, tool_call_id, name, created, status"
                " FROM messages WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            images: dict[int, list[ImageRef]] = {}
            for message_id, *ref in conn.execute(
                    "SELECT message_id, path, sha256, mime, width, height FROM message_images WHERE message_id IN"
                    " (SELECT id FROM messages WHERE session_id = ?) ORDER BY message_id, position", (session_id,)):
                images.setdefault(message_id, []).append(ImageRef(*ref))
        return [
            ChatMessage(
                id=r[0],
                session_id=r[1],
                role=r[2],
                content=r[3],
                calls=parse_calls(r[4]) if r[4] is not None else (),
                tool_call_id=r[5],
                name=r[6],
                created=r[7],
                status=records.status_of(r[8]),
                images=tuple(images.get(r[0], ())),
            )
            for r in rows
        ]

    # -- forgetting

    def delete_session(self, session_id: int) -> int:
        """Forget a whole session: its messages, its rows in any table that refers to it, the
        images only it attached, and every trace in the index and the WAL (see ``_scrub``). Returns how many messages went;
        raises ``KeyError`` for an unknown session."""
        from hermes_tui.memory import forget

        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise KeyError(f"no session {session_id}")
            (count,) = conn.execute(
                "SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            shas = attachments.shas_of(conn, "session_id = ?", (session_id,))
            forget.delete_with_dependents(conn, "sessions", "id = ?", (session_id,))
            forget.optimize_index(conn)
        self._remove_attachments(shas)
        self._scrub()
        return int(count)

    def purge_message(self, message_id: int) -> bool:
        """Forget one message (a pasted key, a private matter) as thoroughly as ``delete_session``.
        False when there is no such message."""
        from hermes_tui.memory import forget

        with self._write() as conn:
            if conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone() is None:
                return False
            shas = attachments.shas_of(conn, "id = ?", (message_id,))
            forget.delete_with_dependents(conn, "messages", "id = ?", (message_id,))
            forget.optimize_index(conn)
        self._remove_attachments(shas)
        self._scrub()
        return True

    def _remove_attachments(self, shas: set[str]) -> None:
        """After the rows went: the kept images that no other message refers to (HERMES_HOME is
        the folder of the memory file)."""
        if shas:
            with self._read() as conn:
                attachments.remove_unused(conn, self.path.parent, shas)

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
        from hermes_tui.memory import search as ranking
        from hermes_tui.memory.query import parse

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
        from hermes_tui.memory import search as ranking
        from hermes_tui.memory.query import parse

        parsed = parse(query)
        if limit <= 0 or not parsed.clauses:
            return []
        with self._read() as conn:
            return ranking.search_sessions(conn, parsed, limit)


    def recall(self, query: str, limit: int = 20) -> list[SearchHit]:
        """What the Memory pane, the web and ``search_memory`` all show for ``query``: the sessions
        whose title or summary match (role ``"summary"``, ``message_id`` 0; none when the query
        filters by role or tool), then the messages, tool calls' arguments included."""
        from hermes_tui.memory.query import parse
        from hermes_tui.memory.search import SearchHit

        parsed = parse(query)
        sessions = [] if parsed.roles or parsed.tools else self.search_sessions(query, limit=RECALL_SESSIONS)
        return [SearchHit(session_id=s.session_id, message_id=0, role="summary", snippet=s.snippet,
                          created=s.last_activity, score=s.score) for s in sessions] + self.search(query, limit)


RECALL_SESSIONS = 3  # session summaries listed before the messages by recall()

def _writable(path: Path) -> bool:
    """Whether this process may write the file and create its -wal/-shm files beside it."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not path.exists():
        return os.access(folder, os.W_OK)
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _touch_session(conn: sqlite3.Connection, session_id: int, when: float) -> None:
    cur = conn.execute(
        "UPDATE sessions SET last_activity = max(last_activity, ?) WHERE id = ?", (when, session_id)
    )
    if cur.rowcount == 0:
        raise KeyError(f"no session {session_id}")


def _new_id(cur: sqlite3.Cursor) -> int:
    """The rowid the INSERT on ``cur`` made (typed optional: it is None only before any insert)."""
    assert cur.lastrowid is not None
    return cur.lastrowid
