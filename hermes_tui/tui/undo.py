"""Messages taken out of a conversation by /undo or /retry. Memory keeps them (search, the
transcript, the Sessions pane still show them); they are only marked, so a resumed session
leaves them out of what is sent and of the chat view."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from hermes_tui.background import Background
from hermes_tui.db import immediate
from hermes_tui.tui.tuidb import connect

log = logging.getLogger(__name__)


class UndoLog:
    def __init__(self, path: Path, background: Background) -> None:
        self.path = Path(path)
        self.background = background

    def mark(self, message_ids: Iterable[int]) -> threading.Thread:
        """Mark messages undone in the background (the thread is returned, for tests)."""
        ids = sorted(set(message_ids))
        return self.background.start("hermes-undo", lambda: self._store(ids))

    def _store(self, ids: list[int]) -> None:
        try:
            conn = connect(self.path)
            try:
                with immediate(conn):
                    conn.executemany("INSERT OR IGNORE INTO tui_undone_messages (message_id, undone) VALUES (?, ?)",
                                     [(i, time.time()) for i in ids])
            finally:
                conn.close()
        except sqlite3.Error:
            log.exception("marking %d messages undone failed", len(ids))

    def undone(self, session_id: int) -> set[int]:
        """The ids of a session's undone messages."""
        try:
            conn = connect(self.path)
            try:
                rows = conn.execute(
                    "SELECT u.message_id FROM tui_undone_messages u JOIN messages m ON m.id = u.message_id"
                    " WHERE m.session_id = ?", (session_id,)).fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            log.exception("reading the undone messages of session %s failed", session_id)
            return set()
        return {row[0] for row in rows}
