"""The web process's core objects: one MemoryStore, one SkillManager, a bounded pool of AgentLoops.

Each logged-in browser session owns at most one live AgentLoop (its current conversation). The
pool is an LRU of ``max_loops`` entries; a loop idle for ``idle_seconds`` (or pushed out of the
LRU, or whose browser logged out or started a new session) is *retired*: a job of the process's
one runner (``background.Background``, which also runs every turn and the idle sweep) waits for
any running turn to end, then ``close()`` stores the session summary, one retirement at a time.
That keeps memory bounded and never makes a request wait for a summary. Idle times are read on
the runner's injectable clock.

Two limits protect the server: one running turn per browser session (``Busy`` -> 409), and at most
``max_streams`` open chat streams in the process (``Saturated`` -> 503), which must stay below the
gunicorn thread count so long streams can never take every thread from the login page.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_tui.agent.approvals import ApprovalPolicy
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.agent.runtime import build_agent, web_surface
from hermes_tui.agent.tools import APPROVAL_TOOLS
from hermes_tui.background import Background
from hermes_tui.clock import Clock
from hermes_tui.config import Config
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.web.approvals import WAIT_SECONDS, WebQuestions
from hermes_tui.web.mcp import WebMcp

if TYPE_CHECKING:
    from hermes_tui.llm import ModelHost

log = logging.getLogger(__name__)

MAX_LOOPS = 16
IDLE_SECONDS = 30 * 60.0
MAX_STREAMS = 4
SUMMARY_TIMEOUT = 20.0
SWEEP_EVERY = 60.0
RETIRE_WAIT = 120.0  # how long a retiring loop waits for its running turn to end
CLOSE_GRACE = 3.0  # how long closing waits for the cancelled turns to end
ABANDONED_WAIT = 10.0  # how long a message waits for a turn its page left (a reload) to wind down


class Busy(Exception):
    """This browser session already has a turn running."""


class InUse(Exception):
    """Another browser's live conversation is that session (two loops would interleave one history)."""


class Saturated(Exception):
    """Every chat stream slot of the process is in use."""


@dataclass
class _Slot:
    loop: AgentLoop
    questions: WebQuestions  # its approval questions, answered by POST /api/approve
    last_used: float  # on the runner's clock
    running: threading.Lock = field(default_factory=threading.Lock)
    abandoned: threading.Event = field(default_factory=threading.Event)  # its page went away mid-turn


class Turn:
    """The right to run one turn on ``loop``; ``release()`` (idempotent) gives it back."""

    def __init__(self, slot: _Slot, held: list[threading.Lock | threading.BoundedSemaphore],
                 runner: Background, notice: str = "") -> None:
        self.loop = slot.loop
        self.questions = slot.questions
        self.runner = runner  # the process's one runner of agent threads (``AppState.close`` stops it)
        self.notice = notice  # said before the turn's first event (e.g. why a new session began)
        self._slot = slot
        self._held = held
        self._done = threading.Lock()

    def abandon(self) -> None:
        """Its page went away (a reload, a closed tab): the turn is being cancelled, so the next
        message waits for it to end instead of being refused as "a turn is running"."""
        self._slot.abandoned.set()

    def release(self) -> None:
        with self._done:
            held, self._held = self._held, []
        self._slot.last_used = self.runner.clock()
        for lock in held:
            lock.release()


class AppState:
    def __init__(
        self,
        config: Config,
        *,
        mcp: WebMcp,
        max_loops: int = MAX_LOOPS,
        idle_seconds: float = IDLE_SECONDS,
        max_streams: int = MAX_STREAMS,
        summary_timeout: float = SUMMARY_TIMEOUT,
        approval_seconds: float = WAIT_SECONDS,
        clock: Clock = time.monotonic,
        host: ModelHost | None = None,
    ) -> None:
        self.config = config
        self.mcp = mcp  # the MCP servers (closed with the state); their tools per ``surface``
        self.surface = web_surface(config, mcp.manager, host)  # model calls in ``host`` (None: here)
        self.memory = MemoryStore(config.db_path)
        self.skills = SkillManager.for_config(config)
        self.max_loops = max_loops
        self.idle_seconds = idle_seconds
        self.summary_timeout = summary_timeout
        self.approval_seconds = approval_seconds  # an unanswered approval denies its call after this
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Lock()
        self._streams = threading.BoundedSemaphore(max_streams)
        self.runner = Background(clock)  # every turn, retirement and the sweep
        self._summarizing = threading.Lock()  # one retirement's summary at a time
        self._stop = threading.Event()
        self.runner.start("hermes-web-sweeper", self._sweep_forever)

    # -- per browser session --------------------------------------------------------------

    def current_session(self, key: str) -> int | None:
        """The memory session id of this browser's live conversation, if it has one."""
        with self._lock:
            slot = self._slots.get(key)
            return slot.loop.session_id if slot else None

    def loop_of(self, key: str) -> AgentLoop | None:
        """This browser's live agent, if it has one (read-only uses: ``/api/context``)."""
        with self._lock:
            slot = self._slots.get(key)
            return slot.loop if slot else None

    def new_session(self, key: str) -> int:
        """Start a fresh conversation for this browser; the previous one is retired (summarized)."""
        with self._lock:
            old = self._slots.get(key)
            if old is not None and old.running.locked():
                raise Busy
            slot = self._add(key)
        if old is not None:
            self._retire(old)
        return slot.loop.session_id

    def resume(self, key: str, session_id: int) -> None:
        """Make stored session ``session_id`` this browser's conversation; the previous one is
        retired. Raises KeyError for an unknown session, ``Busy``, or ``InUse``."""
        if self.memory.get_session(session_id) is None:
            raise KeyError(session_id)
        with self._lock:
            old = self._slots.get(key)
            if old is not None and old.running.locked():
                raise Busy
            if old is not None and old.loop.session_id == session_id:
                return
            if any(k != key and s.loop.session_id == session_id for k, s in self._slots.items()):
                raise InUse
            try:
                self._add(key, session_id)
            except ValueError:  # forgotten meanwhile
                raise KeyError(session_id) from None
        if old is not None:
            self._retire(old)

    def start_turn(self, key: str) -> Turn:
        """Reserve a stream slot and this browser's loop (created on first use) for one turn."""
        if not self._streams.acquire(blocking=False):
            raise Saturated
        notice = ""
        try:
            with self._lock:
                slot = self._slots.get(key)
                if slot is not None and not slot.running.locked() and (
                        self.memory.get_session(slot.loop.session_id) is None):
                    # Forgotten elsewhere (the TUI's /forget, another browser): every message
                    # would fail with "no session N" until "New session"; start one instead.
                    notice = (f"Session {slot.loop.session_id} was forgotten elsewhere: this message "
                              "starts a new session.")
                    slot = None
                slot = slot or self._add(key)
                self._slots.move_to_end(key)
                free = slot.running.acquire(blocking=False)
                if not free and not slot.abandoned.is_set():
                    raise Busy
            if not free and not slot.running.acquire(timeout=ABANDONED_WAIT):
                raise Busy
            slot.abandoned.clear()
        except BaseException:
            self._streams.release()
            raise
        return Turn(slot, [slot.running, self._streams], self.runner, notice)

    def cancel(self, key: str) -> bool:
        """Cancel this browser's running turn; False when none is running."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None or not slot.running.locked():
            return False
        slot.loop.cancel()
        slot.questions.release()
        return True

    def answer(self, key: str, call_id: str, decision: str) -> bool:
        """This browser's answer to the approval question of call ``call_id``; False when none is open."""
        with self._lock:
            slot = self._slots.get(key)
        return slot is not None and slot.questions.answer(call_id, decision)

    def cancel_all(self) -> int:
        """Cancel every running turn (shutdown: their streams end now); returns how many."""
        with self._lock:
            running = [s for s in self._slots.values() if s.running.locked()]
        for slot in running:
            slot.loop.cancel()
        return len(running)

    def busy(self) -> bool:
        """A turn is running (background summaries wait for the quiet)."""
        with self._lock:
            return any(s.running.locked() for s in self._slots.values())

    def forget(self, key: str) -> None:
        """The browser logged out: stop its turn and retire its loop."""
        with self._lock:
            slot = self._slots.pop(key, None)
        if slot is not None:
            slot.loop.cancel()
            slot.questions.release()
            self._retire(slot)

    # -- housekeeping ---------------------------------------------------------------------

    def sweep(self) -> int:
        """Retire loops idle for longer than ``idle_seconds`` (on the runner's clock); how many."""
        now = self.runner.clock()
        with self._lock:
            idle = [k for k, s in self._slots.items()
                    if not s.running.locked() and now - s.last_used > self.idle_seconds]
            slots = [self._slots.pop(k) for k in idle]
        for slot in slots:
            self._retire(slot)
        return len(slots)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every retirement (and turn) started so far is done (tests); TimeoutError
        when some are still running after ``timeout`` seconds on the runner's clock."""
        if left := self.runner.wait(self.runner.clock() + timeout):
            raise TimeoutError(f"still running after {timeout:.0f} s: {', '.join(left)}")

    def close(self) -> None:
        """Stop background work, cancel running turns (and give them ``CLOSE_GRACE`` to store their
        last messages); retirements not yet summarizing are dropped (their sessions stay pending,
        written at the next start), one already summarizing ends before the store closes."""
        self._stop.set()
        with self._lock:
            slots, self._slots = list(self._slots.values()), OrderedDict()
        for slot in slots:  # SIGTERM at once; whatever is left gets SIGKILL after the grace
            self.runner.start(f"hermes-web-jobs-{slot.loop.session_id}", slot.loop.end_jobs, keep=True)
        self.runner.shutdown(self.runner.clock() + CLOSE_GRACE)
        with self._summarizing:  # a summary under way: its turn was cancelled, then ``summary_timeout``
            pass
        self.memory.close()
        self.mcp.close()

    # -- internals ------------------------------------------------------------------------

    def _add(self, key: str, session_id: int | None = None) -> _Slot:
        """Create and register a loop for ``key`` (a new session, or ``session_id`` resumed); call
        with ``self._lock`` held."""
        while len(self._slots) >= self.max_loops:
            victim = next((k for k, s in self._slots.items() if not s.running.locked()), None)
            if victim is None:
                break
            self._retire(self._slots.pop(victim))
        questions = WebQuestions(self.approval_seconds)
        policy = ApprovalPolicy.for_workspace(questions.ask, self.config.home, self.config.workspace,
                                              unasked=self._unasked)
        loop = build_agent(self.config, self.memory, self.skills, self.surface, session_id=session_id,
                           approver=policy)
        slot = _Slot(loop, questions, last_used=self.runner.clock())
        self._slots[key] = slot
        return slot

    def _unasked(self, name: str) -> bool:
        """HERMES_WEB_ENABLE_MCP is the approval of every server's tools (they run without asking)."""
        return self.config.web_enable_mcp and name not in APPROVAL_TOOLS

    def _retire(self, slot: _Slot) -> None:
        from hermes_tui.learning import pending

        # Its background jobs end now, not after a summary that may never come (shutting down).
        self.runner.start(f"hermes-web-jobs-{slot.loop.session_id}", slot.loop.end_jobs, keep=True)

        try:  # pending until written: a summary still queued at shutdown is written next start
            pending.mark(self.memory, slot.loop.session_id, told=True)
        except Exception:  # a read-only or closed store: nothing to keep it in
            log.debug("session %d not marked pending", slot.loop.session_id, exc_info=True)
        self.runner.start(f"hermes-web-summary-{slot.loop.session_id}", lambda: self._summarize(slot), keep=True)

    def _summarize(self, slot: _Slot) -> None:
        with self._summarizing:
            if self._stop.is_set():  # shutting down: the session stays pending for the next start
                log.info("not summarizing session %d: shutting down", slot.loop.session_id)
                return
            if not slot.running.acquire(timeout=RETIRE_WAIT):
                log.warning("session %d still busy after %.0f s; not summarized", slot.loop.session_id, RETIRE_WAIT)
                return
            try:
                slot.loop.close(timeout=self.summary_timeout)
            except Exception:  # one readable log line; the session stays pending
                log.exception("summarizing session %d failed", slot.loop.session_id)
            finally:
                slot.running.release()

    def _sweep_forever(self) -> None:
        # The period is real time (a tick, nothing waits on it); what counts as idle is read on
        # the runner's clock (``sweep``).
        while not self._stop.wait(SWEEP_EVERY):
            try:
                self.sweep()
            except Exception:  # keep sweeping
                log.exception("idle sweep failed")
