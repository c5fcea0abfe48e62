"""Work a surface runs off its own thread, started and waited for in one place.

Its own small module (threading and logging only) so the TUI can build it before its first
frame; the agent's turns have their own runner (``agent.runtime.RunningTurn``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hermes_tui.clock import Clock

log = logging.getLogger(__name__)


class Background:
    """The one place a surface starts work off its own thread (a session's summary, a usage or
    undo write, a warm-up), and the one place that waits for what must finish at exit.

    Each job runs on a named daemon thread (a job still running never keeps the process alive);
    a failure is logged, never raised into the surface. ``keep=True`` jobs (summaries) are what
    ``shutdown`` and ``running`` wait for, on the surface's injectable clock.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._kept: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, name: str, job: Callable[[], object], *, keep: bool = False) -> threading.Thread:
        def run() -> None:
            try:
                job()
            except Exception:  # noqa: BLE001 - background work never takes the surface down
                log.exception("%s failed", name)

        thread = threading.Thread(target=run, name=name, daemon=True)
        if keep:
            with self._lock:
                self._kept = [t for t in self._kept if t.is_alive()] + [thread]
        thread.start()
        return thread

    def running(self) -> list[str]:
        """The kept jobs not finished yet, by name."""
        with self._lock:
            return [t.name for t in self._kept if t.is_alive()]

    def shutdown(self, deadline: float) -> list[str]:
        """Wait for the kept jobs until ``deadline`` (on ``clock``); the names still running."""
        with self._lock:
            kept = list(self._kept)
        for thread in kept:
            thread.join(max(0.0, deadline - self.clock()))
        return self.running()
