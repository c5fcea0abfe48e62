"""MemoryStore: every message of every session in one SQLite file, searchable with FTS5.

Several processes (the TUI, the web server, a headless run) and several threads in each may
use the same file at once, so the store relies on WAL (readers never block the writer), a
10 s ``busy_timeout`` and short ``BEGIN IMMEDIATE`` write transactions (a writer queues for
the lock up front instead of failing with "database is locked" when it upgrades a read).
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

log = logging.getLogger(__name__)

HIT_START = "\x02"
"""Starts a matched word in a snippet (STX). The index sees message text with STX and ETX
blanked (see ``_FTS_SCHEMA``), so in a snippet they can only be markers."""
HIT_END = "\x03"
"""Ends a matched word in a snippet (ETX)."""
ELLIPSIS = "…"

ROLES = ("system", "user", "assistant", "tool")
BUSY_TIMEOUT_MS = 10_000
SNIPPET_TOKENS = 16
FIRST_LINE_CHARS = 120

MAX_TERMS = 16
CANDIDATES = 1000
"""How many of the newest matches a search ranks by relevance (see ``MemoryStore.search``)."""
DENSITY_SAMPLE = 4000
"""Newest messages sampled to estimate the share of messages a term occurs in."""
FREQUENT = 0.5
"""A word in at least this share of messages has an IDF of ~0 in bm25: it cannot rank."""
SCORING_POSTINGS = 100_000
"""bm25 reads each scored word's whole posting list (~15 ns a posting): the budget for that."""
SCAN_ROWS_PER_WORD = 10_000
"""Snippets: scanning this many matches costs about as much as one word's per-hit lookups."""


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
class SessionInfo:
    id: int
    source: str
    title: str | None
    summary: str | None
    started: float
    last_activity: float
    message_count: int
    first_user_line: str | None


@dataclass(frozen=True)
class SearchHit:
    session_id: int
    message_id: int
    role: str
    snippet: str
    created: float
    score: float


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


MIGRATIONS: list[Callable[[Database], None]] = [_v1_core]
"""Ordered schema steps; step i brings ``PRAGMA user_version`` from i to i + 1.

Append only: a new table (e.g. for the web dashboard) is a new function at the end. Each step
runs inside the same ``BEGIN IMMEDIATE`` transaction as the version bump, so processes that
open a fresh file at the same moment cannot both apply it.
"""


# --------------------------------------------------------------------------- connections


class _ConnectionPool:
    """Lends each operation a connection of its own, whatever thread it runs on.

    Why a pool rather than one connection per thread: web servers start a thread per request,
    so thread-bound connections would pile up; and rather than one shared connection behind a
    lock: with WAL, searches from a TUI worker and a web thread can then read in parallel, and a
    write waiting for another process's lock never stalls readers in this one. A connection is
    only ever used by one thread at a time (hence ``check_same_thread=False`` is safe).
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], max_idle: int = 4) -> None:
        self._connect = connect
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
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # e.g. a failed COMMIT: never lend out an open transaction
                conn.execute("ROLLBACK")
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

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pool = _ConnectionPool(self._connect)
        with self._pool.connection() as conn:
            self._migrate(conn)

    # -- lifecycle

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; writes open BEGIN IMMEDIATE themselves.
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        enable_wal(conn)
        # NORMAL in WAL mode: commits survive an application crash without an fsync per message.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Freed pages are zeroed, so forgotten text cannot be read back from the file.
        conn.execute("PRAGMA secure_delete = ON")
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if _user_version(conn) >= len(MIGRATIONS):
            return
        with immediate(conn):
            version = _user_version(conn)  # another process may have migrated meanwhile
            db = Database(conn, recursive_triggers=False, execute_plugins=False)
            for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
                log.info("memory schema: applying step %d (%s)", number, step.__name__)
                step(db)
                conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction taking the write lock up front (waits, never fails fast)."""
        with self._pool.connection() as conn, immediate(conn):
            yield conn

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

    def new_session(self, source: str = "tui", title: str | None = None) -> int:
        now = time.time()
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (source, title, started, last_activity) VALUES (?, ?, ?, ?)",
                (source, title, now, now),
            )
            return int(cur.lastrowid)

    def set_summary(self, session_id: int, text: str | None) -> None:
        self._update_session(session_id, "summary", text)

    def set_title(self, session_id: int, title: str | None) -> None:
        self._update_session(session_id, "title", title)

    def _update_session(self, session_id: int, column: str, value: str | None) -> None:
        with self._write() as conn:
            sql = f"UPDATE sessions SET {column} = ? WHERE id = ?"
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
        """Messages containing every word of ``query``, else any of them; best first.

        No text can make this raise: the query is cut into words the way the index cuts text
        (runs of letters and digits; everything else, FTS5 syntax included, separates) and
        each of the first ``MAX_TERMS`` words is quoted. No words: ``[]``.

        Ranking is FTS5's bm25, newest (highest id) first among equal scores, within two bounds
        that keep a search in milliseconds at millions of messages (bench/memory_search.py):

        * Only the newest ``CANDIDATES`` matches are ranked: FTS5 walks postings newest first
          and stops there, whereas ``ORDER BY rank`` scores every match, for "the" every
          message (over a second at 1M). Rarer queries are thus ranked exactly; a common one
          ranks its recent matches, usually what one wants from a personal history.
        * bm25 reads each word's whole posting list once per query, so only the rarest words,
          together within ``SCORING_POSTINGS`` postings, are scored; the others still filter.
          Words in half the messages or more weigh ~0 in bm25 anyway (its IDF floor). When no
          word qualifies, hits are simply newest first, with score 0.

        When no message has every word, each word (near-universal ones left out) is searched
        in its own newest window and the per-word bm25 scores are summed, which is what bm25
        gives an OR query.

        ``SearchHit.score`` is ``-bm25`` (higher is better). Snippets mark the query's words
        with ``HIT_START``/``HIT_END``.
        """
        if limit <= 0 or not _WORD.search(query):
            return []
        with self._read() as conn:
            scope = _Scope.of(conn, session_id)
            if scope is None:
                return []
            parsed = _Query.parse(conn, query)
            ranked = _rank_all(conn, parsed, scope)
            if ranked or len(parsed.words) == 1:
                return _hits(conn, ranked[:limit], _all_of(parsed.words), scan=True)
            return _search_any(conn, parsed, scope, limit)


_INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, name, created)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)

_SESSIONS_SQL = """
SELECT s.id, s.source, s.title, s.summary, s.started, s.last_activity,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
       (SELECT substr(m.content, 1, 2000) FROM messages m
         WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1)
  FROM sessions s"""


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front (waiting on busy),
    so read-then-write decisions are atomic across processes; rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (persistent), retrying while another process holds it.

    Changing the journal mode can fail with "database is locked" at once, without waiting for
    the busy timeout, when several processes open a new file together.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


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


def _optimize_index(conn: sqlite3.Connection) -> None:
    """Merge the FTS5 index into one segment: a delete only adds a tombstone, and the words
    of a forgotten message stay in the old segment until a merge that includes it."""
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")


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


# --------------------------------------------------------------------------- search helpers

_WORD = re.compile(r"[^\W_]+")
"""Runs of letters and digits: what the unicode61 tokenizer keeps, so each term is one token."""


def _query_words(text: str) -> list[str]:
    words: dict[str, None] = {}
    for match in _WORD.finditer(text):
        words.setdefault(match.group().lower())
        if len(words) == MAX_TERMS:
            break
    return list(words)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _all_of(terms: Iterable[str]) -> str:
    return " AND ".join(_quote(t) for t in terms)


def _any_of(terms: Iterable[str]) -> str:
    return " OR ".join(_quote(t) for t in terms)


@dataclass(frozen=True)
class _Query:
    """The query's words with the share of messages each occurs in, estimated cheaply."""

    words: list[str]
    share: dict[str, float]
    indexed: int  # messages in the index (the largest rowid)

    @classmethod
    def parse(cls, conn: sqlite3.Connection, text: str) -> _Query:
        words = _query_words(text)
        (indexed,) = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
        # Counting in the newest rows costs at most DENSITY_SAMPLE postings whatever the term,
        # and FTS5 applies the same stemming as in the real query.
        sample = max(1, min(DENSITY_SAMPLE, indexed))
        share = {}
        for word in words:
            (count,) = conn.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ?",
                (_quote(word), indexed - sample),
            ).fetchone()
            share[word] = count / sample
        return cls(words, share, indexed)

    def common(self, word: str) -> bool:
        return self.share[word] >= FREQUENT

    def scoring(self, words: list[str]) -> list[str]:
        """The rarest of ``words`` whose posting lists bm25 can read within the budget."""
        chosen: list[str] = []
        postings = 0.0
        for word in sorted(words, key=self.share.__getitem__):
            postings += self.share[word] * self.indexed
            if self.common(word) or postings > SCORING_POSTINGS:
                break
            chosen.append(word)
        return chosen


@dataclass(frozen=True)
class _Scope:
    """The rowid range to search, and the session to keep when searching one session."""

    low: int
    high: int
    session_id: int | None

    @classmethod
    def of(cls, conn: sqlite3.Connection, session_id: int | None) -> _Scope | None:
        # Two subqueries: SQLite answers a lone min() or max() from the index, not both at once.
        where, args = ("", ()) if session_id is None else (" WHERE session_id = ?", (session_id,))
        low, high = conn.execute(
            f"SELECT (SELECT min(id) FROM messages{where}), (SELECT max(id) FROM messages{where})",
            args * 2,
        ).fetchone()
        return None if low is None else cls(low, high, session_id)


def _newest(conn: sqlite3.Connection, expr: str, scope: _Scope, limit: int) -> list[int]:
    """Rowids matching ``expr`` in scope, newest first; FTS5 stops after ``limit``."""
    if scope.session_id is None:
        sql = (
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
            " AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?"
        )
        args: tuple[Any, ...] = (expr, scope.low, scope.high, limit)
    else:
        sql = (
            "SELECT f.rowid FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " WHERE messages_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND m.session_id = ?"
            " ORDER BY f.rowid DESC LIMIT ?"
        )
        args = (expr, scope.low, scope.high, scope.session_id, limit)
    return [row[0] for row in conn.execute(sql, args)]


def _bm25(conn: sqlite3.Connection, words: list[str], rowids: list[int]) -> dict[int, float]:
    """bm25 of ``words`` (all required) for ``rowids``, in one pass over their rowid range.

    "+rowid" keeps the IN list a plain filter (one index lookup per value would recount the
    words' postings each time); as a WHERE filter it also spares bm25 for rows not wanted.
    """
    marks = ",".join("?" * len(rowids))
    return dict(
        conn.execute(
            "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?"
            f" AND rowid BETWEEN ? AND ? AND +rowid IN ({marks})",
            (_all_of(words), min(rowids), max(rowids), *rowids),
        )
    )


def _ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    """Best bm25 (most negative) first, newest first among equals."""
    return sorted(scores.items(), key=lambda item: (item[1], -item[0]))


def _rank_all(conn: sqlite3.Connection, query: _Query, scope: _Scope) -> list[tuple[int, float]]:
    """AND: the newest candidates containing every word, ranked by bm25 of the scoring words."""
    candidates = _newest(conn, _all_of(query.words), scope, CANDIDATES)
    scores = dict.fromkeys(candidates, 0.0)
    scoring = query.scoring(query.words)
    if candidates and scoring:
        scores.update(_bm25(conn, scoring, candidates))
    return _ranked(scores)


def _rank_any(
    conn: sqlite3.Connection, query: _Query, pool: list[str], scope: _Scope, limit: int
) -> list[tuple[int, float]]:
    """OR: each word's newest candidates, scored word by word and summed.

    bm25 of an OR query is the sum of its words' bm25, so this is exact for rows inside every
    word's window; giving each word its own window keeps a rare word's older hits from being
    crowded out by a common word's recent ones.
    """
    scoring = set(query.scoring(pool))
    per_word = max(limit, CANDIDATES // len(pool))
    scores: dict[int, float] = {}
    for word in pool:
        candidates = _newest(conn, _quote(word), scope, per_word)
        part = _bm25(conn, [word], candidates) if candidates and word in scoring else {}
        for rowid in candidates:
            scores[rowid] = scores.get(rowid, 0.0) + part.get(rowid, 0.0)
    return _ranked(scores)


def _search_any(
    conn: sqlite3.Connection, query: _Query, scope: _Scope, limit: int
) -> list[SearchHit]:
    """The OR fallback. A hit on a near-universal word alone is noise, so those are left out."""
    pool = [w for w in query.words if not query.common(w)] or query.words
    top = _rank_any(conn, query, pool, scope, limit)[:limit]
    if not top:
        return []
    span = max(r for r, _ in top) - min(r for r, _ in top)
    matches_in_span = span * min(1.0, sum(query.share[w] for w in pool))
    scan = matches_in_span <= SCAN_ROWS_PER_WORD * len(pool)
    return _hits(conn, top, _any_of(pool), scan=scan)


def _hits(
    conn: sqlite3.Connection, ranked: list[tuple[int, float]], expr: str, *, scan: bool
) -> list[SearchHit]:
    """Hydrate the final hits: metadata by primary key, snippets from FTS5.

    ``scan`` reads the snippets in one pass over the hits' rowid range, cheap when that range
    holds few other matches (the AND case: at most ``CANDIDATES``); otherwise each hit is
    looked up on its own, which costs a seek per word and index segment (~0.15 ms a word).
    """
    if not ranked:
        return []
    rowids = [rowid for rowid, _ in ranked]
    marks = ",".join("?" * len(rowids))
    meta = {
        row[0]: row[1:]
        for row in conn.execute(
            f"SELECT id, session_id, role, created FROM messages WHERE id IN ({marks})", rowids
        )
    }
    where = "rowid BETWEEN ? AND ? AND +rowid" if scan else "rowid"
    span = (min(rowids), max(rowids)) if scan else ()
    snippets = dict(
        conn.execute(
            "SELECT rowid, snippet(messages_fts, -1, ?, ?, ?, ?) FROM messages_fts"
            f" WHERE messages_fts MATCH ? AND {where} IN ({marks})",
            (HIT_START, HIT_END, ELLIPSIS, SNIPPET_TOKENS, expr, *span, *rowids),
        )
    )
    return [
        SearchHit(
            session_id=meta[rowid][0],
            message_id=rowid,
            role=meta[rowid][1],
            snippet=snippets.get(rowid) or "",
            created=meta[rowid][2],
            score=-score or 0.0,
        )
        for rowid, score in ranked
        if rowid in meta
    ]
