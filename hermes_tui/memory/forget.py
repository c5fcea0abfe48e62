"""Forgetting: ``forget_session``, the one way every surface forgets a session, and what the
store deletes besides a row itself: every row of any table whose foreign key points at it (read
from the schema, so tables added later are covered), and the words left in the FTS5 indexes' old
segments. The store's ``_scrub`` then empties the WAL.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.memory.maintenance import FTS_TABLES

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore


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


@dataclass(frozen=True)
class Forgotten:
    """What ``forget_session`` removed, for the surface's one line; ``prompts``: the session's
    prompts, which a running TUI also drops from its own copy of the prompt history."""

    session_id: int
    messages: int
    prompts: frozenset[str]
    files: tuple[Path, ...]
    history_entries: int
    checkpoint_records: int = 0  # checkpoints whose prompt was blanked


def forget_session(memory: MemoryStore, session_id: int, prompt_history: Path | None = None) -> Forgotten:
    """Forget a session for good, the same from every surface (the TUI's /forget and Sessions
    pane, the web's DELETE): its messages and every row that refers to it (index entries,
    compactions, usage, pending summary, export records; ``MemoryStore.delete_session``), the files of
    its attached images no other session refers to (``memory.attachments``), the WAL's
    old pages, the files exported or copied from it that still hold what Hermes wrote, and its
    prompts in the ``prompt_history`` file (HERMES_HOME/``prompts.HISTORY_FILE``), and its prompts in
    the checkpoints of every workspace (``agent.checkpoints.forget_session``; HERMES_HOME is the
    folder of the memory file). The sessions of its sub-agents (``delegate``) go with it.
    Raises ``KeyError`` for an unknown session."""
    from hermes_tui.agent import checkpoints
    from hermes_tui.memory import exports, prompts

    if memory.get_session(session_id) is None:
        raise KeyError(f"no session {session_id}")
    said = frozenset(m.content for m in memory.get_messages(session_id) if m.role == "user" and m.content)
    files = exports.traces_of(memory.path, session_id)  # before the rows go with the session
    count = memory.delete_session(session_id)
    removed = tuple(exports.remove(files))
    dropped = prompts.forget(prompt_history, said) if prompt_history is not None else 0
    blanked = checkpoints.forget_session(memory.path.parent, session_id)
    for child in memory.subagent_sessions(session_id):
        gone = forget_session(memory, child, prompt_history)
        count, removed = count + gone.messages, removed + gone.files
    return Forgotten(session_id, count, said, removed, dropped, blanked)
