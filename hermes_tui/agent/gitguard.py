"""Git repositories inside the workspace, which git later runs programs from, outside any sandbox.

git runs what a repository's config and hooks say (``core.fsmonitor``, ``core.hooksPath``, hooks,
filters, aliases with ``!``...) whenever the user runs git there. So around each sandboxed command:

* before, every repository already in the workspace (a ``.git`` folder or file, at any depth, and
  any bare repository) is found, and the sandbox binds each read-only (``Sandbox.wrap``);
* after, a repository the command created may keep only configuration that runs nothing
  (``SAFE_KEYS``) and no hook: the rest is removed, and the tool result says what.

The walk follows no link, never enters a repository's own store, and stops at ``MAX_ENTRIES``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MAX_ENTRIES = 200_000  # folders looked at per walk; a larger workspace is walked in part
UNCHECKED = (f"The workspace has over {MAX_ENTRIES:,} folders, so Hermes could not check every git repository "
             "this command may have created: do not run git in folders it made until you have looked")

# Keys a new repository's config may keep: none of them makes git run a program. Anything else
# (core.fsmonitor, core.hooksPath, core.sshCommand, core.pager, filter.*, diff.*.textconv,
# alias.*, include.path, credential.helper, ...) is removed.
SAFE_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks"
    r"|autocrlf|eol|safecrlf|quotepath|compression|bigfilethreshold)"
    r"|extensions\.(objectformat|worktreeconfig|refstorage)"
    r"|remote\.[^\n]*\.(url|pushurl|fetch|tagopt|prune|mirror)"
    r"|branch\.[^\n]*\.(remote|merge|rebase|pushremote)"
    r"|user\.(name|email)|init\.defaultbranch|gc\.[a-z]+|pull\.(rebase|ff)|push\.default|fetch\.prune"
    r"|color\.[a-z.]+|advice\.[a-z]+|submodule\.[^\n]*\.(url|active|branch)",
)


def _is_bare(path: str, names: set[str]) -> bool:
    return "HEAD" in names and "objects" in names and "refs" in names and "config" in names \
        and os.path.isdir(os.path.join(path, "objects"))


@dataclass(frozen=True)
class _Listing:
    """What one folder held when it was last listed: enough to walk on without listing it again."""

    mtime_ns: int
    subfolders: tuple[str, ...]
    repositories: tuple[str, ...]


# Per workspace: the listings of the last walk. A folder whose mtime is unchanged holds the same
# names (creating, removing or renaming an entry changes it), so a walk lists only folders that
# changed and costs about one stat per folder. A listing is kept only once its folder's mtime is
# older than RACY_NS before the walk began, as git's index does, so a change within the
# filesystem's timestamp tick is never missed.
_listings: dict[str, dict[str, _Listing]] = {}
_lock = threading.Lock()
RACY_NS = 2_000_000_000


def _list(folder: str, root: str) -> _Listing | None:
    try:
        mtime = os.stat(folder).st_mtime_ns
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return None
    names = {entry.name for entry in entries}
    if folder != root and _is_bare(folder, names):
        return _Listing(mtime, (), (folder,))
    found = tuple(entry.path for entry in entries if entry.name == ".git" and not entry.is_symlink())
    subfolders = tuple(entry.path for entry in entries
                       if entry.name != ".git" and entry.is_dir(follow_symlinks=False))
    return _Listing(mtime, subfolders, found)


def repositories(workspace: Path) -> set[str]:
    """Real paths of every repository in the workspace: ``.git`` folders and files, and bare
    repositories (git runs a bare repository's config when the user works in it)."""
    return _walk(workspace)[0]


def _walk(workspace: Path) -> tuple[set[str], bool]:
    """``repositories``, and whether the walk saw the whole workspace (False past ``MAX_ENTRIES``)."""
    root = os.path.realpath(workspace)
    started = time.time_ns()
    with _lock:
        previous = _listings.get(root, {})
    kept: dict[str, _Listing] = {}
    found: set[str] = set()
    stack, seen = [root], 0
    while stack and seen < MAX_ENTRIES:
        folder = stack.pop()
        known = previous.get(folder)
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            continue
        listing = known if known is not None and known.mtime_ns == mtime else _list(folder, root)
        if listing is None:
            continue
        seen += 1 + len(listing.subfolders)
        if listing.mtime_ns < started - RACY_NS:
            kept[folder] = listing
        found.update(listing.repositories)
        stack.extend(listing.subfolders)
    complete = not stack
    if not complete:
        log.warning("the workspace has over %d folders: repositories below were not all found", MAX_ENTRIES)
    with _lock:
        _listings[root] = kept
    return found, complete


def _store(path: str) -> str | None:
    """The git folder of a repository entry: the folder itself, or where a ``.git`` file points."""
    if os.path.isdir(path):
        return path
    try:
        line = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = line.split(":", 1)[1].strip()
    return os.path.realpath(os.path.join(os.path.dirname(path), target))


def _config_keys(config: str) -> list[str]:
    """The keys of one config file, read by git itself (``--file``: no include, nothing run)."""
    git = shutil.which("git")
    if git is None or not os.path.isfile(config):
        return []
    env = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull,
           "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run([git, "config", "--file", config, "--null", "--name-only", "--list"],
                          capture_output=True, env=env, timeout=30, check=False)
    if done.returncode != 0:  # a file git cannot parse: it would refuse to use it as it is
        return ["(unreadable config)"]
    return [key for key in done.stdout.decode(errors="replace").split("\0") if key]


def _disarm(store: str, workspace: str) -> list[str]:
    """Remove from a new repository what would make git run a program; what was removed."""
    removed: list[str] = []
    config = os.path.join(store, "config")
    keys = _config_keys(config)
    unsafe = sorted({key for key in keys if not SAFE_KEYS.fullmatch(key.lower())})
    if unsafe:
        safe = [key for key in keys if SAFE_KEYS.fullmatch(key.lower())]
        values = _values(config, safe)
        Path(config).write_text("".join(f"[{_section(key)}]\n\t{_name(key)} = {_quoted(value)}\n"
                                        for key, value in values), encoding="utf-8")
        removed += [f"config {key}" for key in unsafe]
    hooks = os.path.join(store, "hooks")
    if os.path.isdir(hooks) and not os.path.islink(hooks):
        for name in sorted(os.listdir(hooks)):
            if not name.endswith(".sample"):
                target = os.path.join(hooks, name)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    os.unlink(target)
                removed.append(f"hooks/{name}")
    elif os.path.islink(hooks):
        os.unlink(hooks)
        removed.append("hooks (a link)")
    rel = os.path.relpath(store, workspace)
    return [f"{rel}: {what}" for what in removed]


def _values(config: str, keys: list[str]) -> list[tuple[str, str]]:
    git = shutil.which("git") or "git"
    env = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull,
           "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run([git, "config", "--file", config, "--null", "--list"], capture_output=True,
                          env=env, timeout=30, check=False)
    wanted = {key.lower() for key in keys}
    pairs = []
    for item in done.stdout.decode(errors="replace").split("\0"):
        key, _, value = item.partition("\n")
        if key and key.lower() in wanted:
            pairs.append((key, value))
    return pairs


def _section(key: str) -> str:
    section = key.rpartition(".")[0]
    head, dot, sub = section.partition(".")
    return f'{head} "{sub}"' if dot else head


def _name(key: str) -> str:
    return key.rpartition(".")[2]


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def disarm_new(workspace: Path, before: set[str]) -> list[str]:
    """After a command: strip what runs programs from each repository it created (``before`` is
    ``repositories`` from before it). One line per thing removed."""
    root = os.path.realpath(workspace)
    lines: list[str] = []
    stores: set[str] = set()
    found, complete = _walk(workspace)
    if not complete:  # a command can make folders by the hundred thousand to hide a repository
        lines.append(UNCHECKED)
    for entry in sorted(found - before):
        store = _store(entry)
        if store is None or not os.path.isdir(store) or store in stores:
            continue
        stores.add(store)
        if not (store == root or store.startswith(root + os.sep)):
            continue  # a .git file pointing outside: nothing of ours to change, and nothing new there
        try:
            lines += _disarm(store, root)
        except (OSError, subprocess.SubprocessError) as exc:
            lines.append(f"{os.path.relpath(store, root)}: could not be checked ({exc}); do not run git there")
    return lines


def notice(lines: list[str]) -> str:
    """What the tool result says when ``disarm_new`` removed something."""
    removed = [line for line in lines if line != UNCHECKED]
    said = ([("Hermes removed from a git repository this command created what would make git run a program "
              "outside the sandbox when you use it later: " + "; ".join(removed))] if removed else [])
    said += [UNCHECKED] if UNCHECKED in lines else []
    return "[" + ". ".join(said) + "]"
