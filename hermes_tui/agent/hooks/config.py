"""Which hooks are declared, and which of them the user approved.

Hooks are declared in Claude Code's format, ``{"hooks": {EVENT: [{"matcher": REGEX, "hooks":
[{"type": "command", "command": TEXT, "timeout": SECONDS}]}]}}``, in ``HERMES_HOME/settings.json``
(the user's own: they run) and in the workspace's ``.hermes/settings.json`` and
``.claude/settings.json``. Those two are repository content, and a hook runs outside the shell's
sandbox with the user's rights, so a project file's hooks run only once the user approved that
exact file *and* the workspace code its commands run (``mcp/code.py``'s digest: an approved
``.claude/hooks/check.sh`` that a sandboxed command rewrote waits for a new approval). The
approvals live in ``HERMES_HOME/hooks-approved.json``, never in the repository.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.agent import approved
from hermes_tui.agent.hooks.events import BY_NAME
from hermes_tui.agent.mcp import code

log = logging.getLogger(__name__)

USER_FILE = "settings.json"  # in HERMES_HOME
PROJECT_FILES = (".hermes/settings.json", ".claude/settings.json")  # in the workspace
APPROVALS = "hooks-approved.json"  # in HERMES_HOME
WAITS = "every project hook waits"
DEFAULT_TIMEOUT = 60.0  # seconds, Claude Code's default
_PROJECT_DIR = re.compile(r"\$\{?(?:CLAUDE|HERMES)_PROJECT_DIR\}?")
_SHELL = re.compile(r"""[\s;&|()`$<>'"]+""")  # what separates the words of a command line inside one word
_PLAIN = re.compile(r"[A-Za-z0-9_|]+")  # Claude Code matches such a matcher exactly, not as a regex


@dataclass(frozen=True)
class HookSpec:
    """One command hook as declared."""

    event: str
    matcher: str
    command: str
    timeout: float
    source: str  # the settings file's label ("HERMES_HOME/settings.json", ".claude/settings.json")

    def matches(self, names: Sequence[str]) -> bool:
        """Whether the matcher selects any of ``names`` (a tool's: Claude Code's and Hermes' own)."""
        if self.matcher in ("", "*"):
            return True
        if _PLAIN.fullmatch(self.matcher):
            return any(name in self.matcher.split("|") for name in names)
        try:
            return any(re.search(self.matcher, name) for name in names)
        except re.error:  # said when the file was read; such an entry never matches
            return False


@dataclass(frozen=True)
class SettingsFile:
    """One settings file's hooks and whether they may run."""

    path: Path
    label: str
    project: bool
    hooks: tuple[HookSpec, ...]
    binding: str = ""  # what an approval is bound to ("" for the user's own file)
    approved: bool = True
    changed: bool = False  # approved once, but the file or the code it runs changed since
    problems: tuple[str, ...] = ()  # entries that could not be used, one line each
    ignored: tuple[str, ...] = ()  # what Claude Code has and Hermes does not run, one line each

    @property
    def waiting(self) -> bool:
        return bool(self.hooks) and not self.approved


@dataclass(frozen=True)
class Declared:
    """The hook settings files found for a workspace; only approved files' hooks run."""

    files: tuple[SettingsFile, ...] = ()

    @property
    def active(self) -> tuple[HookSpec, ...]:
        return tuple(hook for f in self.files if f.approved for hook in f.hooks)

    @property
    def waiting(self) -> list[SettingsFile]:
        return [f for f in self.files if f.waiting]

    def start_line(self) -> str:
        """The start-up line that says which hooks do not run: the project's that wait for approval,
        and the entries (or whole files) that cannot be used, such as a guard in a file with a
        typo ("" when every declared hook runs)."""
        parts = []
        if waiting := self.waiting:
            count = sum(len(f.hooks) for f in waiting)
            names = ", ".join(f.label + (" (changed since approved)" if f.changed else "") for f in waiting)
            parts.append(f"{count} project hook(s) in {names} wait for your approval and do not run: "
                         "'hermes-tui hooks approve' shows them and allows them.")
        if problems := [f"{f.label}: {line}" for f in self.files for line in f.problems]:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            parts.append(f"Hook settings that cannot be used: {problems[0]}{more}; 'hermes-tui hooks list' names them.")
        return " ".join(parts)


def declared(home: Path, workspace: Path) -> Declared:
    """The user's hooks, then the project's (both files), with their approvals."""
    approvals = approved.read(home, APPROVALS, WAITS)
    files = [_file(home / USER_FILE, "HERMES_HOME/settings.json", workspace, project=False, approvals={})]
    mine = (home / USER_FILE).resolve()  # run in ~, ~/.hermes/settings.json is HERMES_HOME's: yours, read once
    files += [_file(workspace / name, name, workspace, project=True, approvals=approvals) for name in PROJECT_FILES
              if (workspace / name).resolve() != mine]
    return Declared(tuple(f for f in files if f is not None))


def unchanged(file: SettingsFile, workspace: Path) -> bool:
    """Whether an approved project file, and the code its commands run, are still as approved:
    checked before its hooks run, since a command of the session may have rewritten a script."""
    try:
        data = file.path.read_bytes()
        return _binding(data, _hooks(data, file.label, [], []), workspace) == file.binding
    except (OSError, code.TooLarge):
        return False


def approve(home: Path, file: SettingsFile) -> None:
    """Let this exact content of a project settings file, and the workspace code it runs, run its hooks."""
    approved.record(home, APPROVALS, file.path, file.binding, WAITS)


def _file(path: Path, label: str, workspace: Path, *, project: bool,
          approvals: dict[str, str]) -> SettingsFile | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return SettingsFile(path, label, project, (), problems=(f"cannot be read ({exc.strerror}); its hooks do not run",))
    problems: list[str] = []
    ignored: list[str] = []
    hooks = _hooks(data, label, problems, ignored)
    if not project:
        return SettingsFile(path, label, project, hooks, problems=tuple(problems), ignored=tuple(ignored))
    real = path.resolve()
    if not real.is_relative_to(workspace.resolve()):  # an approval given elsewhere must not carry over
        return SettingsFile(real, label, project, (), problems=(
            f"links outside the workspace (to {real}): its hooks do not run",))
    try:
        binding = _binding(data, hooks, workspace)
    except code.TooLarge as exc:
        problems.append(f"cannot be approved: {exc}")
        binding = ""
    given = approvals.get(str(real))
    approved = bool(binding) and given == binding
    return SettingsFile(real, label, project, hooks, binding, approved, changed=given is not None and not approved,
                        problems=tuple(problems), ignored=tuple(ignored))


def _binding(data: bytes, hooks: Sequence[HookSpec], workspace: Path) -> str:
    """The file's content and the workspace code its commands run."""
    ran = hashlib.sha256()
    for hook in hooks:
        words = _command_words(hook.command, workspace)
        if words:
            ran.update(code.digest(workspace, words[0], words[1:]).encode() + b"\0")
    return f"{hashlib.sha256(data).hexdigest()}:{ran.hexdigest()}"


def _command_words(command: str, workspace: Path) -> list[str]:
    """The words of a hook's command line, ``$CLAUDE_PROJECT_DIR`` filled in (what it runs, for the
    digest), then the words inside a word that is a command line of its own (``bash -c "$(cat x)"``)."""
    text = _PROJECT_DIR.sub(lambda _m: str(workspace), command)
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return words + [part for word in words if _SHELL.search(word) for part in _SHELL.split(word) if part]


def _hooks(data: bytes, label: str, problems: list[str], ignored: list[str]) -> tuple[HookSpec, ...]:
    try:
        settings = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"not valid JSON ({exc}); its hooks do not run")
        return ()
    table = settings.get("hooks") if isinstance(settings, dict) else None
    if table is None:
        return ()
    if not isinstance(table, dict):
        problems.append('"hooks" must be an object of events; its hooks do not run')
        return ()
    found: list[HookSpec] = []
    for event, groups in table.items():
        if event not in BY_NAME:
            ignored.append(f"{event}: not an event Hermes runs")
            continue
        if not isinstance(groups, list):
            problems.append(f"{event}: expected a list of {{matcher, hooks}} entries")
            continue
        for group in groups:
            found.extend(_group(event, group, label, problems, ignored))
    return tuple(found)


def _group(event: str, group: Any, label: str, problems: list[str], ignored: list[str]) -> list[HookSpec]:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        problems.append(f'{event}: an entry must be {{"matcher": ..., "hooks": [...]}}')
        return []
    matcher = group.get("matcher", "")
    if not isinstance(matcher, str):
        problems.append(f"{event}: matcher must be a string")
        return []
    if not _PLAIN.fullmatch(matcher or "x") and matcher != "*":
        try:
            re.compile(matcher)
        except re.error as exc:
            problems.append(f"{event}: matcher {matcher!r} is not a valid regular expression ({exc})")
            return []
    found = []
    for handler in group["hooks"]:
        kind = handler.get("type", "command") if isinstance(handler, dict) else None
        if kind != "command":
            ignored.append(f"{event}: hooks of type {kind!r} (Hermes runs command hooks)")
            continue
        command, timeout = handler.get("command"), handler.get("timeout", DEFAULT_TIMEOUT)
        if not isinstance(command, str) or not command.strip():
            problems.append(f"{event}: a command hook needs a command")
        elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            problems.append(f"{event}: timeout must be a number of seconds above 0")
        else:
            found.append(HookSpec(event, matcher, command, float(timeout), label))
    return found
