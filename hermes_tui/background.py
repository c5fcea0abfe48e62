"""The one runner of work a surface does off its own thread: started, cancelled and waited for
in one place.

Its own small module (threading and logging only) so the TUI can build it before its first
frame. The agent's turns (``agent.runtime.RunningTurn``: a turn, ``/learn``, ``/compact``) start
here too, so ``shutdown`` is the one place a surface stops its agent work and waits for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from hermes_tui.clock import POLL, Clock

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class _Job:
    """A job the runner tracks: ``keep`` ones (a session's summary) are waited for at exit, those
    with a ``cancel`` are asked to stop."""

    thread: threading.Thread
    keep: bool
    cancel: Callable[[], None] | None


class Background:
    """Each job runs on a named daemon thread (a job still running never keeps the process alive);
    a failure is logged, never raised into the surface.

    ``keep=True`` jobs (a session's summary) are waited for at exit; jobs with a ``cancel`` (agent
    turns) are cancelled at exit, then waited for as well; the rest (warm-ups, usage and undo
    writes) are left to end with the process. Waits run on the surface's injectable clock.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._jobs: list[_Job] = []
        self._lock = threading.Lock()

    def start(self, name: str, job: Callable[[], object], *, keep: bool = False,
              cancel: Callable[[], None] | None = None) -> threading.Thread:
        def run() -> None:
            try:
                job()
            except Exception:  # background work never takes the surface down
                log.exception("%s failed", name)

        thread = threading.Thread(target=run, name=name, daemon=True)
        if keep or cancel is not None:
            with self._lock:
                self._jobs = [j for j in self._jobs if j.thread.is_alive()] + [_Job(thread, keep, cancel)]
        thread.start()
        return thread

    def running(self) -> list[str]:
        """The jobs waited for at exit (kept or cancellable) not finished yet, by name."""
        return [job.thread.name for job in self._waited()]

    def cancel(self) -> None:
        """Ask every cancellable job still running to stop (the first half of ``shutdown``, for a
        surface that waits on its own event loop: the TUI polls ``running``)."""
        for job in self._waited():
            if job.cancel is not None:
                job.cancel()

    def shutdown(self, deadline: float) -> list[str]:
        """Cancel the cancellable jobs, then wait for them and the kept ones until ``deadline``
        (on ``clock``); the names still running."""
        self.cancel()
        return self.wait(deadline)

    def wait(self, deadline: float) -> list[str]:
        """Wait, cancelling nothing, for the kept and cancellable jobs until ``deadline`` (on
        ``clock``); the names still running."""
        while (left := self._waited()) and (wait := deadline - self.clock()) > 0:
            left[0].thread.join(min(wait, POLL))
        return self.running()

    def _waited(self) -> list[_Job]:
        with self._lock:
            return [job for job in self._jobs if job.thread.is_alive()]
