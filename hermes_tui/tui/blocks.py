"""The widgets a conversation is made of: user prompts, answer text, tool calls, notices."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Collapsible, Static

from hermes_tui.clock import Clock
from hermes_tui.events import Error, Event, ToolCallFinished, ToolCallStarted, TurnFinished, Usage
from hermes_tui.tui.format import duration, elapsed, plural, short_args, spinner_frame

if TYPE_CHECKING:
    from textual.timer import Timer

    from hermes_tui.conversation import ImageRef

RESULT_CHARS = 8_000  # what a result view shows; the model got the full (capped) text anyway
RESULT_LINES = 200


class UserMessage(Static):
    """What the user sent, verbatim (``markup=False``: prompts are not markup)."""

    def __init__(self, text: str) -> None:
        super().__init__(text, markup=False, classes="user-message")


def image_line(ref: ImageRef) -> NoticeLine:
    """The line under a user message naming an image that went with it."""
    from hermes_tui.textsafe import printable

    return NoticeLine(f"with the image {printable(ref.describe())}", "notice")


NOTICE_ICONS = {"notice": "ℹ", "error": "✗", "learned": "✦", "cancelled": "■", "receipt": "✓"}


class NoticeLine(Static):
    """One readable line: a notice, an error, a learned skill. Never a traceback."""

    def __init__(self, text: str, kind: str = "notice") -> None:
        icon = NOTICE_ICONS.get(kind, "ℹ")
        super().__init__(Content.assemble((icon, "bold"), " ", text), classes=f"notice-line {kind}")


def clip_result(text: str) -> str:
    """At most RESULT_LINES lines / RESULT_CHARS characters of a tool result, saying what was cut."""
    text = text.rstrip("\n")
    shown = "\n".join(text.split("\n")[:RESULT_LINES])[:RESULT_CHARS]
    hidden = len(text) - len(shown)
    return shown if hidden <= 0 else f"{shown}\n… ({hidden:,} more characters)"


def line_count(text: str) -> int:
    text = text.rstrip("\n")
    return text.count("\n") + 1 if text else 0


class ToolCallView(Vertical):
    """A tool call: name and short arguments, a spinner with elapsed time while it runs, then
    ✓/✗ with the duration and the result folded in a ``Collapsible``.

    Times come from the app's clock (fake in snapshot tests) so the screen is reproducible.
    """

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any], clock: Clock, *, id: str) -> None:
        super().__init__(id=id, classes="tool-call running")
        self.call_id = call_id
        self.tool_name = name
        self.summary = short_args(name, arguments)
        self.clock = clock
        self.started = clock()
        self.ok: bool | None = None  # None while running
        self.waiting = False  # an approval is being asked: no time is counted
        self.answered = False  # the approval was answered: the time counts from then
        self.seconds: float | None = None
        self._result: str | None = None
        self.restored = False
        self._ticker: Timer | None = None  # None until mounted: a quick tool may finish before that

    def compose(self) -> ComposeResult:
        yield Static(self._head(), classes="tool-head")
        if self._result is not None:
            yield self._output()

    def on_mount(self) -> None:
        if not self.finished:
            self._ticker = self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        self.query_one(".tool-head", Static).update(self._head(), layout=False)  # one line: repaint only

    def _head(self) -> Content:
        if self.ok is None:
            mark = (spinner_frame(self.clock()), "$accent")
            timing: str | None = "waiting for your approval" if self.waiting else elapsed(self.clock() - self.started)
        elif self.restored:
            mark, timing = ("•", "$text-muted") if self.ok else ("✗", "$error bold"), None
        else:
            mark = ("✓", "$success bold") if self.ok else ("✗", "$error bold")
            timing = duration(self.seconds or 0.0)
        parts: list[str | tuple[str, str]] = [mark, " ", (self.tool_name, "bold")]
        if self.summary:
            parts += ["  ", (self.summary, "$text-muted")]
        if timing is not None:
            parts += [(f"  · {timing}", "$text-muted")]
        return Content.assemble(*parts)

    def _output(self) -> Collapsible:
        result = self._result or ""
        lines = line_count(result)
        size = f" · {plural(lines, 'line')}" if lines else " · empty"
        body = Static(clip_result(result) or "(no output)", markup=False, classes="tool-result")
        return Collapsible(body, title=("output" if self.ok else "error") + size, collapsed=True,
                           classes="tool-output")

    def start_timer(self) -> None:
        """The approval was given (or refused): the call's time starts now."""
        self.waiting = False
        self.answered = True
        self.started = self.clock()

    @property
    def finished(self) -> bool:
        return self.ok is not None

    def _settle(self, result: str, ok: bool) -> None:
        self.ok = ok
        self._result = result
        self.set_class(False, "running")
        self.add_class("ok" if ok else "failed")

    async def finish(self, result: str, ok: bool) -> None:
        """Stop the spinner, show ✓/✗ and the duration, fold the result in."""
        if self._ticker is not None:
            self._ticker.stop()
        self.seconds = max(self.clock() - self.started, 0.0)
        self._settle(result, ok)
        self._tick()
        await self.mount(self._output())

    async def subagent(self, session_id: int) -> SubagentView:
        """The block of the sub-agent this call runs (mounted below the call's line at its first event)."""
        for view in self.query(SubagentView):
            if view.session_id == session_id:
                return view
        view = SubagentView(session_id)
        await self.mount(view, after=self.query_one(".tool-head"))
        return view

    def restore(self, result: str, ok: bool = True) -> None:
        """Before mounting: a call from a stored session (its duration was not kept; a denied or
        cancelled call shows ✗)."""
        self.restored = True
        self._settle(result, ok)


ENDINGS = {"done": "done", "cancelled": "cancelled", "max_steps": "stopped at its step cap", "error": "failed"}
"""How a sub-agent's turn ended, as its block says it (``TurnFinished.stopped_reason``)."""


class SubagentView(Vertical):
    """A sub-agent (``delegate``) under its call: what it runs now, its steps (model calls) and
    tokens; its tool calls one per line, folded (``ctrl+o`` unfolds the last one shown)."""

    def __init__(self, session_id: int) -> None:
        super().__init__(classes="subagent")
        self.session_id = session_id
        self.steps = 0
        self.tokens = 0
        self.current: str | None = None  # the tool it runs now
        self.ended: str | None = None  # how its turn ended
        self.lines: list[str] = []  # one per tool call: ✓/✗/… name summary

    def compose(self) -> ComposeResult:
        yield Static(self.head(), classes="subagent-head")
        yield Collapsible(Static(self._steps_text(), markup=False, classes="tool-result"),
                          title=self._steps_title(), collapsed=True, classes="tool-output subagent-steps")

    def head(self) -> Content:
        state = (ENDINGS.get(self.ended, self.ended) if self.ended
                 else f"running {self.current}" if self.current else "thinking…")
        return Content.assemble(("↳ sub-agent", "bold"), (f"  session {self.session_id} · {plural(self.steps, 'step')}"
                                                         f" · {self.tokens:,} tokens · ", "$text-muted"), state)

    def _steps_title(self) -> str:
        return f"steps · {plural(len(self.lines), 'tool call')}"

    def _steps_text(self) -> str:
        return "\n".join(self.lines) or "(no tool calls yet)"

    def show(self, event: Event) -> None:
        """Take one of the sub-agent's own events into the block."""
        if isinstance(event, Usage) and (event.prompt_tokens or event.completion_tokens):
            self.steps += 1
            self.tokens += event.prompt_tokens + event.completion_tokens
        elif isinstance(event, ToolCallStarted):
            self.current = f"{event.name} {short_args(event.name, event.arguments)}".strip()
            self.lines.append(f"… {self.current}")
        elif isinstance(event, ToolCallFinished):
            if self.lines and self.current is not None:
                self.lines[-1] = f"{'✓' if event.ok else '✗'} {self.current}"
            self.current = None
        elif isinstance(event, Error):
            self.lines.append(f"✗ {event.message}")
        elif isinstance(event, TurnFinished):
            self.ended, self.current = event.stopped_reason, None
        else:
            return
        if self.is_mounted:
            self.query_one(".subagent-head", Static).update(self.head())
            steps = self.query_one(".subagent-steps", Collapsible)
            steps.title = self._steps_title()
            steps.query_one(".tool-result", Static).update(self._steps_text())
