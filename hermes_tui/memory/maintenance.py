"""Background upkeep of the memory file: WAL checkpoints and FTS5 segment merges.

Why a thread: SQLite does both inside whichever write happens to cross a threshold, so an
append that normally takes a fraction of a millisecond now and then took 20-35 ms (a WAL
checkpoint copying thousands of pages, or FTS5 merging a level of segments). The store turns
both off for its own connections (``wal_autocheckpoint = 0``; FTS5 ``automerge = 0``) and this
thread does the same work in small steps between appends:

* FTS5 ``merge`` steps of ``MERGE_PAGES`` pages, each its own short transaction, while there
  is work (``crisismerge`` stays as a safety net should this thread not run);
* a PASSIVE checkpoint when the WAL has grown past ``CHECKPOINT_BYTES``: it never takes the
  write lock, so appends carry on while it copies.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

log = logging.getLogger(__name__)

INTERVAL = 0.25
"""Seconds between rounds when writes happened."""
MERGE_PAGES = 64
"""Pages one merge step writes: a few milliseconds of holding the write lock."""
MERGE_STEPS = 32
"""Merge steps per round at most, so a long backlog never monopolises the lock."""
STEP_PAUSE = 0.004
"""Seconds between merge steps, letting queued appends in."""
CHECKPOINT_BYTES = 4_000_000
FTS_TABLES = ("messages_fts", "sessions_fts")


class Maintenance:
    """A daemon thread doing the store's checkpoints and merges after writes (see module)."""

    def __init__(
        self,
        path: Path,
        connection: Callable[[], AbstractContextManager[sqlite3.Connection]],
    ) -> None:
        self._wal = Path(f"{path}-wal")
        self._connection = connection
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hermes-memory-upkeep", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """Called after each write transaction: there may be work."""
        self._dirty.set()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._dirty.set()
        self._thread.join(timeout)

    def run_once(self) -> None:
        """One full round now (tests, benchmarks, and the final round at close)."""
        with self._connection() as conn:
            while self._merge_step(conn):
                pass
            self._checkpoint(conn, force=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                break
            self._dirty.clear()
            try:
                with self._connection() as conn:
                    for _ in range(MERGE_STEPS):
                        if self._stop.is_set() or not self._merge_step(conn):
                            break
                        time.sleep(STEP_PAUSE)
                    else:
                        self._dirty.set()  # more to do next round
                    self._checkpoint(conn)
            except sqlite3.Error as exc:  # a locked or damaged file: retried after the next write
                log.warning("memory upkeep skipped: %s", exc)
            self._stop.wait(INTERVAL)

    @staticmethod
    def _merge_step(conn: sqlite3.Connection) -> bool:
        """One bounded merge step per index; True if any did work."""
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in FTS_TABLES:
                conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return conn.total_changes - before > len(FTS_TABLES)

    def _checkpoint(self, conn: sqlite3.Connection, *, force: bool = False) -> None:
        try:
            size = self._wal.stat().st_size
        except FileNotFoundError:
            return
        if force or size > CHECKPOINT_BYTES:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
