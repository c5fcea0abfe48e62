"""The one approval policy: whether a call that needs approval runs, the same in every surface.

A call runs without asking when the session allows its tool ("all shell"), the session allows
this exact call (by its record's ``ApprovalSpec.key``: the command, the path...), or a lasting
rule of the workspace allows it (``agent/permissions.py``, keyed per tool by its record).
Otherwise the surface's ``Ask`` is called with the pending call and returns one answer; the
policy remembers what the answer allows. The TUI asks in a dialog, the web in the chat (its
answer comes by ``POST /api/approve``), headless ``-p`` never asks (it denies; ``--yes`` builds
no policy at all, so every call runs).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hermes_tui.agent import permissions
from hermes_tui.agent.permissions import LastingRules
from hermes_tui.agent.toolkit import CANCELLED, DENIED, ApprovalSpec

log = logging.getLogger(__name__)

ONCE, EXACT, SESSION, DENY = "once", "exact", "session", "deny"
ALWAYS, PROGRAM = "always", "program"  # lasting, for this workspace: this exact call; its broad key
CANCEL = "cancel"  # nobody will answer (the turn is being stopped): the call never ran
ALLOWING = frozenset({ONCE, EXACT, SESSION, ALWAYS, PROGRAM})
ANSWERS = ALLOWING | {DENY, CANCEL}


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for an answer; ``id`` is the model's call id (the ``approval_needed`` event's)."""

    id: str
    name: str
    arguments: dict[str, Any]
    agent: str = ""  # the sub-agent whose call it is ("sub-agent 2: <task>"); "" for the agent itself


Ask = Callable[[PendingCall], str]
"""How a surface asks: returns one of ``ANSWERS`` (anything else counts as ``DENY``)."""


def _spec_of(name: str) -> ApprovalSpec:
    from hermes_tui.agent.tools import approval_spec  # loaded by then: a turn is asking

    return approval_spec(name)


class ApprovalPolicy:
    """Session rules, exact calls and lasting rules, and the surface's ``ask`` for the rest.

    Called on the turn's thread (``ToolRegistry``). ``denial``: what the model is told when a call
    is denied (``{name}`` is the tool). ``unasked``: tools the surface runs without asking (the
    web's MCP tools under HERMES_WEB_ENABLE_MCP). ``reset`` forgets the session's answers.
    """

    def __init__(self, ask: Ask, lasting: LastingRules | None = None, *, denial: str = DENIED,
                 unasked: Callable[[str], bool] | None = None,
                 spec_of: Callable[[str], ApprovalSpec] = _spec_of, workspace: Path | None = None) -> None:
        self.ask = ask
        self.lasting = lasting
        # Where exact keys are resolved (a write's real target): the lasting rules' workspace.
        self.workspace = workspace if workspace is not None else (
            Path(lasting.workspace) if lasting is not None else None)
        self.unasked = unasked
        self.denial = denial
        self.spec_of = spec_of
        self.allowed: set[str] = set()  # tools allowed for the session
        self.allowed_calls: set[tuple[str, str]] = set()  # (tool, key) allowed for the session
        self._lock = threading.Lock()
        # One question at a time: sub-agents run in parallel, and a surface shows one dialog.
        self._asking = threading.Lock()
        self.agent = ""  # set on a sub-agent's view (``for_agent``): its calls are asked as its own
        self._cancelled: threading.Event | None = None

    @classmethod
    def for_workspace(cls, ask: Ask, home: Path | None, workspace: Path, *, denial: str = DENIED,
                      unasked: Callable[[str], bool] | None = None,
                      on_warning: Callable[[str], None] | None = None) -> ApprovalPolicy:
        """A policy reading the lasting rules of ``workspace`` kept in ``home`` (none without it)."""
        lasting = LastingRules(home, workspace, on_warning=on_warning) if home is not None else None
        return cls(ask, lasting, denial=denial, unasked=unasked, workspace=workspace)

    def settled(self, name: str, arguments: dict[str, Any]) -> bool:
        """True when a rule already allows the call, so nobody needs to be asked."""
        if self.unasked is not None and self.unasked(name):
            return True
        spec = self.spec_of(name)
        with self._lock:
            if name in self.allowed or (name, spec.key(arguments, self.workspace)) in self.allowed_calls:
                return True
        return self.lasting is not None and self.lasting.allowing(name, arguments, spec) is not None

    def target(self, name: str, arguments: dict[str, Any]) -> str:
        """The real target the call's key names (a write's real path) when it differs from the
        argument given, else "": what a surface shows next to the path it was given."""
        spec = self.spec_of(name)
        given = arguments.get(spec.exact) if spec.exact else None
        if spec.target is None or not isinstance(given, str):
            return ""
        real = spec.key(arguments, self.workspace)
        return "" if real in (given, os.path.normpath(given)) else real

    def answers(self, name: str, arguments: dict[str, Any]) -> tuple[str, ...]:
        """The answers a surface may offer for this call (the lasting ones where the tool has them)."""
        spec = self.spec_of(name)
        offered = [ONCE, EXACT, SESSION]
        if self.lasting is not None and spec.lasting:
            offered.append(ALWAYS)
        if self.lasting is not None and spec.broad(arguments) is not None:
            offered.append(PROGRAM)
        return (*offered, DENY)

    def for_agent(self, label: str, cancel: threading.Event) -> ApprovalPolicy:
        """This policy as a sub-agent uses it: the same rules, answers and surface, each question
        labelled ``label``; none is asked once ``cancel`` is set (the turn is being stopped)."""
        view = copy.copy(self)  # shares the rule sets and the locks: an answer holds for both
        view.agent, view._cancelled = label, cancel
        return view

    def decide(self, call: PendingCall, force: bool = False) -> bool | str:
        """True to run the call; else the result the model is given (denied, or cancelled).
        ``force``: ask even when a rule would allow it (a PreToolUse hook answered "ask")."""
        if not force and self.settled(call.name, call.arguments):
            return True
        with self._asking:
            if self._cancelled is not None and self._cancelled.is_set():
                return CANCELLED
            if not force and self.settled(call.name, call.arguments):  # answered meanwhile for another sub-agent
                return True
            answer = self.ask(replace(call, agent=self.agent) if self.agent else call)
            if answer not in self.answers(call.name, call.arguments) and answer != CANCEL:
                answer = DENY
            self.remember(call, answer)
        log.info("approval for %s: %s", call.name, answer)
        if answer == CANCEL:
            return CANCELLED
        return True if answer in ALLOWING else self.denial.format(name=call.name)

    def __call__(self, name: str, arguments: dict[str, Any]) -> bool | str:
        """The plain ``Approver`` form, for a call without an id."""
        return self.decide(PendingCall("", name, arguments))

    def remember(self, call: PendingCall, answer: str) -> None:
        """Keep what ``answer`` allows beyond this call. Only a user's answer gets here, never the model."""
        spec = self.spec_of(call.name)
        with self._lock:
            if answer == SESSION:
                self.allowed.add(call.name)
            elif answer == EXACT:
                self.allowed_calls.add((call.name, spec.key(call.arguments, self.workspace)))
        if answer in (ALWAYS, PROGRAM) and self.lasting is not None:
            kind, value = ((permissions.EXACT, spec.key(call.arguments, self.workspace)) if answer == ALWAYS
                           else (permissions.PROGRAM, spec.broad(call.arguments)))
            if value:
                try:
                    self.lasting.add(kind, value, call.name)
                except OSError:  # the call runs either way; the rule is only not kept
                    log.exception("the lasting permission was not saved")

    def forget(self, rule: str | tuple[str, str]) -> None:
        """Revoke a session rule: a tool (``allowed``) or a (tool, key) pair (``allowed_calls``)."""
        with self._lock:
            if isinstance(rule, str):
                self.allowed.discard(rule)
            else:
                self.allowed_calls.discard(rule)

    def reset(self) -> None:
        """A new session starts: forget "allow for this session"."""
        with self._lock:
            self.allowed.clear()
            self.allowed_calls.clear()
