"""The bytes of attached images, kept under ``HERMES_HOME/attachments/`` and named by their
sha256: the same image attached twice (or in two sessions) is kept once. A message refers to
them by that name (``conversation.ImageRef``, the ``message_images`` table), so a resumed session
sends them again; forgetting a session or a message removes the files no other message refers to.
Files are private (0600 in a 0700 folder): an image can hold anything a screen showed.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from hermes_tui.private import private_dir, write_private

log = logging.getLogger(__name__)

FOLDER = "attachments"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def folder(home: Path) -> Path:
    return home / FOLDER


def path_of(home: Path, sha256: str) -> Path:
    """Where the bytes named ``sha256`` are kept (``ValueError`` for a name that is no sha256)."""
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a sha256: {sha256!r:.80}")
    return folder(home) / sha256


def keep(home: Path, data: bytes) -> str:
    """Store ``data`` (once) and return its sha256."""
    sha256 = hashlib.sha256(data).hexdigest()
    target = path_of(home, sha256)
    if not target.is_file():
        private_dir(target.parent)
        write_private(target, data)
    return sha256


def read(home: Path, sha256: str) -> bytes | None:
    """The kept bytes, or None when they are gone (removed by hand, another machine's database)."""
    try:
        data = path_of(home, sha256).read_bytes()
    except (OSError, ValueError):
        return None
    return data if hashlib.sha256(data).hexdigest() == sha256 else None


def shas_of(conn: sqlite3.Connection, where: str, args: tuple[object, ...]) -> set[str]:
    """The images referred to by the messages ``where`` selects (run before they are deleted)."""
    rows = conn.execute(f"SELECT DISTINCT sha256 FROM message_images WHERE message_id IN "
                        f"(SELECT id FROM messages WHERE {where})", args).fetchall()
    return {row[0] for row in rows}


def remove_unused(conn: sqlite3.Connection, home: Path, shas: Iterable[str]) -> int:
    """Remove the files of ``shas`` that no message refers to any more; how many went."""
    removed = 0
    for sha256 in shas:
        if conn.execute("SELECT 1 FROM message_images WHERE sha256 = ? LIMIT 1", (sha256,)).fetchone():
            continue  # another session attached the same image
        try:
            path_of(home, sha256).unlink(missing_ok=True)
            removed += 1
        except (OSError, ValueError) as exc:
            log.warning("could not remove the attachment %s: %s", sha256, exc)
    return removed
