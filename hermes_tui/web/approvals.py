"""Approvals on the web: the questions of one browser's conversation, answered by ``POST /api/approve``.

The policy is the one every surface uses (``agent/approvals.py``); this is only how the web asks.
When the loop is about to ask, the chat stream carries ``approval_needed`` (``id``, ``name``,
``arguments``) and the page shows Allow once / Allow for the session / Deny; the turn's thread
waits here for the answer. Whatever ends the wait without one denies the call: the page closed
(the stream is gone), Stop, logout, or ``wait_seconds`` without an answer.

The question is registered when its event is emitted (``expect``, on the turn's thread, before the
event can reach the page), so an answer that arrives before the policy starts waiting is kept.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from hermes_tui.agent.approvals import DENY, ONCE, SESSION, PendingCall

log = logging.getLogger(__name__)

WAIT_SECONDS = 15 * 60.0  # an unanswered question denies its call after this long
DECISIONS = (ONCE, SESSION, DENY)  # what the page may answer (lasting rules are added in the TUI)


@dataclass
class _Question:
    answered: threading.Event = field(default_factory=threading.Event)
    answer: str = DENY


class WebQuestions:
    """The web's ``Ask`` for one conversation: one open question per waiting call, by call id."""

    def __init__(self, wait_seconds: float = WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds
        self._open: dict[str, _Question] = {}
        self._closed = False  # released until the next turn opens: every question is denied
        self._lock = threading.Lock()

    def open_turn(self) -> None:
        """A turn starts with a page watching its stream."""
        with self._lock:
            self._closed = False

    def expect(self, call_id: str) -> None:
        """The turn's thread is about to emit ``approval_needed`` for ``call_id``."""
        with self._lock:
            if not self._closed:
                self._open.setdefault(call_id, _Question())

    def ask(self, call: PendingCall) -> str:
        """Turn's thread: wait for the page's answer; DENY when none comes."""
        with self._lock:
            if self._closed:
                return DENY
            question = self._open.setdefault(call.id, _Question())
        try:
            if not question.answered.wait(self.wait_seconds):
                log.info("no answer to the approval of %s after %.0f s: denied", call.name, self.wait_seconds)
                return DENY
            return question.answer
        finally:
            with self._lock:
                if self._open.get(call.id) is question:
                    del self._open[call.id]

    def waiting(self) -> bool:
        """Some call waits for the page's answer."""
        with self._lock:
            return bool(self._open)

    def answer(self, call_id: str, decision: str) -> bool:
        """The page answered; False when no question with that id is open."""
        if decision not in DECISIONS:
            raise ValueError(decision)
        with self._lock:
            question = self._open.get(call_id)
            if question is None or question.answered.is_set():
                return False
            question.answer = decision
            question.answered.set()
        return True

    def release(self) -> int:
        """Deny every open question (the page went away, Stop, logout, the turn ended); how many."""
        with self._lock:
            questions, self._open, self._closed = list(self._open.values()), {}, True
        for question in questions:
            if not question.answered.is_set():
                question.answer = DENY
                question.answered.set()
        return len(questions)
