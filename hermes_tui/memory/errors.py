"""StoreError: a storage problem as one line naming the file, what is wrong and what to do.

SQLite reports damage, a full disk or a read-only file with terse codes, at whichever query
first touches the problem; every entry point (TUI, headless, web, doctor) prints this line
instead of a traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_tui.db import opened_here

DOCTOR = "run `hermes-tui doctor` to check it and rebuild it from every readable row"

_KINDS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("not a database", "malformed", "encrypted"), "the file is damaged", DOCTOR),
    (("disk is full", "database or disk is full"), "the disk is full",
     "free some space on that drive; everything stored so far is kept"),
    (("readonly", "read-only"), "the file is read-only",
     "make the file and its folder writable to save new messages"),
    (("unable to open",), "the file cannot be opened",
     "check that its folder exists and is writable"),
    (("disk i/o error",), "the disk reported an I/O error", "check the drive, then " + DOCTOR),
)


class StoreError(sqlite3.DatabaseError):
    """One readable line (see module); a ``sqlite3.DatabaseError``, so existing handlers hold."""

    def __init__(self, path: Path | str, problem: str, advice: str) -> None:
        super().__init__(f"memory database {path}: {problem}; {advice}")
        self.path = Path(path)
        self.problem = problem


def describe(path: Path | str, exc: sqlite3.Error) -> StoreError | None:
    """The StoreError for a storage-level SQLite error; None for anything else (a lock, a
    constraint, a bug), which keeps its own type."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc).lower()
    for needles, problem, advice in _KINDS:
        if any(needle in text for needle in needles):
            return StoreError(path, f"{problem} ({exc})", advice)
    return None


def check_header(path: Path) -> None:
    """Refuse a file that is not SQLite, or shorter than its header says (truncated), before
    any query trips over it. A WAL may legitimately hold pages past the file's end."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return  # SQLite treats an empty file as a new database
    if opened_here(path):
        return  # already read by SQLite; opening it again would drop this process's locks (db.py)
    with path.open("rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise StoreError(path, "the file is damaged (it is not an SQLite database)", DOCTOR)
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counted = header[24:28] == header[92:96]  # the page count is valid only when these agree
    wal = Path(f"{path}-wal")
    has_wal = wal.exists() and wal.stat().st_size > 0
    if counted and not has_wal and size < pages * page_size:
        raise StoreError(
            path, f"the file is truncated ({size:,} of {pages * page_size:,} bytes)", DOCTOR
        )
