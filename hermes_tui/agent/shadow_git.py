"""A git repository of Hermes' own that snapshots a workspace's files; the user's ``.git`` is never read or written.

The repository lives under HERMES_HOME (``git --git-dir=<shadow> --work-tree=<workspace>``). Every git
process gets an environment that ignores the system and global configuration and any ``GIT_*``
variable of the caller; the shadow's own configuration turns hooks, fsmonitor, filters and line-ending
conversion off, so nothing in the workspace (``.gitattributes``, hooks, a hostile config) can run a
command or change bytes. The workspace's ``.gitignore`` files are honoured. Files over
``MAX_FILE_BYTES`` and secrets (``paths``' rules) are left out, and so is every ``.git``, nested
repositories' included (their files are snapshotted like any other).

Speed: a snapshot asks git for what changed since the last one (``ls-files -m -o``, which compares
the index's stat data) and stages only those paths (``update-index --stdin``), so an unchanged tree
costs one git process.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_FILE_BYTES = 10 * 1024 * 1024
GIT_TIMEOUT = 120.0  # seconds; the first snapshot of a big tree hashes every file
IDENTITY = "Hermes checkpoints"
# Rebuildable folders nobody wants restored, also where a project has no .gitignore.
DEFAULT_EXCLUDES = ("node_modules/", ".venv/", "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".tox/")
_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.excludesFile": os.devnull,  # the workspace's .gitignore files only, the same for everyone
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.symlinks": "true",
    "core.quotePath": "false",
    "gc.auto": "0",  # no background gc pausing a turn
    "commit.gpgSign": "false",
    "index.version": "4",
}
# Highest-precedence attributes: bytes in, the same bytes out (no eol, filters or encodings).
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"

Status = Literal["added", "modified", "deleted"]
_STATUS: dict[str, Status] = {"A": "added", "M": "modified", "T": "modified", "D": "deleted"}


class ShadowError(RuntimeError):
    """A git command of the shadow repository failed; the message is one readable line."""


@dataclass(frozen=True)
class Change:
    """One file a turn added, modified or deleted, as the shadow repository saw it."""

    path: str  # relative to the workspace, with "/" separators
    status: Status


def find_git() -> str | None:
    return shutil.which("git")


class ShadowRepo:
    """Snapshots of one workspace as commits chained on ``refs/hermes/head``.

    ``skip(relative_path, is_link)`` says why a path must stay out (a secret), or None. The caller
    serializes calls (one index): see ``CheckpointStore``'s lock.
    """

    HEAD = "refs/hermes/head"

    def __init__(self, git_dir: Path, workspace: Path, git: str, *,
                 skip: Callable[[str, bool], str | None] | None = None, excluded: Sequence[str] = ()) -> None:
        self.git_dir = Path(os.path.abspath(git_dir))
        self.workspace = Path(os.path.realpath(workspace))
        self.git = git
        self._skip = skip or (lambda _path, _link: None)
        self._excluded = tuple(excluded)  # extra anchored ignore lines (HERMES_HOME inside the workspace...)
        self._env = _clean_environment(self.git_dir, self.workspace)

    # -- plumbing

    def _run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        try:
            done = subprocess.run([self.git, "-c", "safe.directory=*", *args], input=stdin, env=self._env,
                                  capture_output=True, timeout=GIT_TIMEOUT, cwd=self.workspace)
        except subprocess.TimeoutExpired:
            raise ShadowError(f"git {args[0]} took longer than {GIT_TIMEOUT:.0f} s") from None
        except OSError as exc:
            raise ShadowError(f"git could not run: {exc.strerror or exc}") from None
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]} failed: {message[-1] if message else f'exit {done.returncode}'}")
        return done.stdout

    def _ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._run("init", "-q")
        with open(self.git_dir / "config", "a", encoding="utf-8") as config:  # one write, not a git per key
            for key, value in _CONFIG.items():
                section, name = key.split(".")
                config.write(f"[{section}]\n\t{name} = {value}\n")
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES)
        (info / "exclude").write_text("\n".join(["# Hermes checkpoints", *DEFAULT_EXCLUDES, *self._excluded]) + "\n")

    def head(self) -> str | None:
        loose = self.git_dir / self.HEAD
        try:
            return loose.read_text().strip() or None
        except FileNotFoundError:
            out = self._run("rev-parse", "-q", "--verify", f"{self.HEAD}^{{commit}}", check=False)
            return out.decode().strip() or None

    # -- snapshots

    def snapshot(self, message: str) -> str:
        """The commit of the workspace as it is now (the last one when nothing changed)."""
        self._ensure()
        head = self.head()
        listed = self._run("ls-files", "-z", "-t", "-m", "-o", "--exclude-standard").split(b"\0")
        stage: list[str] = []
        unstage: list[str] = []
        links: dict[str, bool] = {}
        for entry in filter(None, listed):
            tag, path = entry[:1], os.fsdecode(entry[2:])
            if self._beyond_link(path, links):
                # A folder became a link (``mv src x; ln -s y src``): what git had under it is gone
                # from the tree as it is now, and the link itself is listed on its own.
                if tag != b"?":
                    unstage.append(path)
            elif self._keep(path):
                stage.append(path)
            elif tag != b"?":  # tracked before, now too big or a secret: out of the snapshot
                unstage.append(path)
        if head is not None and not stage and not unstage:
            return head
        try:
            return self._commit(head, stage, unstage, message)
        except ShadowError:
            if head is not None:  # the index must match the last snapshot, or changes would go unseen
                self._run("read-tree", head, check=False)
            raise

    def _commit(self, head: str | None, stage: list[str], unstage: list[str], message: str) -> str:
        # update-index takes the paths as they are (no pathspec matching) and, with --remove, records a
        # vanished file as deleted; --replace lets a file become a folder or the other way round.
        if unstage:
            self._run("update-index", "--force-remove", "-z", "--stdin", stdin=_nul(unstage))
        if stage:
            self._run("update-index", "--add", "--remove", "--replace", "-z", "--stdin", stdin=_nul(stage))
        tree = self._run("write-tree").decode().strip()
        if head is not None and self._run("rev-parse", f"{head}^{{tree}}").decode().strip() == tree:
            return head
        parents = ("-p", head) if head else ()
        commit = self._run("commit-tree", tree, *parents, "-m", message).decode().strip()
        self._run("update-ref", self.HEAD, commit, *((head,) if head else ()))
        return commit

    def _beyond_link(self, path: str, seen: dict[str, bool]) -> bool:
        """A leading folder of ``path`` is a symbolic link now (git cannot stage such a path)."""
        parts = path.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            prefix = "/".join(parts[:end])
            if prefix not in seen:
                seen[prefix] = os.path.islink(self.workspace / prefix)
            if seen[prefix]:
                return True
        return False

    def ignored_by(self, commit: str, paths: Sequence[str]) -> set[str]:
        """Which ``paths`` the ignore rules of ``commit`` (its ``.gitignore`` files and the shadow's
        own excludes) leave out: such a file may have existed then without being in the snapshot.
        The rules are laid out in a temporary folder; the workspace is not read."""
        if not paths:
            return set()
        names = self._run("ls-tree", "-r", "-z", "--name-only", commit).split(b"\0")
        rules = [os.fsdecode(n) for n in names if n and os.path.basename(os.fsdecode(n)) == ".gitignore"]
        with tempfile.TemporaryDirectory(prefix="hermes-ignore-") as folder:
            for rule in rules:
                target = Path(folder, rule)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(self._run("cat-file", "blob", f"{commit}:{rule}"))
            env = {**self._env, "GIT_WORK_TREE": folder}
            env.pop("GIT_LITERAL_PATHSPECS")  # check-ignore takes paths, and refuses the pathspec magic
            done = subprocess.run([self.git, "-c", "safe.directory=*", "check-ignore", "--no-index", "-z", "--stdin"],
                                  input=_nul(paths), env=env, capture_output=True, timeout=GIT_TIMEOUT, cwd=folder,
                                  check=False)
        if done.returncode not in (0, 1):  # 1: none ignored
            raise ShadowError(f"git check-ignore failed: {done.stderr.decode('utf-8', 'replace').strip()}")
        return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}

    def _keep(self, path: str) -> bool:
        """Whether a changed path belongs in the snapshot (a vanished one does: it is a deletion)."""
        try:
            info = os.lstat(self.workspace / path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISLNK(info.st_mode) and (not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES):
            return False  # too big, or a FIFO, socket or device
        return self._skip(path, stat.S_ISLNK(info.st_mode)) is None

    # -- reading snapshots

    def changes(self, old: str, new: str, paths: Iterable[str] | None = None) -> list[Change]:
        """What turns ``old`` into ``new`` (optionally only among ``paths``)."""
        if old == new:
            return []
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        fields = out.split(b"\0")
        wanted = None if paths is None else set(paths)
        found = []
        for status, raw in zip(fields[0::2], fields[1::2], strict=False):
            path = os.fsdecode(raw)
            if status and (wanted is None or path in wanted):
                found.append(Change(path, _STATUS.get(status.decode()[:1], "modified")))
        return found

    # -- restoring

    def restore(self, commit: str, paths: Sequence[str], delete: Sequence[str]) -> list[str]:
        """Delete ``delete`` from the workspace, then write ``paths`` as they are in ``commit``.

        A path to write that is a folder holding other files now is left alone (git would remove the
        folder with everything in it); those paths are returned.
        """
        for path in delete:
            target = self.workspace / path
            try:
                if target.is_symlink() or target.is_file():
                    target.unlink()
            except FileNotFoundError:
                continue
            _remove_empty_parents(target.parent, self.workspace)
        blocked = [p for p in paths if (self.workspace / p).is_dir() and not (self.workspace / p).is_symlink()]
        writable = [p for p in paths if p not in set(blocked)]
        if writable:
            # The work tree only: the index keeps matching the last snapshot, so the next one sees these.
            self._run("restore", f"--source={commit}", "--worktree", "--pathspec-from-file=-",
                      "--pathspec-file-nul", stdin=_nul(writable))
        return blocked


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _nul(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def _clean_environment(git_dir: Path, workspace: Path) -> dict[str, str]:
    """The caller's environment without any ``GIT_*`` variable, pointed at the shadow repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(workspace),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": IDENTITY, "GIT_AUTHOR_EMAIL": "hermes@localhost",
        "GIT_COMMITTER_NAME": IDENTITY, "GIT_COMMITTER_EMAIL": "hermes@localhost",
        "LC_ALL": "C",
    })
    return env
