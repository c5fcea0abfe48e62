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
  plain call of a program on the allowlist ``PROGRAMS``, with arguments that cannot run code:
  the command is ASCII, printable, free of every shell metacharacter (``; & | < > ( ) $ ` \\
  * ? [ ] { } ~ ! #`` and newlines), its first word, as ``shlex`` splits it, is a bare program
  name on the list, and no argument is one of that program's code-running options (``rg``: never
  ``--pre``). Anything else (``git``, ``make``, ``pytest``, ``npm``, ``sed``, ``tar``, interpreters:
  they run what the workspace or their arguments say) is offered as an exact-command rule only.
  So ``grep -rn foo src`` matches ``grep``; ``grep; rm -rf ~`` or ``rg --pre=sh x`` never do.

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


@dataclass(frozen=True)
class Arguments:
    """Which arguments a program rule accepts for its program: any but ``refused``, options that
    run code, refused as given, with ``=value``, and as any abbreviation GNU tools accept."""

    refused: frozenset[str] = frozenset()

    def allow(self, words: list[str]) -> bool:
        for word in words:
            name = word.split("=", 1)[0]
            if name in self.refused or (name.startswith("--") and len(name) > 2 and any(
                    option.startswith(name) for option in self.refused if option.startswith("--"))):
                return False
        return True


_PLAIN = Arguments()
# The one list of programs a lasting "any <program>" rule may be given for: each reads files or
# prints, and no argument outside ``refused`` makes it run code. Nothing else is ever offered one.
# Not git: even its read-only subcommands run what a repository's config says (core.fsmonitor),
# and with a few writes the workspace folder itself becomes a bare repository git would use.
PROGRAMS: dict[str, Arguments] = {
    "ls": _PLAIN, "cat": _PLAIN, "head": _PLAIN, "tail": _PLAIN, "wc": _PLAIN, "pwd": _PLAIN, "echo": _PLAIN,
    "stat": _PLAIN, "du": _PLAIN, "df": _PLAIN, "cut": _PLAIN, "diff": _PLAIN, "grep": _PLAIN,
    "touch": _PLAIN, "mkdir": _PLAIN,
    "rg": Arguments(refused=frozenset({"--pre", "--pre-glob", "--search-zip", "-z"})),
}
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

    def allows(self, name: str, arguments: dict[str, Any], spec: ApprovalSpec,
               workspace: Path | None = None) -> bool:
        """Does this rule allow the call? ``spec``: the approval record of tool ``name``; exact
        keys are compared as the record keys a call in ``workspace`` (a write by its real target)."""
        if name != self.tool:
            return False
        if self.kind == EXACT:
            return spec.lasting and spec.key(arguments, workspace) == self.value
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
    """The program a ``program`` rule may match this command by, or None when it must never match
    (nor be offered): a plain call of a program on ``PROGRAMS`` with arguments it accepts."""
    if not command.isascii() or not command.isprintable() or METACHARACTERS.intersection(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote
        return None
    arguments = PROGRAMS.get(words[0]) if words else None
    if arguments is None or not arguments.allow(words[1:]):
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
        workspace = Path(self.workspace)
        return next((rule for rule in self.rules() if rule.allows(name, arguments, spec, workspace)), None)

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
        if item["kind"] == PROGRAM and not _PROGRAM_NAME.match(value):
            raise ValueError(f"{value!r} cannot be a program rule")  # one not on PROGRAMS never matches
        rules.append(Rule(item["kind"], value, float(added), tool))
    return rules
