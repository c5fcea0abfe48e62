"""The one way Hermes opens an SQLite file: connections, file modes and transactions.

Why one place: SQLite's locks are POSIX locks, which belong to the *process*, and closing any
descriptor of a database file drops every lock the process holds on it. A stray ``os.open`` and
``os.close`` of a live database (to set its mode, or to peek at its header) lets another process
that opens and closes the file believe it is the last user: it checkpoints and deletes the WAL
under our connections, and the file ends up malformed. So once this process has connected to a
file, nothing here opens it again outside SQLite; modes are set before, or by path.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.private import FILE_MODE, private_dir

if TYPE_CHECKING:  # sqlite-utils (and click, pluggy) load only for a schema change
    from sqlite_utils import Database

__all__ = ["BUSY_TIMEOUT_MS", "Migrations", "connect", "enable_wal", "immediate", "opened_here", "prepare"]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
COMPANIONS = ("-wal", "-shm", "-journal")

_connected: set[tuple[int, int]] = set()  # (device, inode) of every file this process connected to
_connected_lock = threading.Lock()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def opened_here(path: Path) -> bool:
    """Whether this process has connected to ``path``: then only SQLite may open it again."""
    identity = _identity(Path(path))
    with _connected_lock:
        return identity is not None and identity in _connected


def prepare(path: Path) -> Path:
    """Make the database file and its journals private (0600) without opening an existing one.

    A missing file is created exclusively (it cannot be one this process holds locks on); an
    existing one is changed by path. SQLite gives new ``-wal``/``-shm`` files the file's mode but
    never changes the mode of ones an older run left readable.
    """
    path = Path(path)
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        _chmod_own(path)
    else:
        try:
            os.fchmod(fd, FILE_MODE)
        finally:
            os.close(fd)
    for suffix in COMPANIONS:
        _chmod_own(path.with_name(path.name + suffix))
    return path


def _chmod_own(path: Path) -> None:
    """0600 by path, for a regular file of ours; a link, a missing file or another user's is left."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        return
    if info.st_mode & 0o777 != FILE_MODE:
        try:
            os.chmod(path, FILE_MODE)
        except PermissionError:  # SQLite will say what is wrong when it opens the file
            pass


def connect(path: Path, *, read_only: bool = False, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection with the settings every store shares: autocommit (writes open ``immediate``
    themselves), a busy timeout, and foreign keys enforced.

    ``read_only`` opens with ``mode=ro``; a WAL file needs its ``-shm``, which a read-only folder may
    not let SQLite make, and then only ``immutable`` (no locking, no WAL) can read the file.
    """
    path = Path(path)
    options: dict[str, Any] = {"timeout": BUSY_TIMEOUT_MS / 1000, "isolation_level": None,
               "check_same_thread": check_same_thread}
    if read_only:
        uri = "file:" + urllib.parse.quote(str(path.resolve()))
        try:
            conn = sqlite3.connect(uri + "?mode=ro", uri=True, **options)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn = sqlite3.connect(uri + "?immutable=1", uri=True, **options)
    else:
        conn = sqlite3.connect(path, **options)
    identity = _identity(path)
    if identity is not None:
        with _connected_lock:
            _connected.add(identity)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front (waiting on busy),
    so read-then-write decisions are atomic across processes; rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (persistent), retrying while another process holds it.

    Changing the journal mode can fail with "database is locked" at once, without waiting for
    the busy timeout, when several processes open a new file together.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


MIGRATIONS_TABLE = "_hermes_migrations"


@dataclass
class Migrations:
    """One store's schema steps by name, in the style of simonw/llm's ``migrations.py``: append
    only, each applied once and in order, the names applied recorded per store in the file's
    ``_hermes_migrations`` table (memory.sqlite3 holds the memory's, the web's and the TUI's
    tables). A step is a function of a sqlite-utils ``Database``; its name is its identity, so a
    step is never renamed, edited or removed once released: a change is a new step at the end.
    """

    store: str
    steps: list[Callable[[Database], None]] = field(default_factory=list)

    def __call__(self, step: Callable[[Database], None]) -> Callable[[Database], None]:
        """Register ``step`` as the next one (a decorator)."""
        self.steps.append(step)
        return step

    def apply(self, conn: sqlite3.Connection, legacy: int = 0) -> list[str]:
        """Run, inside the caller's write transaction, the steps not recorded yet; return their
        names. ``legacy``: how many steps a file made before names were recorded had applied
        (the memory store counted them in ``PRAGMA user_version``)."""
        conn.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (store TEXT NOT NULL, name TEXT NOT NULL,"
                     " applied REAL NOT NULL, PRIMARY KEY (store, name))")
        done = {name for (name,) in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} WHERE store = ?",
                                                 (self.store,))}
        if not done and legacy:
            self._record(conn, [step.__name__ for step in self.steps[:legacy]])
            done = {step.__name__ for step in self.steps[:legacy]}
        pending = [step for step in self.steps if step.__name__ not in done]
        if not pending:
            return []
        from sqlite_utils import Database  # ~30 ms, paid only when a step runs

        db = Database(conn, recursive_triggers=False, execute_plugins=False)
        for step in pending:
            log.info("%s schema: applying %s", self.store, step.__name__)
            step(db)
            self._record(conn, [step.__name__])
        return [step.__name__ for step in pending]

    def _record(self, conn: sqlite3.Connection, names: list[str]) -> None:
        conn.executemany(f"INSERT OR IGNORE INTO {MIGRATIONS_TABLE} (store, name, applied) VALUES (?, ?, ?)",
                         [(self.store, name, time.time()) for name in names])
