"""Files and folders only their owner can read: everything Hermes creates holds private text.

Modes are set explicitly (``chmod`` after creating), so neither the umask nor a folder that already
existed decides them. Folders that already existed keep their mode: they may be the user's own.
``write_private`` is the one way Hermes replaces a file it owns.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents as 0700; an existing folder is left as it is."""
    missing: list[Path] = []
    current = Path(path)
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:  # another process made it first; it was made the same way
            continue
        os.chmod(folder, FOLDER_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` if missing (and its folder), and make it 0600 in either case: it is Hermes' own."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def write_private(target: Path, data: bytes | str) -> Path:
    """Replace ``target`` with ``data`` (str as UTF-8), 0600: readers see the old file or the new
    one, never a torn one, even after a crash or with a full disk.

    The temporary file has a fresh name (two writers never share one), is left behind by no
    failure, and replaces ``target`` itself: a symlink there is replaced, never written through.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(target)
    private_dir(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a crash
    finally:
        os.close(folder)
    return target
