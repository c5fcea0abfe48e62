"""The dashboard's own small tables, kept in the same memory.sqlite3 as the conversations.

Why the shared database rather than memory or a second file: login lockouts and server-side
sessions must hold across gunicorn workers, restarts and several app instances, and the memory
database already lives on the persistent volume in WAL mode. The tables are the web's own schema
steps (``db.Migrations("web")``) rather than core ones, so the core never knows about the web;
``PRAGMA user_version`` is left alone. The first steps keep ``IF NOT EXISTS`` and the column
check, as files made before steps were recorded have them already.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui.db import Migrations, connect, enable_wal, immediate, prepare

if TYPE_CHECKING:
    from sqlite_utils import Database


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
            WEB_SCHEMA.apply(conn)

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


WEB_SCHEMA = Migrations("web")


@WEB_SCHEMA
def web_tables(db: Database) -> None:
    """Login attempts (the lockout) and server-side sessions."""
    db.table("web_login_attempts").create(
        {"id": int, "client": str, "at": float}, pk="id", not_null={"client", "at"}, if_not_exists=True
    )
    db.table("web_login_attempts").create_index(["client", "at"], if_not_exists=True)
    # id is the SHA-256 of the token the cookie carries: a copy of the database holds no usable cookie.
    db.table("web_sessions").create(
        {"id": str, "created": float, "last_seen": float}, pk="id", not_null={"created", "last_seen"},
        if_not_exists=True,
    )


@WEB_SCHEMA
def web_session_fingerprint(db: Database) -> None:
    """A session is bound to the password and settings it was made under (``session_store``)."""
    if "fingerprint" not in db["web_sessions"].columns_dict:
        db.table("web_sessions").add_column("fingerprint", str)
