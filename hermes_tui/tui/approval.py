"""Approvals in the TUI: how the app asks (``agent/approvals.py`` holds the policy itself). The
bridge lets the turn's worker thread wait for an answer while the app thread shows the question
(``approval_screen.ApprovalScreen``, loaded on the first question).

Answers: once; this exact call for the session (the same command, or writes to the same path);
every call of this tool for the session ("all shell"); deny; and where the tool's record allows
them, lasting ones for this workspace: this exact call, or (shell) any plain call of its program
(``/permissions`` lists and revokes every rule).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, ScreenStackError
from textual.message import Message

if TYPE_CHECKING:  # the policy's modules (~9 ms) load after the first frame, with the first agent
    from hermes_tui.agent.approvals import ApprovalPolicy, PendingCall
    from hermes_tui.agent.permissions import LastingRules
    from hermes_tui.tui.approval_screen import ApprovalScreen

log = logging.getLogger(__name__)


class ApprovalRequest(Message):
    """Posted by the worker thread (``post_message`` is thread-safe); the app calls ``show``."""

    def __init__(self, name: str, arguments: dict[str, Any], answers: tuple[str, ...], agent: str = "") -> None:
        from hermes_tui.agent.approvals import DENY

        super().__init__()
        self.agent = agent  # the sub-agent whose call it is ("" for the agent itself)
        self.name = name
        self.arguments = arguments
        self.answers = answers  # what the policy lets the dialog offer
        self.answered = threading.Event()
        self.choice = DENY


class ApprovalBridge:
    """The TUI's ``Ask`` for its ``policy`` (the one given to the AgentLoop). Called on the turn's
    worker thread, it blocks that thread while the app thread shows ``ApprovalScreen``. ``stop``
    releases a waiting thread whatever the screen does. ``on_answered`` (app thread) hears each
    answer: the chat starts the tool's timer.
    """

    def __init__(self, app: App[Any], workspace: str, root: str | None = None,
                 on_answered: Callable[[str, str], None] | None = None, home: Path | None = None) -> None:
        self.app = app
        self.workspace = workspace
        self.root = root  # the workspace folder, for write_file's diff
        self.on_answered = on_answered
        self.home = home  # HERMES_HOME: the dialog never reads what the file tools refuse
        self._screen: ApprovalScreen | None = None
        self._pending: ApprovalRequest | None = None
        self._stopping = threading.Event()

    @functools.cached_property
    def policy(self) -> ApprovalPolicy:
        """The policy this bridge asks for, made on first use (the first agent, after the first frame)."""
        from hermes_tui.agent.approvals import ApprovalPolicy

        return ApprovalPolicy.for_workspace(self.ask, self.home if self.root is not None else None,
                                            Path(self.root or "."))

    @property
    def lasting(self) -> LastingRules | None:
        """This workspace's lasting rules (read from HERMES_HOME at every check)."""
        return self.policy.lasting

    def ask(self, call: PendingCall) -> str:
        """Worker thread: show the question and wait for the answer (``CANCEL`` when stopping)."""
        from hermes_tui.agent.approvals import CANCEL

        request = ApprovalRequest(call.name, call.arguments, self.policy.answers(call.name, call.arguments),
                                  call.agent)
        if self._stopping.is_set() or not self.app.post_message(request):
            return CANCEL
        while not request.answered.wait(0.1):
            if self._stopping.is_set():
                return CANCEL
        return request.choice

    def show(self, request: ApprovalRequest) -> None:
        """App thread: ask, and hand the answer back to the waiting worker."""
        from hermes_tui.agent.approvals import DENY

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
                                      answers=request.answers, home=self.home, agent=request.agent)
        self.app.push_screen(self._screen, answer)

    def deny_pending(self) -> None:
        """App thread: the turn is being cancelled; an open question is answered "deny" at once
        (the worker does not wait for the screen to close) and its screen is closed."""
        from hermes_tui.agent.approvals import DENY

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
            from hermes_tui.agent.approvals import DENY

            request.choice = DENY
            request.answered.set()

    def reset(self) -> None:
        """A new session starts: forget "allow for this session"."""
        self.policy.reset()
