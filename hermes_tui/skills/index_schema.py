"""The skill index's tables: their named steps (``INDEX_SCHEMA``, a ``db.Migrations``: a schema
change is one more function at its end) and the typed rows read from them (``Row``) and written
by a refresh (``Entry``). The queries over them are ``index.py``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_tui.db import Migrations

if TYPE_CHECKING:
    from sqlite_utils import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    rel TEXT NOT NULL UNIQUE,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    sha TEXT NOT NULL DEFAULT '',
    base TEXT,
    name TEXT,
    skipped TEXT NOT NULL DEFAULT '',
    flag TEXT NOT NULL DEFAULT '',
    notice TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    triggers TEXT NOT NULL DEFAULT '[]',
    keywords TEXT NOT NULL DEFAULT '[]',
    platforms TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL DEFAULT 1,
    created REAL NOT NULL DEFAULT 0,
    updated REAL NOT NULL DEFAULT 0,
    learned INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_name ON files(name);
CREATE INDEX IF NOT EXISTS files_base ON files(base);
CREATE VIRTUAL TABLE IF NOT EXISTS skills_search USING fts5(
    name, triggers, description, lead, tokenize = 'porter unicode61'
);
CREATE VIRTUAL TABLE IF NOT EXISTS skills_rest USING fts5(rest, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS usage (rel TEXT PRIMARY KEY, use_count INTEGER NOT NULL, last_used REAL NOT NULL);
CREATE TABLE IF NOT EXISTS written (rel TEXT PRIMARY KEY, sha TEXT NOT NULL, body TEXT);
CREATE TABLE IF NOT EXISTS approved (rel TEXT PRIMARY KEY, sha TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS uses (
    id INTEGER PRIMARY KEY, rel TEXT NOT NULL, turn INTEGER, at REAL NOT NULL, outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS uses_rel ON uses(rel);
CREATE INDEX IF NOT EXISTS uses_turn ON uses(turn);
CREATE TABLE IF NOT EXISTS pinned (rel TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS archived (
    name TEXT PRIMARY KEY, rel TEXT NOT NULL, folder TEXT NOT NULL, at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Row:
    """One indexed skill file (usable, quarantined, or skipped with a reason)."""

    id: int
    rel: str
    name: str | None
    skipped: str
    flag: str
    notice: str
    description: str
    triggers: list[str]
    keywords: list[str]
    platforms: list[str]
    version: int
    created: float
    updated: float
    learned: bool
    use_count: int
    last_used: float
    sha: str

    @property
    def found_name(self) -> str:
        """The name of a row looked up by name (only a skipped file's row has none)."""
        assert self.name is not None, self.rel
        return self.name


@dataclass(frozen=True)
class Entry:
    """What a refresh writes for one file."""

    rel: str
    mtime_ns: int
    size: int
    depth: int
    sha: str = ""
    base: str | None = None
    skipped: str = ""
    flag: str = ""
    notice: str = ""
    description: str = ""
    triggers: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    version: int = 1
    created: float = 0.0
    updated: float = 0.0
    learned: bool = False
    body: str = ""
    legacy_uses: int = 0


ROW_SQL = """
SELECT f.id, f.rel, f.name, f.skipped, f.flag, f.notice, f.description, f.triggers, f.keywords, f.platforms,
       f.version, f.created, f.updated, f.learned, coalesce(u.use_count, 0), coalesce(u.last_used, 0), f.sha
  FROM files f LEFT JOIN usage u ON u.rel = f.rel"""


def row_of(values: tuple[object, ...]) -> Row:
    v = list(values)
    for i in (7, 8, 9):
        v[i] = json.loads(str(v[i]))
    v[13] = bool(v[13])
    return Row(*v)  # type: ignore[arg-type]  # the index's columns, in Row's field order


def _rebuild_search(conn: sqlite3.Connection) -> None:
    """An index made before the lead/rest split has one ``skills_fts`` table: drop it and forget
    the files' stats, so the next refresh re-reads every file into the new tables. Only the
    cache goes; uses, outcomes, approvals, pins and the archive are kept (they are keyed by path)."""
    old = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'skills_fts'").fetchone()
    if old is not None:
        conn.execute("DROP TABLE skills_fts")
        conn.execute("DELETE FROM files")


INDEX_SCHEMA = Migrations("skills")
"""The index's named steps (``db.Migrations``, recorded in its own file): a change is a new one."""


@INDEX_SCHEMA
def skills_tables(db: Database) -> None:
    """The tables, taking over an index made before steps were named, in any of its layouts."""
    _rebuild_search(db.conn)
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    if "body" not in {column[1] for column in db.execute("PRAGMA table_info(written)")}:
        db.execute("ALTER TABLE written ADD COLUMN body TEXT")  # an index from before F8 merged


@INDEX_SCHEMA
def use_costs_provenance_inbox(db: Database) -> None:
    """Each use's cost (model calls, tool calls, tokens); the turn each learned version came from
    (``learned``), to compare uses against it and to demote it when that turn is corrected; the
    skills learned under HERMES_LEARN=review that wait for the user (``inbox``)."""
    columns = {column[1] for column in db.execute("PRAGMA table_info(uses)")}
    for column in ("model_calls", "tool_calls", "tokens"):
        if column not in columns:
            db.execute(f"ALTER TABLE uses ADD COLUMN {column} INTEGER")
    db.execute("CREATE TABLE IF NOT EXISTS learned (id INTEGER PRIMARY KEY, rel TEXT NOT NULL, version INTEGER "
               "NOT NULL, turn INTEGER, session INTEGER, model TEXT NOT NULL, model_calls INTEGER, tool_calls "
               "INTEGER, tokens INTEGER, at REAL NOT NULL)")
    db.execute("CREATE INDEX IF NOT EXISTS learned_turn ON learned(turn)")
    db.execute("CREATE INDEX IF NOT EXISTS learned_rel ON learned(rel)")
    db.execute("CREATE TABLE IF NOT EXISTS inbox (rel TEXT PRIMARY KEY, at REAL NOT NULL)")
