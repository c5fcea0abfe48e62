"""The chat pane: the conversation (streamed Markdown, tool calls, notices) and the prompt.

The turn runs on the agent runtime's thread (``agent.runtime.start_turn``), which only ``put``s
events into an ``EventInbox``; everything that touches widgets happens here, on the app thread. The conversation's widget
modules (``blocks``, ``answer``) are imported where first used, to keep them off the start-up path.
How each event shows is in ``chat_events``; the answer's streaming and folding in ``chat_answer``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.clock import Clock
from hermes_tui.conversation import ChatMessage, Status
from hermes_tui.textsafe import StreamCleaner, printable, printable_data
from hermes_tui.tui import actions, collector
from hermes_tui.tui.chat_answer import AnswerFlow
from hermes_tui.tui.chat_events import EventViews
from hermes_tui.tui.format import one_line
from hermes_tui.tui.history import PromptHistory
from hermes_tui.tui.inbox import EventInbox, EventsReady
from hermes_tui.tui.prompt import PromptArea
from hermes_tui.tui.splitter import BlockSplitter

if TYPE_CHECKING:
    from textual._types import CallbackType
    from textual.timer import Timer
    from textual.widgets.markdown import MarkdownStream

    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.runtime import RunningTurn
    from hermes_tui.background import Background
    from hermes_tui.events import Event, Usage
    from hermes_tui.tui.answer import AnswerText
    from hermes_tui.tui.blocks import ToolCallView

log = logging.getLogger(__name__)

RESTORED_MESSAGES = 200  # a resumed session shows its newest messages; Sessions has them all
DRAIN_INTERVAL = 0.02  # seconds between inbox takes while events keep coming
PLACEHOLDER = (f"Message Hermes · {actions.main_key('prompt', 'submit')} sends · "
               f"{actions.main_key('prompt', 'newline')} new line · / commands · "
               f"{actions.main_key('prompt', 'history_previous')} history")


class QueuedMessages(Static):
    """The messages typed while a turn runs, waiting to be sent (shown above the prompt)."""

    def show(self, texts: list[str]) -> None:
        self.display = bool(texts)
        lines = [f"⧗ queued: {one_line(printable(text), 200)}" for text in texts]
        lines.append(f"sent when the answer ends · {actions.main_key('chat', 'cancel_turn')} takes the last one back")
        self.update("\n".join(lines))


class Conversation(VerticalScroll):
    """The conversation's scroll view. ``scroll_end`` (End, or code) anchors the view again, and
    the compositor then moves an anchored view with ``set_reactive``, which no ``scroll_y``
    watcher hears: when the scroll is done it posts ``Moved``, so far answers fold after it too."""

    class Moved(Message):
        """The view went to the end of the conversation."""

    def scroll_end(self, *, on_complete: CallbackType | None = None, **kwargs: Any) -> None:
        def moved() -> None:
            self.post_message(self.Moved())
            if on_complete is not None:
                self.call_next(on_complete)

        super().scroll_end(on_complete=moved, **kwargs)


class ChatPane(EventViews, AnswerFlow, Widget):
    BINDINGS = actions.bindings("chat")

    class Activity(Message):
        """What the agent does now (None: idle); ``since`` starts an elapsed-time counter."""

        def __init__(self, label: str | None, since: float | None = None) -> None:
            super().__init__()
            self.label = label
            self.since = since

    class UsageChanged(Message):
        """A model call's token counts and cost (``usage``: the ``Usage`` event)."""

        def __init__(self, usage: Usage) -> None:
            super().__init__()
            self.usage = usage

    class SkillsChanged(Message):
        """A skill was created or refined."""

    class FlushDue(Message):
        """Time to hand the pending answer text to the Markdown stream."""

    class TurnEnded(Message):
        """The turn is over: the app sends the next queued message, if any."""

        def __init__(self, chat: ChatPane) -> None:
            super().__init__()
            self.chat = chat

        @property
        def control(self) -> ChatPane:
            return self.chat

    def __init__(self, history: PromptHistory, clock: Clock, runner: Background, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = history
        self.clock = clock
        self.runner = runner  # the app's one runner: turns start there, and quitting stops them
        self.inbox = EventInbox(self)
        self.busy = False
        self._turn_loop: AgentLoop | None = None
        self._block: AnswerText | None = None
        self._stream: MarkdownStream | None = None
        self._pending_text: list[str] = []
        self._flush_timer: Timer | None = None
        self._tools: dict[str, ToolCallView] = {}
        self._cleaner = StreamCleaner()
        self._splitter = BlockSplitter()
        self.queued: list[str] = []
        self.unsent: str | None = None  # the last message a failed turn gave back (/retry sends it)
        self._activity: str | None = None  # the status line's label, as last posted
        self._folded_width = 0  # the width answers were folded at
        self._fold_queued = False  # a fold walk is on its way (_fold_soon)

    def compose(self) -> ComposeResult:
        yield Conversation(id="conversation")
        yield QueuedMessages(id="queued", markup=False)
        yield PromptArea(self.history, id="prompt", placeholder=PLACEHOLDER)

    def on_mount(self) -> None:
        self.conversation.anchor()  # follow the stream until the user scrolls up
        self.query_one(QueuedMessages).show([])
        self.watch(self.conversation, "scroll_y", self._view_moved, init=False)
        self.watch(self.conversation, "virtual_size", self._laid_out, init=False)

    @property
    def conversation(self) -> Conversation:
        return self.query_one("#conversation", Conversation)

    @property
    def prompt(self) -> PromptArea:
        return self.query_one("#prompt", PromptArea)

    def focus_main(self) -> None:
        self.screen.set_focus(self.prompt)  # at once: keys already queued behind the pane key land here

    def on_key(self, event: events.Key) -> None:
        """Letters typed while the focus is elsewhere in the chat (shift+Tab went to a tool output,
        a click to the conversation) go to the prompt: typing always types.

        A letter that reaches the pane did not go through the prompt (it takes its letters), even
        when the prompt has the focus again: the app hands each key to the widget focused when it
        arrived, so the rest of a burst typed after shift+Tab comes here too.
        """
        if event.is_printable and event.character:
            self.focus_main()
            self.prompt.insert(event.character)
            event.stop()

    # -- turns

    async def start_turn(self, loop: AgentLoop, text: str) -> None:
        """Show the message and run the turn in the background."""
        self.busy = True
        self.unsent = None  # a new turn: /retry is about this one now
        self._turn_loop = loop
        collector.turn_started()
        self.conversation.anchor()
        from hermes_tui.tui.blocks import UserMessage

        await self._end_block()
        await self._mount(UserMessage(text))
        self._set_activity("thinking…")
        self.refresh_bindings()
        self._run_turn(loop, text)

    @asynccontextmanager
    async def holding(self, label: str) -> AsyncIterator[None]:
        """Busy with ``label`` while the block runs (loading a resumed session): the status line
        says so, the view shows it is loading, and messages typed meanwhile queue; they are
        sent when it ends, as after a turn."""
        self.busy = True
        self.conversation.loading = True
        self._set_activity(label)
        try:
            yield
        finally:
            self.busy = False
            self.conversation.loading = False
            self._set_activity(None)
            self.post_message(self.TurnEnded(self))

    def _run_turn(self, loop: AgentLoop, text: str) -> None:
        """The agent runtime runs the turn on its thread; its events only go to the inbox."""
        from hermes_tui.agent.runtime import start_turn

        start_turn(loop, text, self.inbox.put, self.runner)

    def run_in_background(self, events: Iterator[Event], name: str, cancel: Callable[[], None]) -> RunningTurn:
        """Feed another agent stream's events (/learn, /compact) from the runner; quitting cancels it."""
        from hermes_tui.agent.runtime import RunningTurn

        return RunningTurn(events, self.inbox.put, self.runner, cancel=cancel, name=name).start()

    def cancel_turn(self) -> bool:
        """Ask the running turn to stop; True if there was one."""
        if not self.busy or self._turn_loop is None:
            return False
        self._turn_loop.cancel()
        self._set_activity("cancelling…")
        return True

    def on_unmount(self) -> None:
        """The app is closing: a turn still running stops (its thread must not outlive the app)."""
        if self.busy and self._turn_loop is not None:
            self._turn_loop.cancel()
            collector.turn_ended()  # the collector paces collections as usual again

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_turn":
            return self.busy or self.prompt.suggesting or bool(self.queued)
        return True

    def action_cancel_turn(self) -> None:
        """Esc: close the command suggestions if open, else take the last queued message back
        into the prompt, else cancel the turn."""
        if self.prompt.suggesting:
            self.prompt.close_suggestions()
        elif self.queued:
            self.prompt.give_back(self.queued.pop())
            self.query_one(QueuedMessages).show(self.queued)
        else:
            self.cancel_turn()

    def action_toggle_tool_output(self) -> None:
        """ctrl+o: the last tool result that has arrived, unfolded or folded again, kept in view."""
        from textual.widgets import Collapsible

        outputs = list(self.conversation.query(".tool-output").results(Collapsible))
        if outputs:
            outputs[-1].collapsed = not outputs[-1].collapsed
            outputs[-1].scroll_visible()

    # -- messages typed while a turn runs

    def queue(self, text: str) -> None:
        self.queued.append(text)
        self.query_one(QueuedMessages).show(self.queued)
        self.refresh_bindings()

    def next_queued(self) -> str | None:
        """The oldest queued message, removed from the queue (None when there is none)."""
        if not self.queued:
            return None
        text = self.queued.pop(0)
        self.query_one(QueuedMessages).show(self.queued)
        return text

    # -- events from the inbox

    async def on_events_ready(self, message: EventsReady) -> None:
        message.stop()
        await self._drain()

    async def _drain(self) -> None:
        """Show what the workers sent; come back after DRAIN_INTERVAL until the inbox is empty."""
        events = self.inbox.take()
        if not events:  # re-armed: the next event posts EventsReady
            await self._flush()  # the stream paused (or ended): show its text now, not at the next tick
            return
        for event in events:
            if not self.is_attached:  # the app is exiting: nothing left to show
                return
            await self._show(event)
        # Timer callbacks run in their own task: come back through the message queue instead, so
        # everything that touches the conversation runs in order on this widget's loop.
        self.set_timer(DRAIN_INTERVAL, lambda: self.post_message(EventsReady()))

    async def _show(self, event: Event) -> None:
        """Dispatch on the event's ``type`` (the vocabulary every surface shares).

        The chat's output boundary: every text an event carries (answer, tool arguments and
        results, notices, skill names) is made inert here (``hermes_tui.textsafe``) before any
        widget sees it; streamed text goes through a ``StreamCleaner`` so a sequence split
        across deltas is removed whole.
        """
        handler = getattr(self, f"_show_{event.type}", None)
        if handler is not None:  # turn_started needs nothing here
            await handler(event if event.type == "text_delta" else printable_data(event))

    # -- other content

    async def _mount(self, widget: Widget) -> None:
        await self.conversation.mount(widget)

    async def add_notice(self, text: str, kind: str = "notice") -> None:
        from hermes_tui.tui.blocks import NoticeLine

        await self._mount(NoticeLine(text, kind))

    async def add_help(self, markdown: str) -> None:
        from hermes_tui.tui.answer import HelpText

        await self._mount(HelpText(markdown, classes="help"))

    async def drop_last_turn(self) -> None:
        """Remove the last user message and what followed it from the view (/undo)."""
        from hermes_tui.tui.blocks import UserMessage

        children = list(self.conversation.children)
        starts = [i for i, child in enumerate(children) if isinstance(child, UserMessage)]
        if starts:
            await self.conversation.remove_children(children[starts[-1]:])

    async def clear(self) -> None:
        """Empty the view for a new or resumed session."""
        await self._end_block()
        self._tools.clear()
        await self.conversation.remove_children()
        self.conversation.anchor()

    async def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored conversation (``/resume``): text, and tool calls with their results;
        each message's status marks calls that did not succeed ✗ and turns that ended early."""
        from hermes_tui.tui.answer import AnswerText
        from hermes_tui.tui.blocks import NoticeLine, ToolCallView, UserMessage

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
        await self.conversation.mount_all(widgets)
        self.conversation.anchor()


TURN_END_NOTICES = {
    Status.CANCELLED: ("Cancelled.", "cancelled"),
    Status.FAILED: ("This turn failed before an answer.", "error"),
}
"""How a resumed view marks a turn that did not end with an answer (its user message's status)."""
