"""The dashboard's own small tables, kept in the same memory.sqlite3 as the conversations.

Why the shared database rather than memory or a second file: login lockouts and server-side
sessions must hold across gunicorn workers, restarts and several app instances, and the memory
database already lives on the persistent volume in WAL mode. The tables are created here (with
sqlite-utils, ``IF NOT EXISTS``) rather than as a core schema migration, so the core never knows
about the web; ``PRAGMA user_version`` is left alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database

from hermes_tui.db import connect, enable_wal, immediate, prepare


class WebDB:
    """Opens one short-lived connection per operation: cheap, thread- and fork-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        prepare(self.path)  # it may be the first to create the shared database file (never reopens one)
        conn = self._connect()
        try:
            enable_wal(conn)  # persistent in the file: once is enough
        finally:
            conn.close()
        with self.write() as conn:
            _create_tables(Database(conn, execute_plugins=False))

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: read-then-write decisions are atomic across processes."""
        conn = self._connect()
        try:
            with immediate(conn):
                yield conn
        finally:
            conn.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        conn = self._connect()
        try:
            yield conn
        finally:
            conn.close()


def _create_tables(db: Database) -> None:
    db["web_login_attempts"].create(
        {"id": int, "client": str, "at": float}, pk="id", not_null={"client", "at"}, if_not_exists=True
    )
    db["web_login_attempts"].create_index(["client", "at"], if_not_exists=True)
    # id is the SHA-256 of the token the cookie carries: a copy of the database holds no usable cookie.
    db["web_sessions"].create(
        {"id": str, "created": float, "last_seen": float, "fingerprint": str},
        pk="id", not_null={"created", "last_seen"}, if_not_exists=True,
    )
    if "fingerprint" not in db["web_sessions"].columns_dict:  # tables made before sessions were bound
        db["web_sessions"].add_column("fingerprint", str)
