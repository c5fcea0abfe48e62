"""Which paths the file tools may touch, and how they open them so a symlink swap cannot redirect them.

* ``check_not_secret(path, home=...)``: the one list of files whose content is a secret (HERMES_HOME,
  the log folder, ``.env`` files, credential files). Every tool that reads or writes files asks it.
* ``write_refusal(...)``: the one list of files the agent must not write because something runs or
  trusts them later (git's config and hooks, Python's start-up files, venvs, direnv, Hermes' own
  code, hard-linked files). Every tool that writes files goes through ``open_in_workspace(...,
  "write")``, which asks it.
* ``open_in_workspace(...)``: resolves a path once (following symlinks, dangling ones too), refuses it
  if it leaves the workspace or is a secret, then opens the *resolved* path one component at a time
  from the workspace's directory descriptor with ``O_NOFOLLOW``. A symlink that appears after the
  check (a concurrent swap) makes the open fail instead of leaving the workspace. A write goes to a
  new file in the same folder that is renamed over the target when the block ends, so no write
  ever lands in a file through another of its names (a hard link) and a cancelled write changes nothing.
* ``replace_file(...)``: every write tool's way in: ``open_in_workspace(..., "write")`` with the
  bytes written and a cancel checked between chunks (all or nothing; the mode kept).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, lru_cache
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
    # Git's own store: its config can hold tokens in remote URLs, and git runs what its config and
    # hooks say. The model reads a repository through git commands, never the store's files.
    SecretRule(r"\.git", "it is inside .git, git's own store (its config can hold tokens in remote URLs); "
                          "use git commands instead", folder=True),
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


def secret_name(parts: tuple[str, ...]) -> str | None:
    """Why a path made of these components names a secret file (by name alone), or None.

    For callers that already know the path is no symlink and stays inside the workspace (the
    checkpoint snapshots), and so can skip ``check_not_secret``'s real-path resolution.
    """
    rule = _rule_for(parts)
    return rule.why if rule is not None else None


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


def real_target(workspace: Path, raw: str) -> str | None:
    """The path ``raw`` names once symlinks are followed, relative to the workspace (what a
    write to ``raw`` replaces), or None when it leaves the workspace or cannot be resolved."""
    try:
        return display_path(workspace, resolve_in_workspace(workspace, raw))
    except PathError:
        return None


_STARTUP_NAMES = frozenset({"sitecustomize", "usercustomize"})  # imported by every Python start, as files or packages
_METADATA = (".pth", ".egg-info", ".dist-info")  # .pth lines run at start; entry points load plugins


@cache
def _install_tree() -> str:
    """Hermes' own package folder: what it imports at its next start."""
    return os.path.realpath(Path(__file__).resolve().parents[1])


def _is_git_dir(folder: str) -> bool:
    """A git directory (``.git``, a bare repository, a submodule's store): git runs its hooks and config."""
    return (os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isdir(os.path.join(folder, "objects"))
            and os.path.isdir(os.path.join(folder, "refs")))


def write_refusal(workspace: Path, real: Path, *, shown: object = None) -> str | None:
    """Why the agent must not write ``real`` (one line), or None when it may.

    These are files something runs or trusts later, without asking anyone: git runs ``.git/config``
    (``core.fsmonitor``) and hooks on ``git status``; Python runs ``*.pth``, ``sitecustomize`` and
    ``usercustomize`` at every start and imports what a venv holds; direnv runs ``.envrc`` on ``cd``;
    Hermes imports its own package. A file with several hard links is shared with another path,
    maybe outside the workspace. ``real`` is the resolved path (``resolve_in_workspace``).
    """
    label = repr(shown if shown is not None else os.fspath(real))
    root = os.path.realpath(workspace)
    parts = Path(os.path.relpath(real, root)).parts if _within(os.fspath(real), root) else Path(real).parts
    lowered = [part.casefold() for part in parts]
    name = lowered[-1] if lowered else ""
    if ".git" in lowered:
        return f"{label} is refused: it is inside .git, and git runs what its config and hooks say."
    if name.endswith(_METADATA[0]) or any(part.endswith(_METADATA[1:]) for part in lowered):
        return f"{label} is refused: Python runs .pth files and loads package metadata's entry points at start."
    if any(part.split(".", 1)[0] in _STARTUP_NAMES for part in lowered):
        return f"{label} is refused: Python runs sitecustomize and usercustomize at every start."
    if name == ".envrc":
        return f"{label} is refused: direnv runs .envrc when a shell enters the folder."
    if name == "pyvenv.cfg":
        return f"{label} is refused: it makes a folder a Python virtual environment."
    if _within(os.fspath(real), _install_tree()):
        return f"{label} is refused: it is part of Hermes' own code, which runs at its next start."
    folder = os.path.dirname(os.fspath(real))
    while _within(folder, root) or folder == root:
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return f"{label} is refused: it is inside a Python virtual environment, whose code runs later."
        if _is_git_dir(folder):
            return f"{label} is refused: it is inside a git directory, and git runs what its config and hooks say."
        if folder == root:
            break
        folder = os.path.dirname(folder)
    try:
        links = os.lstat(real).st_nlink
    except OSError:
        links = 1  # a new file
    if links > 1:
        return (f"{label} is refused: it has {links} hard links, so writing it could change a file outside "
                "the workspace.")
    return None


Purpose = Literal["read", "list", "write"]
_BASE = os.O_CLOEXEC | os.O_NOFOLLOW
_DIR = os.O_RDONLY | os.O_DIRECTORY | _BASE
_FLAGS: dict[str, int] = {
    # O_NONBLOCK: opening a FIFO must not hang before fstat can refuse it.
    "read": os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _BASE,
    "list": _DIR,
}
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BASE


@contextmanager
def open_in_workspace(workspace: Path, raw: object, purpose: Purpose, *,
                      home: Path | None = None) -> Iterator[tuple[int, Path]]:
    """Yield ``(descriptor, real path)`` for ``raw`` inside the workspace; the descriptor is closed after.

    ``read`` gives a regular file with a single link; ``list`` gives a folder. ``write`` gives a new,
    empty file in the target's folder (created with its parents), refused by ``write_refusal``
    first; when the block ends without an exception it replaces the target, otherwise it is
    removed and the target stays as it was. Anything else, a path that changed while being opened,
    a FIFO or a device, raises ``PathError``.
    """
    real = resolve_in_workspace(workspace, raw, home=home)
    root = os.path.realpath(workspace)
    parts = Path(os.path.relpath(real, root)).parts if real != Path(root) else ()
    if purpose != "list" and not parts:
        raise PathError(f"{raw!r} is the workspace folder itself, not a file")
    if purpose == "write":
        refused = write_refusal(workspace, real, shown=raw)
        if refused:
            raise PathError(refused)
        with _replacing(root, parts, raw) as fd:
            yield fd, real
        return
    fd = _open_parts(root, parts, raw, purpose)
    try:
        mode = os.fstat(fd).st_mode
        if purpose == "list" and not stat.S_ISDIR(mode):
            raise PathError(f"{raw!r} is not a folder")
        if purpose != "list" and stat.S_ISDIR(mode):
            raise PathError(f"{raw!r} is a folder" + ("; use list_dir" if purpose == "read" else ""))
        if purpose != "list" and not stat.S_ISREG(mode):
            raise PathError(f"{raw!r} is not a regular file (a FIFO, socket or device); it is refused")
        links = os.fstat(fd).st_nlink
        if purpose == "read" and links > 1:
            raise PathError(f"{raw!r} is refused: it has {links} hard links, so it may be a file from outside "
                            "the workspace (a copy made with cp can be read).")
        yield fd, real
    finally:
        os.close(fd)


@contextmanager
def _replacing(root: str, parts: tuple[str, ...], raw: object) -> Iterator[int]:
    """A new file next to ``parts[-1]``, renamed over it when the block succeeds (removed when not)."""
    folder = _open_parts(root, parts[:-1], raw, "write")
    name = parts[-1]
    try:
        mode = 0o666
        try:
            existing = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if stat.S_ISLNK(existing.st_mode):
                raise PathError(f"{raw!r} changed while it was being opened (a symlink appeared); refused")
            if stat.S_ISDIR(existing.st_mode):
                raise PathError(f"{raw!r} is a folder")
            if not stat.S_ISREG(existing.st_mode):
                raise PathError(f"{raw!r} is not a regular file (a FIFO, socket or device); it is refused")
            mode = stat.S_IMODE(existing.st_mode)
        temp = f".{name[:200]}.hermes-{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, _NEW_FILE, mode, dir_fd=folder)  # a new file's mode: 0o666 less the umask
        try:
            try:
                yield fd
                if existing is not None:
                    os.fchmod(fd, mode)  # a replaced file keeps its mode (an executable stays one)
                os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                os.unlink(temp, dir_fd=folder)
                raise
        finally:
            os.close(fd)
    finally:
        os.close(folder)


def _open_parts(root: str, parts: tuple[str, ...], raw: object, purpose: Purpose) -> int:
    """Open ``parts`` below ``root`` without following links; for ``write`` every part is a folder
    (created when missing)."""
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, part in enumerate(parts):
            flags = _FLAGS[purpose] if index == len(parts) - 1 and purpose != "write" else _DIR
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
    """Write ``data`` to ``raw``: through ``open_in_workspace(..., "write")``, so every refusal
    applies and the new content replaces the old file only once it is complete (a reader never sees
    half a file; a hard link to the old file keeps the old content). ``cancel()`` is asked between
    chunks; a cancelled write changes nothing. Returns the real path; raises ``PathError`` or
    ``WriteCancelled``."""
    with open_in_workspace(workspace, raw, "write", home=home) as (fd, real):
        view = memoryview(data)
        while view:
            if cancel is not None and cancel():
                raise WriteCancelled
            view = view[os.write(fd, view[:1 << 20]):]
    return real


class WriteCancelled(Exception):
    """The user stopped a ``replace_file`` midway; nothing was changed."""


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
