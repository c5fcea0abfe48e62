"""Long work's progress in the TUI: a bar above the status line while it runs.

The work (the memory upgrade's reindex, a first index of a big skills library) runs on a worker
thread and is handed a ``PostedProgress``, which only posts ``ProgressReport`` messages; the app
draws them (``ProgressPanel``), computing the time left from its own clock.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import ProgressBar, Static

from hermes_tui.clock import Clock
from hermes_tui.progress import Tally


class ProgressReport(Message):
    """How far a piece of long work got: ``completed`` of ``total``; ``finished`` at the end."""

    def __init__(self, label: str, total: int, completed: int, finished: bool = False) -> None:
        super().__init__()
        self.label, self.total, self.completed, self.finished = label, total, completed, finished


class PostedProgress:
    """A ``Progress`` for a worker thread: every call becomes a message (thread-safe to post);
    the work reports in chunks, so these stay few."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        self.post = post
        self._label, self._total, self._completed = "", 0, 0

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._completed = label, total, 0
        self.post(ProgressReport(label, total, 0))

    def advance(self, n: int = 1) -> None:
        self._completed += n
        self.post(ProgressReport(self._label, self._total, self._completed))

    def done(self) -> None:
        self.post(ProgressReport(self._label, self._total, self._completed, finished=True))


class ProgressPanel(Horizontal):
    """One line: what runs, a bar, the percentage and the time left."""

    DEFAULT_CSS = """
    ProgressPanel {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    ProgressPanel #progress-text {
        width: auto;
        margin-right: 2;
    }
    ProgressPanel ProgressBar, ProgressPanel Bar {
        width: 1fr;  /* the text whole, the bar in what is left */
    }
    """

    def __init__(self, clock: Clock, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Textual's own keyword arguments, passed on
        self.clock = clock
        self.tally: Tally | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="progress-text", markup=False)
        yield ProgressBar(show_percentage=False, show_eta=False)

    def show(self, report: ProgressReport) -> None:
        """Draw ``report``; a new label (or a first report) starts the clock again."""
        now = self.clock()
        if self.tally is None or self.tally.label != report.label or report.completed == 0:
            self.tally = Tally(report.label, report.total, now)
        self.tally.completed = report.completed
        self.query_one(ProgressBar).update(total=max(report.total, 1), progress=report.completed)
        self.query_one("#progress-text", Static).update(self.tally.line(now))
