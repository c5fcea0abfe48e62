"""Background upkeep of the memory file: WAL checkpoints and FTS5 segment merges.

Why a thread: SQLite does both inside whichever write happens to cross a threshold, so an
append that normally takes a fraction of a millisecond now and then took 20-35 ms (a WAL
checkpoint copying thousands of pages, or FTS5 merging a level of segments). The store turns
both off for its own connections (``wal_autocheckpoint = 0``; FTS5 ``automerge = 0``) and this
thread does the same work in small steps between appends:

* FTS5 ``merge`` steps of ``MERGE_PAGES`` pages, each its own short transaction, while there
  is work (``crisismerge`` stays as a safety net should this thread not run);
* a PASSIVE checkpoint when the WAL has grown past ``CHECKPOINT_BYTES``: it never takes the
  write lock, so appends carry on while it copies;
* bm25's best messages for the frequent words searches met (``frequent_top``), which a search
  cannot afford to compute itself.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from hermes_tui.clock import Clock, wait_for

log = logging.getLogger(__name__)

INTERVAL = 0.25
"""Seconds between rounds when writes happened."""
MERGE_PAGES = 16
"""Pages one merge step writes: about a millisecond of holding the write lock (64 pages
doubled the appends' p90 on a busy machine)."""
MERGE_STEPS = 32
"""Merge steps per round at most, so a long backlog never monopolises the lock."""
STEP_PAUSE = 0.004
"""Seconds between merge steps, letting queued appends in."""
CHECKPOINT_BYTES = 4_000_000
FTS_TABLES = ("messages_fts", "sessions_fts")
BEST_KEPT = 40
"""bm25's best messages kept per frequent word (twice a page of results)."""
REFRESH_GROWTH = 0.05
REFRESH_MIN = 200
"""Recompute a word's best once the store has grown by 5 % (and 200 messages) since."""


class Maintenance:
    """A daemon thread doing the store's checkpoints and merges after writes (see module)."""

    def __init__(
        self,
        path: Path,
        connection: Callable[[], AbstractContextManager[sqlite3.Connection]],
        writer: AbstractContextManager[object],
        clock: Clock = time.monotonic,
    ) -> None:
        self._clock = clock  # what the pauses between rounds and steps are counted on
        self._wal = Path(f"{path}-wal")
        self._connection = connection
        self._writer = writer  # the store's in-process write lock (see MemoryStore.__init__)
        self._dirty = threading.Event()
        self._wanted: set[str] = set()
        self._wanted_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hermes-memory-upkeep", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """Called after each write transaction: there may be work."""
        self._dirty.set()

    def want_best(self, term: str) -> None:
        """A search met ``term``, too frequent to rank: keep bm25's best for it (see search.py)."""
        with self._wanted_lock:
            if term in self._wanted:
                return
            self._wanted.add(term)
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
            self._refresh_best(conn)
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
                        wait_for(self._stop, STEP_PAUSE, self._clock)
                    else:
                        self._dirty.set()  # more to do next round
                    self._refresh_best(conn)
                    self._checkpoint(conn)
            except sqlite3.Error as exc:  # a locked or damaged file: retried after the next write
                log.warning("memory upkeep skipped: %s", exc)
            wait_for(self._stop, INTERVAL, self._clock)

    def _merge_step(self, conn: sqlite3.Connection) -> bool:
        """One bounded merge step per index; True if any did work."""
        before = conn.total_changes
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for table in FTS_TABLES:
                    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        return conn.total_changes - before > len(FTS_TABLES)

    def _refresh_best(self, conn: sqlite3.Connection) -> None:
        """bm25's ``BEST_KEPT`` best messages for each wanted frequent term, recomputed when
        the store has grown by ``REFRESH_GROWTH`` since. Scoring every message holding a
        frequent word takes a second at a million messages: fine here, not in a search."""
        with self._wanted_lock:
            terms = sorted(self._wanted)
        for term in terms:
            if self._stop.is_set():
                return
            (indexed,) = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
            row = conn.execute("SELECT upto FROM frequent_terms WHERE term = ?", (term,)).fetchone()
            if row is not None and indexed - row[0] <= max(REFRESH_MIN, REFRESH_GROWTH * row[0]):
                continue
            best = conn.execute(
                "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?"
                " ORDER BY rank LIMIT ?",
                (term, BEST_KEPT),
            ).fetchall()
            with self._writer:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("DELETE FROM frequent_top WHERE term = ?", (term,))
                    conn.executemany(
                        "INSERT OR IGNORE INTO frequent_top (term, rowid_, score)"
                        " SELECT ?, id, ? FROM messages WHERE id = ?",
                        [(term, score, rowid) for rowid, score in best],
                    )
                    conn.execute("INSERT OR REPLACE INTO frequent_terms (term, upto) VALUES (?, ?)",
                                 (term, indexed))
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")

    def _checkpoint(self, conn: sqlite3.Connection, *, force: bool = False) -> None:
        try:
            size = self._wal.stat().st_size
        except FileNotFoundError:
            return
        if force or size > CHECKPOINT_BYTES:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
