"""Files Hermes wrote from a session (/export, /copy's clipboard file), so forgetting the
session (``forget.forget_session``, from any surface) removes them too.

Each write goes through ``private.write_private`` and is recorded in the store (``session_files``)
with a hash of what was written; the row's foreign key points at the session, so forgetting the
session drops the row as well. Forgetting deletes a file only while it still holds exactly what
Hermes wrote: a file the user has since edited, or that a later /copy or /export filled with
another session's text, is left alone.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_tui.db import connect
from hermes_tui.private import write_private

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trace:
    """A file Hermes wrote from a session and the digest of what it wrote: forgetting the session
    deletes it only while it still holds exactly that."""

    path: Path
    sha256: str


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(db_path: Path, session_id: int, path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` the one private way (atomic, 0600, a symlink there replaced,
    never followed) and record it as made from ``session_id``; raises OSError."""
    write_private(path, text)
    record(db_path, session_id, path, text)
    return path


def record(db_path: Path, session_id: int, path: Path, text: str) -> None:
    """Remember that ``path`` now holds ``text``, taken from ``session_id``."""
    try:
        conn = connect(db_path)
        try:
            conn.execute("INSERT OR REPLACE INTO session_files (session_id, path, sha256) VALUES (?, ?, ?)",
                         (session_id, str(path.resolve()), _digest(text.encode("utf-8"))))
        finally:
            conn.close()
    except sqlite3.Error as exc:  # the file is written; only /forget's clean-up would miss it
        log.warning("could not record %s for session %s: %s", path, session_id, exc)


def traces_of(db_path: Path, session_id: int) -> list[Trace]:
    """What Hermes wrote from the session; read it before the session is forgotten (the rows go with it)."""
    conn = connect(db_path)
    try:
        rows = conn.execute("SELECT path, sha256 FROM session_files WHERE session_id = ?", (session_id,))
        return [Trace(Path(path), sha) for path, sha in rows.fetchall()]
    finally:
        conn.close()


def remove(traces: list[Trace]) -> list[Path]:
    """Delete each file that still holds what Hermes wrote; the paths deleted."""
    removed = []
    for trace in traces:
        try:
            if _digest(trace.path.read_bytes()) == trace.sha256:
                trace.path.unlink()
                removed.append(trace.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("could not remove %s: %s", trace.path, exc)
    return removed
