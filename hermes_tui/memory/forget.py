"""What forgetting deletes besides the row itself: every row of any table whose foreign key
points at it (read from the schema, so tables added later are covered), and the words left in
the FTS5 indexes' old segments. The store's ``_scrub`` then empties the WAL.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_tui.memory.maintenance import FTS_TABLES


def delete_with_dependents(
    conn: sqlite3.Connection, table: str, where: str, args: tuple[Any, ...]
) -> None:
    """Delete rows of ``table`` and, first, the rows of every table whose foreign key points at
    them (found in the schema, so tables added later by other features are covered too)."""
    for child, column, parent_column in referrers(conn, table):
        delete_with_dependents(
            conn,
            child,
            f'"{column}" IN (SELECT "{parent_column}" FROM "{table}" WHERE {where})',
            args,
        )
    conn.execute(f'DELETE FROM "{table}" WHERE {where}', args)


def referrers(conn: sqlite3.Connection, table: str) -> list[tuple[str, str, str]]:
    """(child table, its column, the referenced column) for foreign keys pointing at ``table``."""
    found = []
    names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    for (name,) in names:
        for fk in conn.execute(f'PRAGMA foreign_key_list("{name}")').fetchall():
            # (id, seq, table, from, to, on_update, on_delete, match); "to" is None for the pk
            if fk[2] == table and name != table:
                found.append((name, fk[3], fk[4] or "rowid"))
    return found


def optimize_index(conn: sqlite3.Connection) -> None:
    """Merge each FTS5 index into one segment: a delete only adds a tombstone, and the words
    of a forgotten message stay in the old segment until a merge that includes it."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
