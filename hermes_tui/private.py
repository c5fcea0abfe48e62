"""Files and folders only their owner can read: everything Hermes creates holds private text.

Modes are set explicitly (``chmod`` after creating), so neither the umask nor a folder that already
existed decides them. Folders that already existed keep their mode: they may be the user's own.
"""

from __future__ import annotations

import os
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
