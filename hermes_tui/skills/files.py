"""Skill files read and written safely: what a SKILL.md read refuses (outside the folder, special,
oversized, binary, not UTF-8) and how a skill's archived and pending versions are named."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from hermes_tui.skills.schema import SkillError

MAX_FILE_BYTES = 1_000_000
VERSIONS_DIR = "versions"
VERSION_FILE = re.compile(r"v([0-9]{1,9})\.md")
PENDING_FILE = re.compile(r"pending-[0-9T]+-[0-9]+\.md")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def archived_count(folder: Path, depth: int) -> int:
    if not depth:
        return 0
    return sum(1 for e in scandir(folder / VERSIONS_DIR) if VERSION_FILE.fullmatch(e.name))


def read_bytes(path: Path, root: Path) -> bytes:
    """The file's bytes, refusing anything outside ``root``, special, oversized or binary."""
    try:
        real = path.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError) as exc:
        raise SkillError(f"cannot open it ({exc.__class__.__name__}: broken symlink or no permission?)") from None
    if not real.is_relative_to(root.resolve()):
        raise SkillError(f"it resolves to {real}, outside the skills folder")
    if not stat.S_ISREG(info.st_mode):
        raise SkillError("it is not a regular file")
    too_big = SkillError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
    if info.st_size > MAX_FILE_BYTES:
        raise too_big
    try:
        with open(real, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SkillError(f"cannot read it: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise too_big
    if b"\x00" in data:
        raise SkillError("it looks binary (it contains NUL bytes)")
    return data


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError("it is not UTF-8 text") from None


def read_text(path: Path, root: Path) -> str:
    return decode(read_bytes(path, root))
