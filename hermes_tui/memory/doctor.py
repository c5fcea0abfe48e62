"""``hermes-tui doctor``: check the memory file and, when it is damaged, rebuild it.

The damaged file (and its WAL) is moved aside as a backup, never deleted; a new store is
created in its place and every row that can still be read is copied into it, table by table,
row by row where a whole range cannot be read. The search index is rebuilt from the copied
messages by the new store's own triggers, so nothing from the damaged index is trusted.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.db import MIGRATIONS_TABLE, connect
from hermes_tui.memory.errors import StoreError, check_header
from hermes_tui.memory.schema import refresh_index_columns
from hermes_tui.memory.store import MemoryStore
from hermes_tui.memory.text import index_text
from hermes_tui.progress import NO_PROGRESS, Progress

log = logging.getLogger(__name__)

CHUNK = 500
INDEX_CHECKS = (("messages_fts", 3), ("sessions_fts", 0))
"""The search indexes a check reads, each with its share of the time against the whole-file check
(1): measured at 200,000 messages, the message index takes about three times as long (1.2 s
against 0.45 s). SQLite says nothing while one check runs, so the progress moves per check."""
DERIVED = ("messages_fts", "sessions_fts", "long_messages", "frequent_top", "frequent_terms", MIGRATIONS_TABLE)
"""Tables the new store fills itself from the copied rows (index, excerpts, ranking cache), and
the record of schema steps (each store records its own when it opens the new file)."""


@dataclass
class Checkup:
    path: Path
    problems: list[str] = field(default_factory=list)
    sessions: int = 0
    messages: int = 0
    backup: Path | None = None
    saved_sessions: int = 0
    saved_messages: int = 0

    @property
    def healthy(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """What the command prints."""
        if self.healthy:
            return [f"memory database {self.path}: ok ({self.sessions:,} sessions, "
                    f"{self.messages:,} messages)"]
        out = [f"memory database {self.path} is damaged: {self.problems[0]}"]
        out += [f"  also: {p}" for p in self.problems[1:5]]
        if self.backup is not None:
            out.append(f"the damaged file was moved to {self.backup}")
            out.append(f"rebuilt a new store: saved {self.saved_sessions:,} sessions and "
                       f"{self.saved_messages:,} messages")
        return out


def check(path: Path, progress: Progress = NO_PROGRESS) -> Checkup:
    """Integrity of the file, the tables and both search indexes; counts when healthy.
    ``progress`` moves after each of these checks, by its share (``INDEX_CHECKS``)."""
    report = Checkup(path)
    if not path.exists():
        return report
    try:
        check_header(path)
        conn = _open(path, read_only=False)
    except (StoreError, sqlite3.Error) as exc:
        report.problems.append(str(exc))
        return report
    progress.start("Checking the memory store", 1 + sum(share for _, share in INDEX_CHECKS))
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
        if rows != ["ok"]:
            report.problems.extend(rows)
        progress.advance(1)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, share in INDEX_CHECKS:
            if table in tables:
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
            progress.advance(share)
        report.sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        report.messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    except sqlite3.Error as exc:
        report.problems.append(str(exc))
    finally:
        progress.done()
        conn.close()
    return report


def repair(path: Path, progress: Progress = NO_PROGRESS) -> Checkup:
    """Check; when damaged, move the file aside and rebuild a store from its readable rows;
    ``progress`` is told how far the check, then the copy of the readable rows, got."""
    report = check(path, progress)
    if report.healthy:
        return report
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report.backup = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        old = Path(f"{path}{suffix}")
        if old.exists():
            old.rename(Path(f"{report.backup}{suffix}"))
    with MemoryStore(path) as store:
        try:
            source = _open(report.backup, read_only=True)
        except sqlite3.Error as exc:
            report.problems.append(f"nothing could be read from the damaged file ({exc})")
            return report
        try:
            report.saved_sessions, report.saved_messages = _copy(source, store, progress)
        finally:
            source.close()
    return report


def _open(path: Path, *, read_only: bool) -> sqlite3.Connection:
    conn = connect(path, read_only=read_only)
    conn.create_function("hermes_index_text", 1, index_text, deterministic=True)
    return conn


def _copy(source: sqlite3.Connection, store: MemoryStore, progress: Progress) -> tuple[int, int]:
    """Copy every readable row of every table; returns (sessions, messages) saved."""
    try:
        schema = source.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL"
        ).fetchall()
    except sqlite3.Error as exc:
        log.warning("doctor: the damaged schema is unreadable: %s", exc)
        return 0, 0
    names = [name for name, _ in schema]
    # Sessions before messages (foreign keys), the store's own tables before others'.
    order = sorted(names, key=lambda n: (n != "sessions", n != "messages", n))
    counts: dict[str, int] = {}
    with store._write() as target:  # one transaction for the whole rebuild
        target.execute("PRAGMA defer_foreign_keys = ON")
        existing = {r[0] for r in target.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for name, sql in schema:
            if name not in existing and not _derived(name, names):
                target.execute(sql)
        copied = [name for name in order if not _derived(name, names)]
        progress.start("Rebuilding the memory store", sum(_high(source, name) for name in copied))
        try:
            for name in copied:
                counts[name] = _copy_table(source, target, name, progress)
        finally:
            progress.done()
        _add_missing_sessions(target)
        _drop_orphans(target)
        refresh_index_columns(target)  # rows of an older file, or of another client, come without them
    return counts.get("sessions", 0), counts.get("messages", 0)


def _derived(name: str, names: list[str]) -> bool:
    """The index, its shadow tables and the excerpts: rebuilt, never copied."""
    return name in DERIVED or any(name.startswith(f"{d}_") for d in DERIVED if d in names) or (
        name.startswith("sqlite_")
    )


def _copy_table(source: sqlite3.Connection, target: sqlite3.Connection, table: str, progress: Progress) -> int:
    copied = 0
    # By name: a store of an older schema may lack columns a later step added (sessions.workspace).
    try:
        names = ",".join(f'"{row[1]}"' for row in source.execute(f'PRAGMA table_info("{table}")'))
    except sqlite3.Error:
        names = ""
    columns = f" ({names})" if names else ""
    for row in _readable_rows(source, table, progress):
        marks = ",".join("?" * len(row))
        try:
            target.execute(f'INSERT OR IGNORE INTO "{table}"{columns} VALUES ({marks})', row)
            copied += 1
        except sqlite3.Error as exc:  # a row the new schema refuses: report and go on
            log.warning("doctor: skipped a row of %s: %s", table, exc)
    return copied


def _high(conn: sqlite3.Connection, table: str) -> int:
    """The highest rowid that may be readable (0 for an empty or unreadable table)."""
    try:
        (high,) = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
    except sqlite3.Error:
        high = None
    return _probe_high(conn, table) if high is None else high


def _readable_rows(conn: sqlite3.Connection, table: str, progress: Progress) -> Iterator[tuple[Any, ...]]:
    """Every row that can be read, by rowid ranges; a range that fails is read row by row.
    ``progress`` is told of each range, as rowids (``_high`` counted them so)."""
    high = _high(conn, table)
    low = 0
    while low <= high:
        try:
            rows = conn.execute(
                f'SELECT * FROM "{table}" WHERE rowid > ? AND rowid <= ? ORDER BY rowid',
                (low, low + CHUNK),
            ).fetchall()
        except sqlite3.Error:
            rows = []
            for rowid in range(low + 1, low + CHUNK + 1):
                try:
                    rows.extend(conn.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)))
                except sqlite3.Error:
                    continue
        yield from rows
        progress.advance(min(CHUNK, high - low))
        low += CHUNK


def _probe_high(conn: sqlite3.Connection, table: str) -> int:
    try:
        row = conn.execute(f'SELECT rowid FROM "{table}" ORDER BY rowid DESC LIMIT 1').fetchone()
        return row[0] if row else 0
    except sqlite3.Error:
        return 0


def _drop_orphans(target: sqlite3.Connection) -> None:
    """Rows (of any other table) pointing at a message that was lost cannot be kept."""
    for table, rowid, _parent, _fk in target.execute("PRAGMA foreign_key_check").fetchall():
        if rowid is not None:
            target.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))


def _add_missing_sessions(target: sqlite3.Connection) -> None:
    """Messages whose session row was lost get a session, so none is dropped."""
    target.execute(
        "INSERT INTO sessions (id, source, title, started, last_activity)"
        " SELECT session_id, 'recovered', 'recovered by hermes-tui doctor', min(created), max(created)"
        " FROM messages WHERE session_id NOT IN (SELECT id FROM sessions) GROUP BY session_id"
    )
