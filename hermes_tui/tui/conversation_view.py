"""The conversation's scroll view, a component that owns what it shows: the answer text streamed
into one Markdown widget per block and flushed at a bounded rate, the tool call views by call id,
notices, and the folding of answers far from the view.

Like Textual's ``MarkdownStream`` owns its stream, this widget owns the stream state (the open
block, the pending text, the flush timer, the cleaner and splitter); the chat pane hands it text
and asks it to end a block, never reaching inside. What changes the stream or the folds runs
under one lock: the chat's events arrive on the chat pane's task, the timed flushes and fold
walks on this widget's own, and neither may see the other's half-done block. A long answer continues in a new widget at a
paragraph break (``splitter``), so no append re-renders a huge widget; answers more than
``FOLD_SCREENS`` screens from the view keep their height but lose their widgets (``answer.py``),
and get them back when the view comes near. The widget modules (``blocks``, ``answer``) are
imported where first used, to keep them off the start-up path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

from hermes_tui.clock import Clock
from hermes_tui.conversation import ChatMessage, Status
from hermes_tui.textsafe import StreamCleaner, printable, printable_data
from hermes_tui.tui.format import widget_id
from hermes_tui.tui.splitter import BlockSplitter

if TYPE_CHECKING:
    from textual._types import CallbackType
    from textual.timer import Timer
    from textual.widgets.markdown import MarkdownStream

    from hermes_tui.tui.answer import AnswerText
    from hermes_tui.tui.blocks import ToolCallView

RESTORED_MESSAGES = 200  # a resumed session shows its newest messages; Sessions has them all
FLUSH_RATE = 10  # Markdown appends per second at most while an answer streams
UPDATE_SHARE = 4  # wait at least 4x the last append's cost: appends take <= ~1/4 of the app thread
FOLD_SCREENS = 1  # answers further than this many screens from the view are folded (answer.py)
FOLD_TRIES = 50  # refreshes an answer being rebuilt is waited for before its fold is given up

TURN_END_NOTICES = {
    Status.CANCELLED: ("Cancelled.", "cancelled"),
    Status.FAILED: ("This turn failed before an answer.", "error"),
}
"""How a resumed view marks a turn that did not end with an answer (its user message's status)."""


class Conversation(VerticalScroll):
    """The conversation. ``scroll_end`` (End, or code) anchors the view again, and the compositor
    then moves an anchored view with ``set_reactive``, which no ``scroll_y`` watcher hears: when
    the scroll is done it posts ``Moved``, so far answers fold after it too."""

    class Moved(Message):
        """The view went to the end of the conversation."""

    class FlushDue(Message):
        """Time to hand the pending answer text to the Markdown stream."""

    def __init__(self, clock: Clock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = clock  # the tool calls' timers (fake in snapshot tests)
        self._block: AnswerText | None = None
        self._stream: MarkdownStream | None = None
        self._pending_text: list[str] = []
        self._flush_timer: Timer | None = None
        self._tools: dict[str, ToolCallView] = {}
        self._cleaner = StreamCleaner()
        self._splitter = BlockSplitter()
        self._folded_width = 0  # the width answers were folded at
        self._fold_queued = False  # a fold walk is on its way (fold_soon)
        self._lock = asyncio.Lock()  # one change of the stream or the folds at a time (docstring)

    def on_mount(self) -> None:
        self.anchor()  # follow the stream until the user scrolls up
        self.watch(self, "scroll_y", self._view_moved, init=False)
        self.watch(self, "virtual_size", self._laid_out, init=False)

    def scroll_end(self, *, on_complete: CallbackType | None = None, **kwargs: Any) -> None:
        def moved() -> None:
            self.post_message(self.Moved())
            if on_complete is not None:
                self.call_next(on_complete)

        super().scroll_end(on_complete=moved, **kwargs)

    # -- answer text: one Markdown widget per block, fed through a MarkdownStream

    # While text keeps coming it is handed to the stream at most FLUSH_RATE times a second, and
    # less often as appends get dearer: each one re-parses the open block, remounts its last
    # widget, re-lays out and repaints the conversation (tens of ms for a long one), so appending
    # every token of a fast stream would starve the keyboard and the worker thread that parses
    # the stream. When the stream pauses or ends, the text is flushed at once.

    def clean(self, delta: str) -> str:
        """A streamed delta made inert; a control sequence split across deltas is held until it
        is whole, then removed (``StreamCleaner``)."""
        return self._cleaner.feed(delta)

    async def write(self, text: str) -> None:
        """Add cleaned answer text to the open block (opening one if needed)."""
        async with self._lock:
            await self._write(text)

    async def _write(self, text: str) -> None:
        self._pending_text.append(text)
        if self._stream is None:
            await self._open_block()
            await self._flush()  # the first words show at once
        elif self._flush_timer is None:
            cost = self._block.update_cost if self._block is not None else 0.0
            delay = max(1 / FLUSH_RATE, UPDATE_SHARE * cost)
            self._flush_timer = self.set_timer(delay, lambda: self.post_message(self.FlushDue()))

    async def on_conversation_flush_due(self, message: FlushDue) -> None:
        message.stop()
        async with self._lock:
            self._flush_timer = None
            await self._write_pending()

    async def flush(self) -> None:
        """Hand the pending text to the stream now."""
        async with self._lock:
            await self._flush()

    async def _flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        await self._write_pending()

    async def _write_pending(self) -> None:
        """Hand the text to the stream; a long answer continues in a new widget at a paragraph
        break (``splitter``), so no append ever re-renders a huge widget."""
        text, self._pending_text = "".join(self._pending_text), []
        if not text or self._stream is None:
            return
        *ended, rest = self._splitter.feed(text)
        for piece in ended:
            await self._stream.write(piece)
            await self._close_stream()
            await self._open_block()
        if rest:
            await self._stream.write(rest)

    async def _open_block(self) -> None:
        # Markdown loads with the first answer
        from hermes_tui.tui.answer import AnswerText

        self._block = AnswerText(classes="answer")
        await self.mount(self._block)
        self._stream = AnswerText.get_stream(self._block)

    async def _close_stream(self) -> None:
        stream, self._stream, self._block = self._stream, None, None
        if stream is not None:
            await stream.stop()

    async def end_answer(self) -> None:
        """The answer block in progress ends (a tool call, a notice of the turn, its end)."""
        async with self._lock:
            await self._end_answer()

    async def _end_answer(self) -> None:
        if held := self._cleaner.flush():
            self._pending_text.append(held)
        await self._flush()
        await self._close_stream()
        self._splitter = BlockSplitter()

    # -- tool calls

    async def add_tool_call(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallView:
        """End the answer block and show a running call."""
        from hermes_tui.tui.blocks import ToolCallView

        async with self._lock:
            await self._end_answer()
            view = ToolCallView(call_id, name, arguments, self.clock, id=self._tool_widget_id(call_id))
            self._tools[call_id] = view
            await self.mount(view)
        return view

    def tool_call(self, call_id: str) -> ToolCallView | None:
        return self._tools.get(call_id)

    def tool_calls(self) -> list[ToolCallView]:
        """Every live call shown since the view was last cleared, oldest first."""
        return list(self._tools.values())

    def _tool_widget_id(self, call_id: str) -> str:
        base = candidate = widget_id("tool", call_id)
        number = 1
        while self.query(f"#{candidate}"):
            number += 1
            candidate = f"{base}-{number}"
        return candidate

    # -- other content

    async def add_notice(self, text: str, kind: str = "notice") -> None:
        from hermes_tui.tui.blocks import NoticeLine

        await self.mount(NoticeLine(text, kind))

    async def add_help(self, markdown: str) -> None:
        from hermes_tui.tui.answer import HelpText

        await self.mount(HelpText(markdown, classes="help"))

    async def drop_last_turn(self) -> None:
        """Remove the last user message and what followed it (/undo)."""
        from hermes_tui.tui.blocks import UserMessage

        children = list(self.children)
        starts = [i for i, child in enumerate(children) if isinstance(child, UserMessage)]
        if starts:
            await self.remove_children(children[starts[-1]:])

    async def clear(self) -> None:
        """Empty the view for a new or resumed session."""
        async with self._lock:
            await self._end_answer()
            self._tools.clear()
            await self.remove_children()
        self.anchor()

    async def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored conversation (``/resume``): text, and tool calls with their results;
        each message's status marks calls that did not succeed ✗ and turns that ended early."""
        from hermes_tui.tui.answer import AnswerText
        from hermes_tui.tui.blocks import NoticeLine, ToolCallView, UserMessage, image_line

        # Stored text is as hostile as live text: it passes the same sanitizer.
        results = {m.tool_call_id: (printable(m.content or ""), m.status is Status.OK)
                   for m in messages if m.role == "tool" and m.tool_call_id}
        shown = [m for m in messages if m.role in ("user", "assistant")]
        hidden = len(shown) - RESTORED_MESSAGES
        if hidden > 0:
            await self.add_notice(f"{hidden} earlier messages are in the Sessions pane.")
        widgets: list[Widget] = []
        turn_end: NoticeLine | None = None
        for message in shown[-RESTORED_MESSAGES:]:
            if message.role == "user":
                if turn_end is not None:
                    widgets.append(turn_end)
                widgets.append(UserMessage(printable(message.content or "")))
                widgets.extend(image_line(ref) for ref in message.images)
                mark = TURN_END_NOTICES.get(message.status)
                turn_end = NoticeLine(*mark) if mark else None
                continue
            if message.content:
                widgets.append(AnswerText(printable(message.content), classes="answer"))
            for call in message.calls:
                view = ToolCallView(call.id, printable(call.name),
                                    printable_data(dict(call.arguments) if call.valid else {"raw": call.raw}),
                                    self.clock, id=self._tool_widget_id(call.id) + f"-r{len(widgets)}")
                result, ok = results.get(call.id, ("(no result stored)", True))
                view.restore(result, ok=ok)
                widgets.append(view)
        if turn_end is not None:
            widgets.append(turn_end)
        await self.mount_all(widgets)
        self.anchor()

    # -- folding: answers far from the view keep their height but lose their widgets (answer.py)

    def _answers(self, folded: bool, far: bool) -> Iterator[AnswerText]:
        """The answers, folded or not, more (or less) than FOLD_SCREENS screens from the view;
        never the one streaming.

        Positions are summed from the children's heights, not asked of the compositor: asking
        (``virtual_region``) re-lays out the whole screen whenever a layout is pending.
        """
        margin = self.size.height * FOLD_SCREENS
        near_top, near_bottom = self.scroll_y - margin, self.scroll_y + self.size.height + margin
        y = 0
        for child in self.children:
            top = y + child.styles.margin.top
            y = top + child.outer_size.height + child.styles.margin.bottom
            # Only an AnswerText has ``folded`` (its module loads with the first answer, not here).
            if (getattr(child, "folded", None) is folded and child is not self._block
                    and (y < near_top or top > near_bottom) == far):
                yield cast("AnswerText", child)

    def fold_soon(self, tries: int = FOLD_TRIES, *, after_refresh: bool = False) -> None:
        """Walk the answers once the events in hand are handled; the many layouts and scrolls of
        a stream ask for one walk at a time."""
        if not self._fold_queued:
            self._fold_queued = True
            (self.call_after_refresh if after_refresh else self.call_later)(self._fold_far_answers, tries)

    async def _fold_far_answers(self, tries: int) -> None:
        """Fold what is far from the view; one still being rebuilt or laid out is tried again
        after the next refresh (nothing else may come to ask), a bounded number of times."""
        self._fold_queued = False
        async with self._lock:
            waiting = [answer for answer in list(self._answers(folded=False, far=True)) if not await answer.fold()]
        if waiting and tries:
            self.fold_soon(tries - 1, after_refresh=True)

    def _laid_out(self) -> None:
        """A layout changed the conversation's size (new text, a resume, a new width). By then the
        compositor has moved an anchored view to the new end, which it does with ``set_reactive``:
        no ``scroll_y`` watcher hears of that move, so this is when far answers can be told apart."""
        self.fold_soon()

    def _view_moved(self) -> None:
        """The user scrolled: answers the view came near get their widgets back, those it left fold.
        (An anchored view moves without telling watchers: following new text, see ``_laid_out``;
        after End, ``Moved`` calls this.)"""
        for answer in self._answers(folded=True, far=False):
            self.call_later(self._unfold, answer)
        self.fold_soon()

    def on_conversation_moved(self, message: Moved) -> None:
        message.stop()
        self._view_moved()

    def on_resize(self) -> None:
        """A new width re-wraps every line: folded heights no longer hold."""
        if self.outer_size.width != self._folded_width:
            self._folded_width = self.outer_size.width
            for child in self.children:
                if getattr(child, "folded", False):
                    self.call_later(self._unfold, cast("AnswerText", child))

    async def _unfold(self, answer: AnswerText) -> None:
        async with self._lock:
            await answer.unfold()
