"""Memory files made on purpose: damaged pages, seeded stores, stores of old releases."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from hermes_tui.memory.store import MemoryStore
from hermes_tui.memory.text import index_text

MESSAGES = 600


def seeded(path: Path) -> list[int]:
    """A closed store with 3 sessions, MESSAGES messages, a summary; returns the session ids."""
    with MemoryStore(path) as store:
        sids = []
        for s in range(3):
            sid = store.new_session(title=f"session {s}")
            store.bulk_add_messages(sid, [{"role": "user", "content": f"note {s}-{i} about quokkas " * 8}
                                          for i in range(MESSAGES // 3)])
            sids.append(sid)
        store.set_summary(sids[0], "talked about quokkas")
    return sids


def pages_of(path: Path, table: str, kind: str) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno", (table, kind))]
    finally:
        conn.close()


def smash(path: Path, page: int) -> None:
    """Overwrite one page (numbered from 1) with garbage."""
    size = 4096
    with path.open("r+b") as f:
        f.write(b"")
        f.seek((page - 1) * size)
        f.write(os.urandom(size))


def write_version_1_store(path: Path) -> None:
    """A file as the first schema wrote it: one session, one message."""
    from sqlite_utils import Database

    from hermes_tui.memory import schema as schema_module

    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("hermes_index_text", 1, index_text)
    schema_module._v1_core(Database(conn))
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (source, summary, started, last_activity) VALUES ('tui', 'about 東京', 1, 1)")
    conn.execute("INSERT INTO messages (session_id, role, content, created) VALUES (1, 'user', ?, 1)",
                 ("\x1b[31mRED\x1b[0m 東京タワーに行きました",))
    conn.close()
