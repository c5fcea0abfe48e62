"""Lasting permissions: calls the user allowed "always, in this workspace".

Only the user's key press in the approval dialog adds a rule (``/permissions`` and ``hermes-tui
permissions`` list and revoke them); nothing the model writes can, because the rules live in
``HERMES_HOME/permissions/<hash of the workspace path>.json`` (0600, replaced atomically), which
the file tools refuse and the shell sandbox masks, and never in the workspace or its repository.

A rule belongs to one tool and is keyed the way that tool's record declares (``ApprovalSpec``,
``agent/toolkit.py``), so no tool is a special case here. Two kinds:

* ``exact``: this exact call by the record's ``key`` (a command character for character, a file's
  path for ``write_file`` and ``edit_file``).
* ``program``: the record's wider ``broad_key``. ``run_bash`` declares ``command_program``: any
  command that runs this program, such as ``pytest`` — but only a plain call:
  the command is ASCII, printable, free of every shell metacharacter (``; & | < > ( ) $ ` \\
  * ? [ ] { } ~ ! #`` and newlines), and its first word, as ``shlex`` splits it, is a bare
  program name (no path, no ``VAR=value``) that is not itself a way to run other commands or any
  code (``sh``, ``env``, ``sudo``, ``xargs``, ``python``, ``node``, ``npx``…). So ``pytest -q tests`` matches ``pytest``, and
  ``pytest; rm -rf ~``, ``pytest && curl x`` or ``pytest $(curl x)`` never do. A program rule
  trusts that program with any arguments (``pytest`` runs the workspace's ``conftest.py``).

A file that cannot be read as rules (bad JSON, wrong shape, another workspace's) counts as no
rules and says so once, in one line; adding a rule then moves it aside (``.json.bad``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.private import write_private

if TYPE_CHECKING:
    from hermes_tui.agent.toolkit import ApprovalSpec

log = logging.getLogger(__name__)

EXACT, PROGRAM = "exact", "program"
METACHARACTERS = frozenset(";&|<>()$`\\*?[]{}~!#\n\r")
# Programs whose job is to run another command: a rule for them would allow anything.
RUNNERS = frozenset({
    "sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "busybox", "env", "sudo", "doas", "su",
    "xargs", "exec", "eval", "command", "builtin", "source", "nohup", "timeout", "nice", "ionice",
    "time", "watch", "setsid", "stdbuf", "chroot", "unshare", "nsenter", "script", "ssh", "parallel",
    "flock", "strace", "ltrace", "gdb", "bwrap", "systemd-run", "runuser", "pkexec",
    # Interpreters and package runners: ``python -c``, ``node -e``, ``npx pkg`` run any code at all.
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby",
    "php", "lua", "luajit", "tclsh", "wish", "awk", "gawk", "mawk", "nawk", "osascript", "pwsh",
    "npx", "pnpx", "bunx", "uv", "uvx", "pipx",
})
_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*\Z")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
FORMAT = 1


@dataclass(frozen=True)
class Rule:
    """One lasting permission of one workspace: calls of ``tool`` whose key is ``value``."""

    kind: str  # EXACT or PROGRAM
    value: str  # the exact key (the whole command, the path), or the broad one (the program's name)
    added: float = 0.0
    tool: str = "run_bash"  # files written before rules had other tools hold only shell rules

    def allows(self, name: str, arguments: dict[str, Any], spec: ApprovalSpec) -> bool:
        """Does this rule allow the call? ``spec``: the approval record of tool ``name``."""
        if name != self.tool:
            return False
        if self.kind == EXACT:
            return spec.lasting and spec.key(arguments) == self.value
        return self.kind == PROGRAM and spec.broad(arguments) == self.value

    @property
    def label(self) -> str:
        """How lists show it (the caller makes it printable), worded by the tool's record."""
        from hermes_tui.agent.tools import (
            approval_spec,  # a list is shown: the tools may load
        )

        spec = approval_spec(self.tool)
        value = self.value if self.kind == EXACT else spec.broad_label.format(self.value)
        return f"{spec.noun or self.tool}: {value}"

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "kind": self.kind, "value": self.value, "added": self.added}


def command_program(arguments: dict[str, Any]) -> str | None:
    """``run_bash``'s broad key: the program of a plain command (``program_of``)."""
    command = arguments.get("command")
    return program_of(command) if isinstance(command, str) else None


def program_of(command: str) -> str | None:
    """The program a ``program`` rule may match this command by, or None when it must never match."""
    if not command.isascii() or not command.isprintable() or METACHARACTERS.intersection(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote
        return None
    if not words or not _PROGRAM_NAME.match(words[0]) or words[0] in RUNNERS:
        return None
    return words[0]


def rules_path(home: Path, workspace: Path) -> Path:
    real = os.path.realpath(workspace)
    return Path(home) / "permissions" / f"{hashlib.sha256(os.fsencode(real)).hexdigest()[:16]}.json"


class LastingRules:
    """The lasting rules of one workspace. Every check reads the file again (tiny), so a rule
    revoked elsewhere (another window, ``hermes-tui permissions revoke``) stops at once."""

    def __init__(self, home: Path, workspace: Path, on_warning: Callable[[str], None] | None = None) -> None:
        self.workspace = os.path.realpath(workspace)
        self.path = rules_path(home, Path(self.workspace))
        self.on_warning = on_warning
        self._lock = threading.Lock()
        self._warned: tuple[int, int] | None = None  # (mtime_ns, size) of the bad file said once

    def rules(self) -> list[Rule]:
        rules, _ = self._load()
        return rules

    def warning(self) -> str | None:
        """Why the file is not used, if it is not (and says it once through ``on_warning``)."""
        return self._load()[1]

    def allowing(self, name: str, arguments: dict[str, Any], spec: ApprovalSpec) -> Rule | None:
        return next((rule for rule in self.rules() if rule.allows(name, arguments, spec)), None)

    def add(self, kind: str, value: str, tool: str = "run_bash") -> Rule:
        if kind not in (EXACT, PROGRAM) or not value or not _TOOL_NAME.match(tool):
            raise ValueError(f"not a rule: {tool} {kind} {value!r}")
        with self._lock:
            rules, problem = self._load()
            if problem is not None and self.path.exists():
                os.replace(self.path, self.path.with_name(self.path.name + ".bad"))
            found = next((r for r in rules if (r.tool, r.kind, r.value) == (tool, kind, value)), None)
            if found is not None:
                return found
            rule = Rule(kind, value, time.time(), tool)
            self._save([*rules, rule])
        log.info("lasting permission added for %s: %s %s", self.workspace, tool, kind)
        return rule

    def revoke(self, rule: Rule) -> bool:
        with self._lock:
            rules, problem = self._load()
            kept = [r for r in rules if (r.tool, r.kind, r.value) != (rule.tool, rule.kind, rule.value)]
            if problem is not None or len(kept) == len(rules):
                return False
            self._save(kept)
        return True

    def _load(self) -> tuple[list[Rule], str | None]:
        try:
            stat = self.path.stat()
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [], None
        except (OSError, UnicodeDecodeError) as exc:
            return [], self._warn((-1, -1), f"cannot be read ({exc})")
        try:
            rules = _parse(json.loads(raw), self.workspace)
        except (ValueError, TypeError, KeyError) as exc:
            return [], self._warn((stat.st_mtime_ns, stat.st_size), str(exc))
        self._warned = None
        return rules, None

    def _warn(self, seen: tuple[int, int], why: str) -> str:
        line = (f"the permissions file {self.path} is not used ({why}): no lasting rules apply until "
                "it is fixed or removed.")
        if seen != self._warned:
            self._warned = seen
            log.warning("%s", line)
            if self.on_warning is not None:
                self.on_warning(line)
        return line

    def _save(self, rules: list[Rule]) -> None:
        data = {"format": FORMAT, "workspace": self.workspace, "rules": [r.to_dict() for r in rules]}
        write_private(self.path, json.dumps(data, indent=2) + "\n")


def _parse(data: Any, workspace: str) -> list[Rule]:
    """The rules of a file's JSON; raises ValueError (with the reason) for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ValueError("not an object with a list of rules")
    if data.get("workspace") != workspace:
        raise ValueError(f"it is the file of another workspace, {data.get('workspace')!r}")
    rules = []
    for item in data["rules"]:
        tool = item.get("tool") if isinstance(item, dict) else None
        if not isinstance(tool, str) or not _TOOL_NAME.match(tool) or item.get("kind") not in (EXACT, PROGRAM):
            raise ValueError(f"a rule is not understood: {json.dumps(item)[:80]}")
        value, added = item.get("value"), item.get("added", 0.0)
        if not isinstance(value, str) or not value or not isinstance(added, (int, float)):
            raise ValueError(f"a rule is not understood: {json.dumps(item)[:80]}")
        if item["kind"] == PROGRAM and not (_PROGRAM_NAME.match(value) and value not in RUNNERS):
            raise ValueError(f"{value!r} cannot be a program rule")
        rules.append(Rule(item["kind"], value, float(added), tool))
    return rules
