"""The chat pane's answer text, mixed into ``ChatPane`` (``chat.py``): streamed into one Markdown
widget per block, flushed at a bounded rate, and folded when far from the view.

A long answer continues in a new widget at a paragraph break (``splitter``), so no append
re-renders a huge widget; answers more than ``FOLD_SCREENS`` screens from the view keep their
height but lose their widgets (``answer.py``), and get them back when the view comes near.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hermes_tui.tui.splitter import BlockSplitter

if TYPE_CHECKING:
    from hermes_tui.tui.answer import AnswerText
    from hermes_tui.tui.chat import ChatPane, Conversation

FLUSH_RATE = 10  # Markdown appends per second at most while an answer streams
UPDATE_SHARE = 4  # wait at least 4x the last append's cost: appends take <= ~1/4 of the app thread
FOLD_SCREENS = 1  # answers further than this many screens from the view are folded (answer.py)
FOLD_TRIES = 50  # refreshes an answer being rebuilt is waited for before its fold is given up


class AnswerFlow:
    """Answer text and folding, for ``ChatPane``."""

    # -- answer text: one Markdown widget per block, fed through a MarkdownStream

    # While text keeps coming it is handed to the stream at most FLUSH_RATE times a second, and
    # less often as appends get dearer: each one re-parses the open block, remounts its last
    # widget, re-lays out and repaints the conversation (tens of ms for a long one), so appending
    # every token of a fast stream would starve the keyboard and the worker thread that parses
    # the stream. When the stream pauses or ends, the text is flushed at once.

    async def _write(self: ChatPane, text: str) -> None:
        self._pending_text.append(text)
        if self._stream is None:
            await self._open_block()
            await self._flush()  # the first words show at once
        elif self._flush_timer is None:
            cost = self._block.update_cost if self._block is not None else 0.0
            delay = max(1 / FLUSH_RATE, UPDATE_SHARE * cost)
            self._flush_timer = self.set_timer(delay, lambda: self.post_message(self.FlushDue()))

    async def on_chat_pane_flush_due(self: ChatPane, message: ChatPane.FlushDue) -> None:
        message.stop()
        self._flush_timer = None
        await self._write_pending()

    async def _flush(self: ChatPane) -> None:
        """Hand the pending text to the stream now."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        await self._write_pending()

    async def _write_pending(self: ChatPane) -> None:
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

    # -- folding: answers far from the view keep their height but lose their widgets (answer.py)

    def _answers(self: ChatPane, folded: bool, far: bool) -> Iterator[AnswerText]:
        """The answers, folded or not, more (or less) than FOLD_SCREENS screens from the view;
        never the one streaming.

        Positions are summed from the children's heights, not asked of the compositor: asking
        (``virtual_region``) re-lays out the whole screen whenever a layout is pending.
        """
        view = self.conversation
        margin = view.size.height * FOLD_SCREENS
        near_top, near_bottom = view.scroll_y - margin, view.scroll_y + view.size.height + margin
        y = 0
        for child in view.children:
            top = y + child.styles.margin.top
            y = top + child.outer_size.height + child.styles.margin.bottom
            # Only an AnswerText has ``folded`` (its module loads with the first answer, not here).
            if (getattr(child, "folded", None) is folded and child is not self._block
                    and (y < near_top or top > near_bottom) == far):
                yield child

    def _fold_soon(self: ChatPane, tries: int = FOLD_TRIES, *, after_refresh: bool = False) -> None:
        """Walk the answers once the events in hand are handled; the many layouts and scrolls of
        a stream ask for one walk at a time."""
        if not self._fold_queued:
            self._fold_queued = True
            (self.call_after_refresh if after_refresh else self.call_later)(self._fold_far_answers, tries)

    async def _fold_far_answers(self: ChatPane, tries: int) -> None:
        """Fold what is far from the view; one still being rebuilt or laid out is tried again
        after the next refresh (nothing else may come to ask), a bounded number of times."""
        self._fold_queued = False
        waiting = [answer for answer in list(self._answers(folded=False, far=True)) if not await answer.fold()]
        if waiting and tries:
            self._fold_soon(tries - 1, after_refresh=True)

    def _laid_out(self: ChatPane) -> None:
        """A layout changed the conversation's size (new text, a resume, a new width). By then the
        compositor has moved an anchored view to the new end, which it does with ``set_reactive``:
        no ``scroll_y`` watcher hears of that move, so this is when far answers can be told apart."""
        self._fold_soon()

    def _view_moved(self: ChatPane) -> None:
        """The user scrolled: answers the view came near get their widgets back, those it left fold.
        (An anchored view moves without telling watchers: following new text, see ``_laid_out``;
        after End, ``Conversation.Moved`` calls this.)"""
        for answer in self._answers(folded=True, far=False):
            self.call_later(answer.unfold)
        self._fold_soon()

    def on_conversation_moved(self: ChatPane, message: Conversation.Moved) -> None:
        message.stop()
        self._view_moved()

    def on_resize(self: ChatPane) -> None:
        """A new width re-wraps every line: folded heights no longer hold."""
        if self.size.width != self._folded_width:
            self._folded_width = self.size.width
            for child in self.conversation.children:
                if getattr(child, "folded", False):
                    self.call_later(child.unfold)

    async def _open_block(self: ChatPane) -> None:
        from hermes_tui.tui.answer import AnswerText  # Markdown loads with the first answer

        self._block = AnswerText(classes="answer")
        await self._mount(self._block)
        self._stream = AnswerText.get_stream(self._block)

    async def _close_stream(self: ChatPane) -> None:
        stream, self._stream, self._block = self._stream, None, None
        if stream is not None:
            await stream.stop()

    async def _end_block(self: ChatPane) -> None:
        if held := self._cleaner.flush():
            self._pending_text.append(held)
        await self._flush()
        await self._close_stream()
        self._splitter = BlockSplitter()
