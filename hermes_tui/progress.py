"""How long work says how far it got: one small seam between the work and whoever shows it.

The schema upgrade's reindex, a first index of a big skills library, ``skills import`` and
``doctor`` take a ``Progress`` and report in chunks (never per row: the hot loops stay as fast).
What shows it is chosen by the caller: nothing (``NO_PROGRESS``, the default), a percentage with
the time left redrawn on a terminal's stderr (``TerminalProgress``; a pipe gets nothing, so logs
and scripts stay clean), or a bar in the TUI (tui/progress_bar.py posts messages; the work runs
on a worker thread, which never touches widgets). The time left comes from one injected clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, TextIO

from hermes_tui.clock import Clock
from hermes_tui.textsafe import printable

REDRAW_SECONDS = 0.2
"""A terminal line is redrawn at most this often, however often the work reports."""


class Progress(Protocol):
    """Told by long work: ``start`` once with the amount of work, ``advance`` as parts are
    finished, ``done`` at the end (also on failure). Called from any one thread."""

    def start(self, label: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def done(self) -> None: ...


class _Silent:
    """Nobody is watching (tests, pipes, library callers)."""

    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


NO_PROGRESS: Progress = _Silent()


@dataclass
class Tally:
    """Where a piece of work stands, and what that says about the time it still needs."""

    label: str
    total: int
    started: float
    completed: int = 0

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(self.completed / self.total, 1.0)

    def seconds_left(self, now: float) -> float | None:
        """At the rate so far; None until some work is done (no rate to go by yet)."""
        spent = now - self.started
        if self.completed <= 0 or spent <= 0:
            return None
        return max(self.total - self.completed, 0) * spent / self.completed

    def line(self, now: float, *, finished: bool = False) -> str:
        """``Reindexing memory  42% · about 1 m 20 s left``; finished, the time it took."""
        left = self.seconds_left(now)
        if finished:
            estimate = f" · took {time_left(now - self.started)}"
        elif left is None or self.completed >= self.total:
            estimate = ""
        else:
            estimate = f" · about {time_left(left)} left"
        return f"{printable(self.label)}  {int(self.fraction * 100):3d}%{estimate}"


def time_left(seconds: float) -> str:
    """Rounded up to whole seconds: ``5 s``, ``2 m 05 s``, ``1 h 03 m``."""
    whole = max(int(seconds + 0.999), 1)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} m {whole % 60:02d} s"
    return f"{whole // 3600} h {whole // 60 % 60:02d} m"


class TerminalProgress:
    """One line on a terminal, redrawn in place (``\\r``) at most every ``REDRAW_SECONDS``;
    at ``done`` it says how far the work got and how long it took, and ends."""

    def __init__(self, stream: TextIO, clock: Clock = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.tally: Tally | None = None
        self._drawn = float("-inf")
        self._width = 0

    def start(self, label: str, total: int) -> None:
        self.tally = Tally(label, total, self.clock())
        self._draw(self.tally.started)

    def advance(self, n: int = 1) -> None:
        if self.tally is None:
            return
        self.tally.completed += n
        now = self.clock()
        if now - self._drawn >= REDRAW_SECONDS:
            self._draw(now)

    def done(self) -> None:
        if self.tally is None:
            return
        self._draw(self.clock(), finished=True)
        self.stream.write("\n")
        self.stream.flush()
        self.tally, self._width = None, 0

    def _draw(self, now: float, *, finished: bool = False) -> None:
        assert self.tally is not None
        line = self.tally.line(now, finished=finished)
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width, self._drawn = len(line), now


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def for_stderr(stream: TextIO, clock: Clock = time.monotonic) -> Progress:
    """A terminal line on a terminal; nothing on a pipe or a file (logs and scripts stay clean)."""
    return TerminalProgress(stream, clock) if is_terminal(stream) else NO_PROGRESS
