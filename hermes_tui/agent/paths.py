"""Which paths the file tools may touch, and how they open them so a symlink swap cannot redirect them.

* ``check_not_secret(path, home=...)``: the one list of files whose content is a secret (HERMES_HOME,
  the log folder, ``.env`` files, credential files). Every tool that reads or writes files asks it.
* ``open_in_workspace(...)``: resolves a path once (following symlinks, dangling ones too), refuses it
  if it leaves the workspace or is a secret, then opens the *resolved* path one component at a time
  from the workspace's directory descriptor with ``O_NOFOLLOW``. A symlink that appears after the
  check (a concurrent swap) makes the open fail instead of leaving the workspace.
* ``replace_file(...)``: every write: opened as above, written to a temp file in the same folder and
  renamed over the old one (all or nothing; mode and owner kept).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import lru_cache
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes_tui.logs import log_folder


class PathError(ValueError):
    """A path the tools refuse; the message tells the model what is allowed."""


@dataclass(frozen=True)
class SecretRule:
    """A path component that marks credentials. ``name`` is a regex matched (case-insensitively) in full.

    ``parent``: the component must sit directly in a folder of that name. ``folder``: a folder of
    that name is refused together with everything below it.
    """

    name: str
    why: str
    parent: str | None = None
    folder: bool = False


SECRET_RULES: tuple[SecretRule, ...] = (
    SecretRule(r"\.env", "it is an environment file, which holds settings and API keys"),
    SecretRule(r"\.env\..*", "it is an environment file, which may hold settings and API keys"),
    SecretRule(r"[._]netrc", "it holds login passwords"),
    SecretRule(r"\.git-credentials", "it holds git passwords and tokens"),
    SecretRule(r"\.(pgpass|npmrc|pypirc|htpasswd)", "it holds passwords or tokens"),
    SecretRule(r"id_[a-z0-9_]+", "it is an SSH private key"),
    SecretRule(r".+\.(pem|key|p12|pfx|jks|keystore|kdbx)", "it is a private key or a key store"),
    SecretRule(r"credentials", "it holds cloud credentials", parent=r"\.aws"),
    SecretRule(r"config\.json", "it holds registry credentials", parent=r"\.docker"),
    SecretRule(r"config", "it holds cluster credentials", parent=r"\.kube"),
    SecretRule(r"hosts\.yml", "it holds GitHub tokens", parent=r"gh"),
    SecretRule(r"\.ssh", "it holds SSH keys", folder=True),
    SecretRule(r"\.gnupg", "it holds private keys", folder=True),
)
_RULES = [(re.compile(r.name, re.IGNORECASE), re.compile(r.parent, re.IGNORECASE) if r.parent else None, r)
          for r in SECRET_RULES]


def _rule_for(parts: tuple[str, ...]) -> SecretRule | None:
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        for name, parent, rule in _RULES:
            if not (rule.folder or last) or not name.fullmatch(part):
                continue
            if parent is None or (index > 0 and parent.fullmatch(parts[index - 1])):
                return rule
    return None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def protected_folders(home: Path | None) -> tuple[Path, ...]:
    """Folders the tools never touch: HERMES_HOME (settings, keys, memory) and the log folder."""
    return tuple(p for p in (home, log_folder()) if p is not None)


def check_not_secret(path: str | os.PathLike[str], *, home: Path | None = None,
                     shown: str | None = None) -> str | None:
    """Why ``path`` must not be read or written by a tool (one line), or None when it may be.

    Both the path as given and its real path (symlinks followed) are checked, so a link to a secret
    is refused too. ``home`` is HERMES_HOME; ``shown`` is how the path is named in the message.
    """
    text = os.fspath(path)
    label = repr(shown if shown is not None else text)
    real = os.path.realpath(text)
    for folder in protected_folders(home):
        if _within(real, os.path.realpath(folder)):
            return f"{label} is refused: it is inside Hermes' own folder {folder}, which holds its settings and keys."
    for candidate in (Path(os.path.abspath(text)), Path(real)):
        rule = _rule_for(candidate.parts)
        if rule is not None:
            return f"{label} is refused: {rule.why}. Secrets are never shown to the model."
    return None


def resolve_in_workspace(workspace: Path, raw: object, *, home: Path | None = None) -> Path:
    """The real absolute path for ``raw``; ``PathError`` if it leaves ``workspace`` or is a secret."""
    if not isinstance(raw, str):
        raise PathError("path must be a string relative to the workspace")
    if "\x00" in raw:
        raise PathError("path contains a NUL byte")
    text = raw.strip() or "."
    if text.startswith("~"):
        raise PathError(f"{raw!r}: '~' is not expanded; use a path relative to the workspace")
    root = os.path.realpath(workspace)
    candidate = text if os.path.isabs(text) else os.path.join(root, text)
    try:
        real = os.path.realpath(candidate)
    except (OSError, ValueError) as exc:
        raise PathError(f"{raw!r}: {exc}") from exc
    if not _within(real, root):
        raise PathError(f"{raw!r} is outside the workspace; only paths inside {root} are allowed")
    reason = check_not_secret(candidate, home=home, shown=raw)
    if reason:
        raise PathError(reason)
    return Path(real)


Purpose = Literal["read", "list", "write"]
_BASE = os.O_CLOEXEC | os.O_NOFOLLOW
_DIR = os.O_RDONLY | os.O_DIRECTORY | _BASE
_FLAGS: dict[str, int] = {
    # O_NONBLOCK: opening a FIFO must not hang before fstat can refuse it.
    "read": os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _BASE,
    "list": _DIR,
    "write": os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | _BASE,
}


@contextmanager
def open_in_workspace(workspace: Path, raw: object, purpose: Purpose, *,
                      home: Path | None = None) -> Iterator[tuple[int, Path]]:
    """Yield ``(descriptor, real path)`` for ``raw`` inside the workspace; the descriptor is closed after.

    ``read`` and ``write`` give a regular file (``write`` creates it and its folders, never truncates:
    the caller does once it holds the descriptor); ``list`` gives a folder. Anything else, a path that
    changed while being opened, a FIFO or a device, raises ``PathError``.
    """
    real = resolve_in_workspace(workspace, raw, home=home)
    root = os.path.realpath(workspace)
    parts = Path(os.path.relpath(real, root)).parts if real != Path(root) else ()
    if purpose != "list" and not parts:
        raise PathError(f"{raw!r} is the workspace folder itself, not a file")
    fd = _open_parts(root, parts, raw, purpose)
    try:
        mode = os.fstat(fd).st_mode
        if purpose == "list" and not stat.S_ISDIR(mode):
            raise PathError(f"{raw!r} is not a folder")
        if purpose != "list" and stat.S_ISDIR(mode):
            raise PathError(f"{raw!r} is a folder" + ("; use list_dir" if purpose == "read" else ""))
        if purpose != "list" and not stat.S_ISREG(mode):
            raise PathError(f"{raw!r} is not a regular file (a FIFO, socket or device); it is refused")
        yield fd, real
    finally:
        os.close(fd)


def _open_parts(root: str, parts: tuple[str, ...], raw: object, purpose: Purpose) -> int:
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, part in enumerate(parts):
            flags = _FLAGS[purpose] if index == len(parts) - 1 else _DIR
            opened = _open_one(current, part, flags, creating=purpose == "write", raw=raw)
            os.close(current)
            current = opened
    except BaseException:
        os.close(current)
        raise
    return current


def _open_one(dir_fd: int, part: str, flags: int, *, creating: bool, raw: object) -> int:
    try:
        try:
            return os.open(part, flags, 0o666, dir_fd=dir_fd)
        except FileNotFoundError:
            if not (creating and flags & os.O_DIRECTORY):
                raise
            os.mkdir(part, 0o777, dir_fd=dir_fd)
            return os.open(part, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise PathError(f"{raw!r} does not exist") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise PathError(f"{raw!r} changed while it was being opened (a symlink appeared); refused") from None
        if exc.errno == errno.ENXIO:
            raise PathError(f"{raw!r} is a FIFO or device; it is refused") from None
        raise PathError(f"{raw!r}: {exc.strerror}") from None


def display_path(workspace: Path, path: Path) -> str:
    """The path as the model should see it: relative to the workspace."""
    rel = os.path.relpath(path, os.path.realpath(workspace))
    return "." if rel == "." else rel


def replace_file(workspace: Path, raw: object, data: bytes, *, home: Path | None = None,
                 cancel: Callable[[], bool] | None = None) -> Path:
    """Write ``data`` to ``raw`` through a temp file in the same folder, renamed over the old file.

    A reader never sees half a file; a failed or cancelled write leaves the old one as it was (a
    file this call created is removed again); a hard link to the old file keeps the old content.
    The target is opened like every write (``open_in_workspace``), so every refusal applies; the
    new file keeps the old one's mode and owner. ``cancel()`` is asked between chunks. Returns the
    real path written; raises ``PathError`` (or ``WriteCancelled``).
    """
    root = os.path.realpath(workspace)
    existed = os.path.lexists(resolve_in_workspace(workspace, raw, home=home))
    with open_in_workspace(workspace, raw, "write", home=home) as (fd, real):
        target = os.fstat(fd)
        parts = Path(os.path.relpath(real, root)).parts
        folder = _open_parts(root, parts[:-1], raw, "list")
        try:
            name = parts[-1]
            here = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if (here.st_dev, here.st_ino) != (target.st_dev, target.st_ino):
                raise PathError(f"{raw!r} changed while it was being opened; refused")
            _write_and_rename(folder, name, data, target, cancel, created=not existed)
        finally:
            os.close(folder)
    return real


class WriteCancelled(Exception):
    """The user stopped a ``replace_file`` midway; nothing was changed."""


def _write_and_rename(folder: int, name: str, data: bytes, target: os.stat_result,
                      cancel: Callable[[], bool] | None, *, created: bool) -> None:
    temp = f".{name}.hermes-{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BASE, 0o600, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                if cancel is not None and cancel():
                    raise WriteCancelled
                view = view[os.write(fd, view[:1 << 20]):]
            if (target.st_uid, target.st_gid) != (os.geteuid(), os.getegid()):
                with suppress(OSError):  # only root may give a file away; others keep their own
                    os.fchown(fd, target.st_uid, target.st_gid)
            os.fchmod(fd, stat.S_IMODE(target.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        if created:
            with suppress(OSError):
                os.unlink(name, dir_fd=folder)
        raise


_ANY_SECRET_NAME = re.compile("|".join(f"(?:{rule.name})" for rule in SECRET_RULES), re.IGNORECASE)


def secret_filter(home: Path | None = None) -> Callable[[str], bool]:
    """``check_not_secret(path) is not None`` for the many real paths of one search (a walk that
    follows no link): the protected folders are resolved once, each folder is judged once, and a
    file name no rule could match costs one regex. The same rules as ``check_not_secret``."""
    folders = tuple(os.path.realpath(folder) for folder in protected_folders(home))

    @lru_cache(maxsize=16_384)
    def folder_refused(folder: str) -> bool:
        # A last part "" matches no name rule, so only folder rules judge the real parts.
        return any(_within(folder, f) for f in folders) or _rule_for((*Path(folder).parts, "")) is not None

    def refused(path: str) -> bool:
        folder, name = os.path.split(path)
        if folder_refused(folder):
            return True
        return bool(_ANY_SECRET_NAME.fullmatch(name)) and _rule_for((os.path.basename(folder), name)) is not None

    return refused
