"""Approvals: the bridge that lets the turn's worker thread wait for an answer while the app
thread shows the question (``approval_screen.ApprovalScreen``, loaded on the first question).

Four answers: once; this exact call for the session (the same command, or writes to the same
path); every call of this tool for the session ("all shell"); deny. A shell command has two more:
this exact command, or any plain call of its program, always in this workspace (lasting rules,
``agent/permissions.py``; ``/permissions`` lists and revokes every rule).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, ScreenStackError
from textual.message import Message

if TYPE_CHECKING:
    from hermes_tui.agent.permissions import LastingRules
    from hermes_tui.tui.approval_screen import ApprovalScreen

log = logging.getLogger(__name__)

ONCE, EXACT, SESSION, DENY = "once", "exact", "session", "deny"
ALWAYS, PROGRAM = "always", "program"  # lasting, for this workspace: this command; its program
ALLOWING = (ONCE, EXACT, SESSION, ALWAYS, PROGRAM)


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """What "this exact call" means, as the tool's record declares it (the command, the path...)."""
    from hermes_tui.agent.tools import approval_spec  # loaded by then: a turn is asking

    return approval_spec(name).key(arguments)


class ApprovalRequest(Message):
    """Posted by the worker thread (``post_message`` is thread-safe); the app calls ``show``."""

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__()
        self.name = name
        self.arguments = arguments
        self.answered = threading.Event()
        self.choice = DENY


class ApprovalBridge:
    """The ``Approver`` given to the AgentLoop. Called on the turn's worker thread, it blocks that
    thread while the app thread shows ``ApprovalScreen``; the session-wide answers are remembered
    (per tool, or per exact call) until ``reset``. ``stop`` releases a waiting thread whatever the
    screen does. ``on_answered`` (app thread) hears each answer: the chat starts the tool's timer.
    """

    def __init__(self, app: App[Any], workspace: str, root: str | None = None,
                 on_answered: Callable[[str, str], None] | None = None, home: Path | None = None) -> None:
        self.app = app
        self.workspace = workspace
        self.root = root  # the workspace folder, for write_file's diff
        self.on_answered = on_answered
        self.home = home  # where the lasting rules are kept (none without it)
        self._lasting: LastingRules | None = None
        self.allowed: set[str] = set()  # tools allowed for the session
        self.allowed_calls: set[tuple[str, str]] = set()  # (tool, call_key) allowed for the session
        self._screen: ApprovalScreen | None = None
        self._pending: ApprovalRequest | None = None
        self._stopping = threading.Event()

    @property
    def lasting(self) -> LastingRules | None:
        """This workspace's lasting rules (read from HERMES_HOME at every check)."""
        if self._lasting is None and self.home is not None and self.root is not None:
            from hermes_tui.agent.permissions import LastingRules

            self._lasting = LastingRules(self.home, Path(self.root))
        return self._lasting

    def __call__(self, name: str, arguments: dict[str, Any]) -> bool | str:
        from hermes_tui.agent.toolkit import CANCELLED, DENIED  # loaded by then (not at start-up)

        if name in self.allowed or (name, call_key(name, arguments)) in self.allowed_calls:
            return True
        lasting = self.lasting
        if lasting is not None and lasting.allowing(name, arguments) is not None:
            return True
        request = ApprovalRequest(name, arguments)
        if self._stopping.is_set() or not self.app.post_message(request):
            return CANCELLED
        while not request.answered.wait(0.1):
            if self._stopping.is_set():
                return CANCELLED
        if request.choice == SESSION:
            self.allowed.add(name)
        elif request.choice == EXACT:
            self.allowed_calls.add((name, call_key(name, arguments)))
        elif request.choice in (ALWAYS, PROGRAM):
            self._keep(request.choice, arguments)
        log.info("approval for %s: %s", name, request.choice)
        return True if request.choice in ALLOWING else DENIED.format(name=name)

    def _keep(self, choice: str, arguments: dict[str, Any]) -> None:
        """The user's key press (never the model) adds a lasting rule; the call runs either way."""
        from hermes_tui.agent import permissions

        command = str(arguments.get("command", ""))
        kind, value = (permissions.EXACT, command) if choice == ALWAYS else (
            permissions.PROGRAM, permissions.program_of(command))
        if self.lasting is None or not value:
            return
        try:
            self.lasting.add(kind, value)
        except OSError:
            log.exception("the lasting permission was not saved")

    def show(self, request: ApprovalRequest) -> None:
        """App thread: ask, and hand the answer back to the waiting worker."""

        def answer(choice: str | None) -> None:
            if not request.answered.is_set():
                request.choice = choice or DENY
                request.answered.set()
                if self.on_answered is not None:
                    self.on_answered(request.name, request.choice)

        if self._stopping.is_set():
            answer(DENY)
            return
        from hermes_tui.tui.approval_screen import ApprovalScreen

        self._pending = request
        self._screen = ApprovalScreen(request.name, request.arguments, self.workspace, self.root,
                                      lasting=self.lasting is not None)
        self.app.push_screen(self._screen, answer)

    def deny_pending(self) -> None:
        """App thread: the turn is being cancelled; an open question is answered "deny" at once
        (the worker does not wait for the screen to close) and its screen is closed."""
        screen = self._screen
        self._release()
        try:
            on_top = screen is not None and self.app.screen is screen
        except ScreenStackError:  # the app is shutting down
            on_top = False
        if on_top and screen is not None:
            screen.dismiss(DENY)

    def stop(self) -> None:
        """The app is closing: release a waiting worker; no screen is needed for that."""
        self._stopping.set()
        self._release()

    def _release(self) -> None:
        request, self._pending, self._screen = self._pending, None, None
        if request is not None and not request.answered.is_set():
            request.choice = DENY
            request.answered.set()

    def reset(self) -> None:
        """A new session starts: forget "allow for this session"."""
        self.allowed.clear()
        self.allowed_calls.clear()
