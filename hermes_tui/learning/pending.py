"""Session summaries that could not be written when their session closed, written later.

A session is marked pending before its summary is asked for and unmarked when the summary is
stored (or there is nothing to summarize), in the store itself: whatever ends the process first
(the TUI's quit grace, a ``-p`` run exiting, kill -9), the mark survives. One-shot ``-p`` sessions
are marked without being asked for at all, so the turn is not kept waiting. The warm helper
(``hermes_tui.warm``) writes pending summaries while it is idle; without it, the next start of the
TUI or the web, and ``hermes-tui doctor``, do it in the background (``Writer``).

Summaries are streamed even though nobody watches them arrive: giving up on one (a deadline, the
user starting a turn, the process ending) then closes its connection, and the server stops
generating at its next token instead of keeping a one-at-a-time local server busy.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hermes_tui.llm import StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.memory.schema import INDEX_COLUMN

if TYPE_CHECKING:
    from hermes_tui.config import Config
    from hermes_tui.llm import LLMClient, ModelHost
    from hermes_tui.memory.store import MemoryStore

log = logging.getLogger(__name__)

BACKGROUND_TIMEOUT = 300.0  # a slow local model may need minutes for a long session; nobody waits
POLL = 0.2  # seconds between checks of "the user is busy" while a summary is written
TOLD = "summary pending, will be written next time"


class Outcome(enum.Enum):
    WRITTEN = "written"
    NOTHING = "nothing to summarize"
    REFUSED = "refused"  # the provider said no for good (a bad key, a refused request): not retried
    LEFT = "left pending"  # abandoned, timed out or unreachable: tried again later


def mark(store: MemoryStore, session_id: int, *, told: bool = False) -> None:
    """Mark ``session_id`` pending (no change if it is already). ``told``: nobody needs telling
    (a one-shot session, or one handed to the helper)."""
    with store._write() as conn:  # one small table of the store's own file
        conn.execute("INSERT OR IGNORE INTO pending_summaries (session_id, since, told) VALUES (?, ?, ?)",
                     (session_id, time.time(), int(told)))


def pending(store: MemoryStore, *, exclude: Iterable[int] = ()) -> list[int]:
    """Pending sessions, oldest first."""
    skip = set(exclude)
    with store._read() as conn:
        rows = conn.execute("SELECT session_id FROM pending_summaries ORDER BY since, session_id").fetchall()
    return [r[0] for r in rows if r[0] not in skip]


def finish(store: MemoryStore, session_id: int, summary: str | None, title: str | None = None) -> None:
    """Store ``summary`` (when there is one) and unmark the session, in one transaction; ``title``
    names the session unless it has a title already."""
    with store._write() as conn:
        if summary:
            conn.execute(  # the index columns as the store fills them (store.INDEX_COLUMN)
                f"UPDATE sessions SET summary = ?1, index_summary = {INDEX_COLUMN}(?1),"
                f" index_title = CASE WHEN title IS NULL THEN {INDEX_COLUMN}(?2) ELSE index_title END,"
                " title = coalesce(title, ?2) WHERE id = ?3", (summary, title, session_id))
        conn.execute("DELETE FROM pending_summaries WHERE session_id = ?", (session_id,))


def tell(store: MemoryStore) -> str | None:
    """The line telling the user about pending summaries they were not told about yet, once."""
    with store._write() as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT session_id FROM pending_summaries WHERE told = 0 ORDER BY session_id").fetchall()]
        conn.execute("UPDATE pending_summaries SET told = 1 WHERE told = 0")
    if not ids:
        return None
    which = ("session " if len(ids) == 1 else "sessions ") + ", ".join(str(i) for i in ids)
    return f"{TOLD} ({which})."


class _Streamed:
    """``Completer`` (curator.py) over a stream that ``cancel`` or the deadline closes."""

    def __init__(self, llm: LLMClient, cancel: threading.Event) -> None:
        self.llm = llm
        self.cancel = cancel
        self.error: LLMError | None = None

    def complete(self, messages: list[dict[str, Any]], *, timeout: float = BACKGROUND_TIMEOUT,
                 cancel: threading.Event | None = None) -> str:
        """``cancel`` (the curator's own, when it passes one) abandons the stream too."""
        if cancel is not None and cancel.is_set():
            self.cancel.set()
        deadline = threading.Timer(timeout, self.cancel.set)
        deadline.daemon = True
        deadline.start()
        try:
            for item in self.llm.stream(messages, None, self.cancel):
                if isinstance(item, StreamResult):
                    if item.cancelled:
                        raise LLMError("the summary was abandoned before it was complete", retryable=True)
                    return item.text
            raise LLMError("the summary stream ended without a result", retryable=True)
        except LLMError as exc:
            self.error = exc
            raise
        finally:
            deadline.cancel()


def write(store: MemoryStore, llm: LLMClient, session_id: int, *, timeout: float = BACKGROUND_TIMEOUT,
          cancel: threading.Event | None = None) -> tuple[Outcome, str | None]:
    """Summarize one session now and unmark it, unless the attempt is left for later."""
    from hermes_tui.learning.curator import split_title, summarize_session  # not in a run that leaves it
    messages = store.get_messages(session_id)
    if not any(m.role == "user" for m in messages):
        finish(store, session_id, None)
        return Outcome.NOTHING, None
    completer = _Streamed(llm, cancel or threading.Event())
    summary = summarize_session(completer, messages, timeout=timeout)
    if summary:
        note, title = split_title(summary)  # the title the summary ends with names the session
        finish(store, session_id, note, title)
        return Outcome.WRITTEN, note
    error = completer.error
    if error is None or not error.retryable:  # an empty answer, a refused key: asking again won't help
        finish(store, session_id, None)
        return Outcome.REFUSED, None
    return Outcome.LEFT, None


def close_session(store: MemoryStore, llm: LLMClient, session_id: int, timeout: float, *,
                  cancel: threading.Event | None = None) -> str | None:
    """A session's close: marked pending first, so that a summary that does not finish in
    ``timeout`` (or whose process ends first) is written later; returns the summary."""
    if store.read_only:  # browsing only: nothing can be stored, not even the mark
        return None
    if not store.get_messages(session_id):
        finish(store, session_id, None)  # marked by whoever retired it (the web), nothing to write
        return None
    mark(store, session_id)
    outcome, summary = write(store, llm, session_id, timeout=timeout, cancel=cancel)
    if outcome is Outcome.LEFT:
        log.info("session %s: summary left pending", session_id)
    return summary


class Writer:
    """Writes a store's pending summaries on a daemon thread, one at a time, giving way to the user.

    While ``busy()`` is true (a turn is running) no summary starts, and one being written is
    abandoned (its connection closed) and tried again when the user is done.
    """

    def __init__(self, store: MemoryStore, llm: LLMClient, *, busy: Callable[[], bool] = lambda: False,
                 exclude: Iterable[int] = (), timeout: float = BACKGROUND_TIMEOUT) -> None:
        self.store = store
        self.llm = llm
        self.busy = busy
        self.exclude = set(exclude)
        self.timeout = timeout
        self.written = 0
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hermes-pending-summaries", daemon=True)

    def start(self) -> Writer:
        self._thread.start()
        return self

    def stop(self, wait: float = 0.0) -> None:
        """Abandon the summary being written (it stays pending) and end."""
        self._stop.set()
        if wait:
            self._thread.join(wait)

    def _run(self) -> None:
        try:
            for session_id in pending(self.store, exclude=self.exclude):
                while not self._stop.is_set():
                    outcome = self._attempt(session_id)
                    if outcome is not None:
                        break
                if self._stop.is_set():
                    return
        except Exception:  # a closed or damaged store: the next start tries again
            log.warning("pending summaries: stopped", exc_info=True)
        finally:
            self.done.set()

    def _attempt(self, session_id: int) -> Outcome | None:
        """One try; None when it gave way to the user (and should be tried again)."""
        while self.busy():
            if self._stop.wait(POLL):
                return None
        cancel = threading.Event()
        gave_way = threading.Event()
        finished = threading.Event()

        def watch() -> None:
            while not finished.wait(POLL):
                if self._stop.is_set() or self.busy():
                    gave_way.set()
                    cancel.set()
                    return

        threading.Thread(target=watch, name="hermes-pending-watch", daemon=True).start()
        try:
            outcome, _ = write(self.store, self.llm, session_id, timeout=self.timeout, cancel=cancel)
        finally:
            finished.set()
        if outcome is Outcome.LEFT and gave_way.is_set():
            return None
        if outcome is Outcome.WRITTEN:
            self.written += 1
        log.info("pending summary of session %s: %s", session_id, outcome.value)
        return outcome


def start_background(config: Config, store: MemoryStore, *, busy: Callable[[], bool] = lambda: False,
                     host: ModelHost | None = None) -> Writer | None:
    """At a surface's start: write the store's pending summaries in the background (None when
    there are none, or nothing can write them: a read-only store, no API key)."""
    if store.read_only or not config.has_api_key or not pending(store):
        return None
    from hermes_tui.llm import LLMClient

    return Writer(store, LLMClient(config, host), busy=busy).start()
