"""The workspace files a server entry runs, hashed, so an approval covers what runs, not only
what the entry says.

An approved ``.mcp.json`` entry such as ``python tools/server.py`` stays the same text while a
sandboxed command rewrites ``tools/server.py``: bound to the entry alone, the approval would then
run code nobody approved at the next start. The digest covers, for each word of the command line
that names something inside the workspace: a file's whole folder (its imports usually sit beside
it; the file alone when it lies at the workspace's top), a folder's tree, ``-m NAME``'s module or
package, and ``npx``'s package under ``node_modules``. ``.git`` is never walked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

MAX_FILES = 5000
MAX_BYTES = 64 << 20


class TooLarge(ValueError):
    """The code to hash is over the caps: such an entry cannot be approved."""


def _inside(workspace: Path, word: str) -> Path | None:
    if not word or word.startswith("-"):
        return None
    candidate = Path(word) if os.path.isabs(word) else workspace / word
    try:
        found = candidate.resolve()
        root = workspace.resolve()
    except (OSError, RuntimeError):
        return None
    if found == root or not found.is_relative_to(root) or not found.exists():
        return None
    return found


def _module(workspace: Path, name: str) -> Path | None:
    top = name.split(".")[0]
    for candidate in (workspace / top, workspace / f"{top}.py"):
        if candidate.exists():
            return candidate.resolve()
    return None


def _package(word: str) -> str:
    """``@scope/name@1.2`` -> ``@scope/name``; ``name@1.2`` -> ``name``."""
    if word.startswith("@"):
        return "@" + word[1:].split("@", 1)[0]
    return word.split("@", 1)[0]


def roots(workspace: Path, command: str, args: Sequence[str]) -> list[Path]:
    """The files and folders of the workspace that this command line runs from."""
    words = [command, *args]
    runner = Path(command).name in ("npx", "pnpx", "bunx")
    found: list[Path] = []
    for index, word in enumerate(words):
        if index and words[index - 1] == "-m":
            module = _module(workspace, word)
            if module is not None:
                found.append(module)
            continue
        if runner and index and not word.startswith("-"):
            package = workspace / "node_modules" / _package(word)
            if package.exists():
                found.append(package.resolve())
        path = _inside(workspace, word)
        if path is None:
            continue
        if path.is_file() and path.parent != workspace.resolve():
            path = path.parent
        found.append(path)
    return sorted(set(found))


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            yield Path(folder) / name


def digest(workspace: Path, command: str, args: Sequence[str]) -> str:
    """A hash of every file the command line runs from the workspace ('' when it runs none of its
    files). Raises ``TooLarge`` past ``MAX_FILES`` files or ``MAX_BYTES`` bytes."""
    hashed = hashlib.sha256()
    count = size = 0
    base = workspace.resolve()
    for root in roots(workspace, command, args):
        for path in _files(root):
            count += 1
            try:
                data = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
            except OSError:
                data = b"\0unreadable"
            size += len(data)
            if count > MAX_FILES or size > MAX_BYTES:
                raise TooLarge(f"it runs more than {MAX_FILES:,} files or {MAX_BYTES >> 20} MB from the workspace")
            hashed.update(str(path.relative_to(base) if path.is_relative_to(base) else path).encode() + b"\0")
            hashed.update(hashlib.sha256(data).digest())
    return hashed.hexdigest() if count else ""
