"""The memory store's connections: one per operation, lent by a small pool (see ``ConnectionPool``)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hermes_tui.memory.errors import StoreError


class ConnectionPool:
    """Lends each operation a connection of its own, whatever thread it runs on.

    Why a pool rather than one connection per thread: web servers start a thread per request,
    so thread-bound connections would pile up; and rather than one shared connection behind a
    lock: with WAL, searches from a TUI worker and a web thread can then read in parallel, and a
    write waiting for another process's lock never stalls readers in this one. A connection is
    only ever used by one thread at a time (hence ``check_same_thread=False`` is safe).
    """

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        describe: Callable[[sqlite3.Error], StoreError | None],
        max_idle: int = 4,
    ) -> None:
        self._connect = connect
        self._describe = describe
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
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except sqlite3.Error as exc:
            # Damage, a full disk, a read-only file: one readable line instead of SQLite's code.
            error = self._describe(exc)
            if error is None or error is exc:
                raise
            raise error from exc
        finally:
            if conn is not None:
                self._give_back(conn)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:  # e.g. a failed COMMIT: never lend out an open transaction
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # a damaged or vanished file: drop the connection
                conn.close()
                return
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
