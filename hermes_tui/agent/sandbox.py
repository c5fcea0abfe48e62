"""The sandbox ``run_bash`` commands run in: bubblewrap's argument list, the probe, and the environment.

With bubblewrap (``bwrap``) and working user namespaces, a command gets its own PID namespace (so
Hermes' process and environment are not visible, and every descendant dies with the namespace's
first process, ``setsid`` and ``setpgid`` children included), no capabilities, a read-only view of
the system, a writable workspace whose ``.git`` stays read-only, a private ``/tmp``, and tmpfs or
``/dev/null`` over HERMES_HOME, the log folder and the usual credential folders. The network is cut
unless ``HERMES_SANDBOX_NETWORK=on``, which shares the host's network namespace whole: the internet,
services listening on this machine's loopback, and its *abstract* unix sockets (X11's
``@/tmp/.X11-unix/X0``, D-Bus, ...: Linux ties those to the network namespace, not to files the
mounts could hide), so the start-up notice says so. Without bubblewrap the command runs under ``reaper.py``, which
still ends every descendant it can find (see there); ``notice`` says so once at start.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui.agent.paths import protected_folders

if TYPE_CHECKING:
    from hermes_tui.config import Config

CREDENTIALS = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".netrc", ".git-credentials",
    ".docker", ".gnupg", ".kube", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".gem/credentials", ".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d",
    ".config/op", ".pgpass",
)
"""Folders and files under the user's home that hold credentials: masked in the sandbox."""

SOCKETS = ("/run/user", "/run/docker.sock", "/var/run/docker.sock", "/run/podman")
"""Sockets a read-only mount does not stop (agents, session bus, docker: root by another name)."""

ENVIRONMENT = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR",
    "TZ", "TMPDIR", "EDITOR", "VISUAL", "PAGER", "VIRTUAL_ENV",
})
"""The only variables a command inherits (plus ``LC_*``); everything else, tokens included, stays out."""

_HIDDEN_BY_SANDBOX = ("/tmp", "/dev", "/proc")  # replaced wholesale: nothing under them needs a mask


@dataclass(frozen=True)
class Sandbox:
    """How ``run_bash`` confines a command: ``HERMES_SANDBOX`` and ``HERMES_SANDBOX_NETWORK``."""

    enabled: bool = True
    network: bool = False

    @classmethod
    def from_config(cls, config: Config) -> Sandbox:
        return cls(enabled=config.sandbox, network=config.sandbox_network)

    @property
    def active(self) -> bool:
        """True when commands really run in bubblewrap (enabled, and the probe passed)."""
        return self.enabled and unavailable_reason() is None

    def wrap(self, argv: list[str], workspace: Path, home: Path | None, readable: Sequence[Path] = (),
             repositories: Collection[str] = ()) -> list[str]:
        """``argv`` under bubblewrap, confined as the module docstring says; ``readable`` folders (the
        skill library, whose scripts run from their folder) are bound read-only over any mask, and
        so are the workspace's git ``repositories`` (``gitguard.repositories``) besides its ``.git``."""
        ws = os.path.realpath(workspace)
        args = [_bwrap() or "bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--cap-drop", "ALL",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        if not self.network:
            args.append("--unshare-net")
        masks = _masks(ws, home)
        # A mask that holds the workspace goes first (the workspace is bound into it), any other after.
        args += [a for m in masks if _within(ws, m) for a in _mask(m)]
        args += ["--bind", ws, ws]
        git = os.path.join(ws, ".git")
        stores = {git} if os.path.lexists(git) and not os.path.islink(git) else set()
        stores |= {r for r in repositories if _within(os.path.realpath(r), ws) and not os.path.islink(r)}
        for store in sorted(stores):  # outer before inner: a later bind mounts over an earlier one
            args += ["--ro-bind", store, store]
        args += [a for m in masks if not _within(ws, m) for a in _mask(m)]
        for folder in map(os.path.realpath, readable):  # read-only: no command can rewrite a skill
            if os.path.isdir(folder) and not _within(folder, ws):
                args += ["--ro-bind", folder, folder]
        return [*args, "--setenv", "TMPDIR", "/tmp", "--chdir", ws, "--", *argv]

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The allowed variables of ``environ`` (already stripped of secrets by ``Secrets``)."""
        return {k: v for k, v in environ.items() if k in ENVIRONMENT or k.startswith("LC_")}


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _masks(workspace: str, home: Path | None) -> list[str]:
    """Existing paths to hide, as real paths, each visible in the sandbox (so bwrap can mount on it)."""
    user_home = Path.home()
    candidates = [*protected_folders(home), *(user_home / c for c in CREDENTIALS), *map(Path, SOCKETS),
                  *_runtime_folders()]
    found: list[str] = []
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        real = os.path.realpath(candidate)
        hidden = any(_within(real, h) for h in _HIDDEN_BY_SANDBOX) and not _within(real, workspace)
        if os.path.exists(real) and not hidden and real != workspace and real not in found:
            found.append(real)
    return found


def _runtime_folders() -> list[Path]:
    """The host's runtime and temporary folders, wherever they are: the warm helper's socket and
    key live there (``warm.folder``: ``$XDG_RUNTIME_DIR/hermes``, else ``<tmp>/hermes-<uid>``), and
    so do the TUI's stream host, desktop sessions' sockets and other programs' files. Under
    ``/run/user`` or ``/tmp`` they are hidden already; elsewhere (WSLg's runtime folder, a
    ``TMPDIR`` of one's own) they are masked too. The sandbox has its own ``/tmp``."""
    found = [Path(tempfile.gettempdir())]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        found.append(Path(runtime))
    return found


def _mask(path: str) -> list[str]:
    return ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]


def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why bubblewrap cannot sandbox commands here (one phrase), or None when it works. Probed once."""
    path = _bwrap()
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [path, "--die-with-parent", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL",
             "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true"]
    try:
        done = subprocess.run(probe, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start ({exc})"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap cannot create its namespaces here ({why[-1] if why else f'exit {done.returncode}'})"
    return None


NETWORK_NOTICE = (
    "run_bash has the network (HERMES_SANDBOX_NETWORK=on): sandboxed commands can reach the internet, "
    "services on this machine's localhost and its abstract unix sockets (X11, D-Bus); each one still "
    "needs your approval.")


def startup_notice(config: Config) -> str | None:
    """The one line a surface shows at start when commands run without the sandbox, or None."""
    if not config.sandbox:
        return None  # HERMES_SANDBOX=off: the user chose it
    reason = unavailable_reason()
    if reason is None:
        return NETWORK_NOTICE if config.sandbox_network else None
    return (f"run_bash runs without a sandbox: {reason}. Commands can read your files and Hermes' "
            "settings; each one still needs your approval. Install bubblewrap, or set HERMES_SANDBOX=off "
            "to silence this.")
