"""Instruction files: what the user wrote down about themselves and their project, read at session start.

Which files, in which order (later ones win, so deeper folders come last):

1. ``HERMES_HOME/AGENTS.md``, the user's own, for every workspace;
2. for each folder from the project root (the git root when there is one, else the workspace) down
   to the current folder: its ``AGENTS.md`` (or, when it has none, its ``CLAUDE.md``), then its
   ``.hermes.md`` or ``HERMES.md``.

The files are repository content, so they pass the same guard as skills: a flagged file is left
out, with its reason, until the user approves that exact content (``/context approve N`` or
``hermes-tui context --approve PATH``). A file reached through a symlink that leaves the project is
not read, and so is one the file tools would refuse (a link to ``.env`` or into ``.git``); the text
passes the secret scrubber. The search for the project root stops at a folder that is not the
user's own. Together they are capped at ``CAP`` bytes, and what was cut is said. The section they make
is built once per session, so the system prompt stays byte-identical and providers can cache it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from hermes_tui.agent import approved
from hermes_tui.agent.paths import check_not_secret
from hermes_tui.redaction import Secrets, is_secret_variable, process_environment
from hermes_tui.skills.guard import verdict

log = logging.getLogger(__name__)

CAP = 32 * 1024  # bytes, all files together
PRIMARY = ("AGENTS.md", "CLAUDE.md")  # the first one a folder has
EXTRA = (".hermes.md", "HERMES.md")  # likewise, read after it
APPROVALS = "instructions-approved.json"
STAYS_OUT = "every flagged file stays out"

HEADER = (
    "Instruction files — written by the user about themselves and this project (later files are "
    "deeper folders and win over earlier ones). Follow them where they do not conflict with the "
    "rules above:"
)


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file (AGENTS.md and the like) as read for the prompt: sent, cut, or held
    back by the guard."""

    path: Path
    label: str  # as shown to the user and the model: "~hermes/AGENTS.md", "src/AGENTS.md"
    text: str  # what is sent ("" when left out)
    sha256: str
    flagged: str = ""  # the guard's reason, when held back
    approved: bool = False  # flagged, but the user approved this exact content
    cut: bool = False  # shortened to fit the cap

    @property
    def included(self) -> bool:
        return bool(self.text) and (not self.flagged or self.approved)


@dataclass(frozen=True)
class Instructions:
    """The instruction files of a workspace, in the order they are sent, and what was left out."""

    files: tuple[InstructionFile, ...] = ()
    notes: tuple[str, ...] = ()  # skipped files and cuts, one line each

    @property
    def held_back(self) -> list[InstructionFile]:
        return [f for f in self.files if f.flagged and not f.approved]

    def section(self) -> str:
        """The labelled block for the system prompt ("" when no file is included)."""
        parts = [f"### {f.label}\n{f.text.rstrip()}" for f in self.files if f.included]
        if not parts:
            return ""
        cut = [f.label for f in self.files if f.included and f.cut]
        tail = f"\n\n(cut to fit: {', '.join(cut)})" if cut else ""
        return "\n\n" + HEADER + "\n\n" + "\n\n".join(parts) + tail


def _own(folder: Path) -> bool:
    """Only this user (or root) can change this folder. Another user's folder, or one anybody may
    write, could hold a planted ``.git`` and ``AGENTS.md`` above the workspace."""
    try:
        found = folder.stat()
    except OSError:
        return False
    return found.st_uid in (os.getuid(), 0) and not found.st_mode & stat.S_IWOTH


def project_root(workspace: Path, cwd: Path) -> Path:
    """The git root at or above the current folder (the user's project, even when the workspace is
    one of its subfolders), else the workspace. The search stops at the first folder that is not
    the user's own (``_own``)."""
    for folder in (cwd, *cwd.parents):
        if not _own(folder):
            break
        if (folder / ".git").exists():
            return folder
    return workspace


def _known_secrets(home: Path) -> Secrets:
    """The secret-named values of the environment and HERMES_HOME/.env: scrubbed from the files'
    text, as from tool output."""
    found: dict[str, str] = {}
    try:
        found.update({k: v for k, v in dotenv_values(home / ".env").items() if v and is_secret_variable(k)})
    except (OSError, UnicodeDecodeError):
        pass
    found.update({k: v for k, v in process_environment().items() if is_secret_variable(k) and v.strip()})
    return Secrets(found)


def candidates(home: Path, workspace: Path, cwd: Path | None = None) -> list[tuple[Path, Path]]:
    """(file, the folder it must stay inside) in reading order; only files that exist."""
    workspace = workspace.resolve()
    cwd = (cwd or Path.cwd()).resolve()
    if cwd != workspace and workspace not in cwd.parents:
        cwd = workspace
    root = project_root(workspace, cwd)
    found: list[tuple[Path, Path]] = []
    global_file = home / "AGENTS.md"
    if global_file.is_file():
        found.append((global_file, home.resolve()))
    folders = [cwd, *[p for p in cwd.parents if p == root or root in p.parents]]
    for folder in reversed(folders):
        for names in (PRIMARY, EXTRA):
            for name in names:
                if (folder / name).is_file():
                    found.append((folder / name, root))
                    break
    return found


def load(home: Path, workspace: Path, cwd: Path | None = None) -> Instructions:
    """Read, guard and cap the instruction files for a new session."""
    approvals = approved.read(home, APPROVALS, STAYS_OUT)
    files: list[InstructionFile] = []
    notes: list[str] = []
    left = CAP
    root = project_root(workspace.resolve(), (cwd or Path.cwd()).resolve())
    secrets = _known_secrets(home)
    for path, inside in candidates(home, workspace, cwd):
        label = _label(path, home, root)
        real = path.resolve()
        if real != inside and inside not in real.parents:
            notes.append(f"{label}: not read (a link that leaves {inside})")
            continue
        # The file tools' refusals: AGENTS.md -> .env or CLAUDE.md -> ../.git/config is a secret.
        refused = check_not_secret(path, shown=label)
        if refused:
            notes.append(f"{label}: not read ({refused})")
            continue
        try:
            data = real.read_bytes()
        except OSError as exc:
            notes.append(f"{label}: not read ({exc.strerror})")
            continue
        sha = hashlib.sha256(data).hexdigest()
        text = secrets.scrub(data.decode("utf-8", errors="replace"))
        flagged = verdict([text])
        is_approved = bool(flagged) and approvals.get(str(real)) == sha
        cut = False
        if not flagged or is_approved:
            encoded = text.encode("utf-8")
            if len(encoded) > left:
                text = encoded[:left].decode("utf-8", errors="ignore")
                cut = True
                notes.append(f"{label}: cut to {len(text.encode('utf-8')):,} of {len(encoded):,} bytes "
                             f"(instruction files are capped at {CAP // 1024} KiB together)")
            left -= len(text.encode("utf-8"))
        else:
            notes.append(f"{label}: left out until you approve it — {flagged}")
        files.append(InstructionFile(path=real, label=label, text=text, sha256=sha, flagged=flagged,
                                     approved=is_approved, cut=cut))
    return Instructions(tuple(files), tuple(notes))


def approve(home: Path, file: InstructionFile) -> None:
    """Let this exact content of a flagged file into later sessions (kept in HERMES_HOME, never the repo)."""
    approved.record(home, APPROVALS, file.path, file.sha256, STAYS_OUT)


def _label(path: Path, home: Path, root: Path) -> str:
    if path.parent == home:
        return f"HERMES_HOME/{path.name} (global)"
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
