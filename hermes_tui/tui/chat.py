"""The chat pane: the running turn, the messages queued behind it, and the prompt, around the
``Conversation`` (``conversation_view``), which owns what is shown: the streamed answer, the tool
calls, notices, and the folding of far answers.

The turn runs on the agent runtime's thread (``agent.runtime.start_turn``), which only ``put``s
events into an ``EventInbox``; everything that touches widgets happens here, on the app thread.
Each event type reaches its handler through one table, ``event_views()`` (a test checks that every
type in ``hermes_tui.events`` has one).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.clock import Clock
from hermes_tui.conversation import ChatMessage
from hermes_tui.textsafe import printable, printable_data
from hermes_tui.tui import actions, collector
from hermes_tui.tui.conversation_view import Conversation
from hermes_tui.tui.format import one_line
from hermes_tui.tui.history import PromptHistory
from hermes_tui.tui.inbox import EventInbox, EventsReady
from hermes_tui.tui.prompt import PromptArea

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.runtime import RunningTurn
    from hermes_tui.background import Background
    from hermes_tui.events import (
        ApprovalNeeded,
        Error,
        Event,
        FilesChanged,
        Notice,
        Receipt,
        SkillLearned,
        Subagent,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
        TurnFinished,
        TurnStarted,
        Unsent,
        Usage,
    )

log = logging.getLogger(__name__)

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


class ChatPane(Widget):
    """The turn around the conversation: it starts one, feeds its events to the views, queues
    what is typed meanwhile, and tells the app what the agent does (``Activity``)."""

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

    class TurnEnded(Message):
        """The turn is over: the app sends the next queued message, if any. ``planned``: a plan-mode
        turn answered (the app offers to carry the plan out)."""

        def __init__(self, chat: ChatPane, *, planned: bool = False) -> None:
            super().__init__()
            self.chat = chat
            self.planned = planned

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
        self.queued: list[str] = []
        self.unsent: str | None = None  # the last message a failed turn gave back (/retry sends it)
        self._activity: str | None = None  # the status line's label, as last posted

    def compose(self) -> ComposeResult:
        yield Conversation(self.clock, id="conversation")
        yield QueuedMessages(id="queued", markup=False)
        yield PromptArea(self.history, id="prompt", placeholder=PLACEHOLDER)

    def on_mount(self) -> None:
        self.query_one(QueuedMessages).show([])

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
        from hermes_tui.tui.blocks import UserMessage, image_line

        await self.conversation.end_answer()
        await self.conversation.mount(UserMessage(text), *(image_line(ref) for ref in loop.attached))
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
            await self.conversation.flush()  # the stream paused (or ended): show its text now, not at the next tick
            return
        for event in events:
            if not self.is_attached:  # the app is exiting: nothing left to show
                return
            await self._show(event)
        # Timer callbacks run in their own task: come back through the message queue instead, so
        # everything that touches the conversation runs in order on this widget's loop.
        self.set_timer(DRAIN_INTERVAL, lambda: self.post_message(EventsReady()))

    async def _show(self, event: Event) -> None:
        """Hand the event to its view in ``event_views()`` (the vocabulary every surface shares).

        The chat's output boundary: every text an event carries (answer, tool arguments and
        results, notices, skill names) is made inert here (``hermes_tui.textsafe``) before any
        widget sees it; streamed text goes through the conversation's ``StreamCleaner`` so a
        sequence split across deltas is removed whole.
        """
        view = event_views().get(type(event))
        if view is None:  # a type the table misses (a test checks there is none): skipped, not fatal
            log.warning("no view for the event %s", event.type)
            return
        # The streamed text alone arrives as sent: the conversation's StreamCleaner makes it inert.
        await view(self, event if view is ChatPane._show_text_delta else printable_data(event))

    # -- how each event shows (``event_views`` maps each type to one of these)

    def _set_activity(self, label: str | None, since: float | None = None) -> None:
        self._activity = label
        self.post_message(self.Activity(label, since))

    async def _show_turn_started(self, event: TurnStarted) -> None:
        """Nothing to show: ``start_turn`` already showed the message and the activity."""

    async def _show_text_delta(self, event: TextDelta) -> None:
        text = self.conversation.clean(event.text)
        if text:
            if self._activity != "answering…":  # not "thinking…" while the words arrive
                self._set_activity("answering…")
            await self.conversation.write(text)

    async def _show_tool_call_started(self, event: ToolCallStarted) -> None:
        view = await self.conversation.add_tool_call(event.id, event.name, event.arguments)
        self._set_activity(f"running {event.name}", since=view.started)

    async def _show_approval_needed(self, event: ApprovalNeeded) -> None:
        view = self.conversation.tool_call(event.id)
        if view is not None and not view.answered:
            view.waiting = True
        self._set_activity(f"waiting for your approval of {event.name}")

    def approval_answered(self, name: str) -> None:
        """The user answered an approval for ``name``: its view's timer starts from now."""
        running = [v for v in self.conversation.tool_calls()
                   if v.tool_name == name and not v.finished and not v.answered]
        if running:
            view = running[0]
            view.start_timer()
            self._set_activity(f"running {name}", since=view.started)

    async def _show_tool_call_finished(self, event: ToolCallFinished) -> None:
        view = self.conversation.tool_call(event.id)
        if view is not None and not view.finished:
            await view.finish(event.result, event.ok)
        self._set_activity("thinking…")

    async def _show_subagent(self, event: Subagent) -> None:
        """A sub-agent's event: into its block under the ``delegate`` call that runs it."""
        view = self.conversation.tool_call(event.call_id)
        if view is not None and not view.finished:
            (await view.subagent(event.session_id)).show(event.event)

    async def _show_usage(self, event: Usage) -> None:
        self.post_message(self.UsageChanged(event))

    async def _show_notice(self, event: Notice) -> None:
        await self.add_notice(event.message)

    async def _show_receipt(self, event: Receipt) -> None:
        await self.add_notice(event.text, "receipt")

    async def _show_error(self, event: Error) -> None:
        await self.add_notice(event.message, "error")

    async def _show_files_changed(self, event: FilesChanged) -> None:
        await self.conversation.end_answer()
        names = ", ".join(f["path"] for f in event.files[:5]) + (" …" if len(event.files) > 5 else "")
        await self.add_notice(f"Changed {len(event.files)} file(s): {names} (checkpoint {event.checkpoint}; "
                              "/undo restores them)")

    async def _show_unsent(self, event: Unsent) -> None:
        self.unsent = event.text
        self.prompt.give_back(event.text)
        await self.add_notice("Not sent: the turn failed before any answer, so your message is back in the "
                              f"prompt and out of the conversation. {actions.main_key('prompt', 'submit')} (or /retry) sends it again; edit it "
                              "first if it caused the error.")

    async def _show_skill_learned(self, event: SkillLearned) -> None:
        verb = "Learned skill" if event.created else "Refined skill"
        version = "" if event.created else f" (v{event.version})"
        await self.add_notice(f"{verb} {event.name}{version}", "learned")
        self.post_message(self.SkillsChanged())

    async def _show_turn_finished(self, event: TurnFinished) -> None:
        await self.conversation.end_answer()
        for view in self.conversation.tool_calls():
            if not view.finished:  # a call cut short by a cancel never reports back
                await view.finish("Cancelled.", False)
        if event.stopped_reason == "cancelled":
            await self.add_notice("Cancelled. The conversation is intact; send the next message.", "cancelled")
        planned = event.stopped_reason == "done" and self._turn_loop is not None and self._turn_loop.plan
        self.busy = False
        self._turn_loop = None
        self.conversation.fold_soon()  # the block that streamed is no longer kept out (and again once laid out)
        collector.turn_ended()
        self.call_after_refresh(self._collect_when_quiet)
        self._set_activity(None)  # the prompt takes the next message; a curator may still run
        self.refresh_bindings()
        self.post_message(self.TurnEnded(self, planned=planned))

    def _collect_when_quiet(self) -> None:
        """Collect what the turn left (its last words are on screen), once the user is quiet."""
        if (left := collector.quiet_left(self.clock())) > 0:
            self.set_timer(left, self._collect_when_quiet)
        else:
            collector.collect_after_turn()

    # -- what the app and the commands show (the conversation owns it)

    async def add_notice(self, text: str, kind: str = "notice") -> None:
        await self.conversation.add_notice(text, kind)

    async def add_help(self, markdown: str) -> None:
        await self.conversation.add_help(markdown)

    async def drop_last_turn(self) -> None:
        """Remove the last user message and what followed it from the view (/undo)."""
        await self.conversation.drop_last_turn()

    async def clear(self) -> None:
        """Empty the view for a new or resumed session."""
        await self.conversation.clear()

    async def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored conversation (``/resume``)."""
        await self.conversation.show_messages(messages)


EventView = Callable[[ChatPane, Any], Awaitable[None]]

@functools.cache
def event_views() -> dict[type[Event], EventView]:
    """How each event type shows in the chat: one entry per type of ``hermes_tui.events``. Made at
    the first event, not at import: the events module (~8 ms of dataclasses) then stays off the
    app's path to its first frame (bench/tui_startup.py)."""
    from hermes_tui import events as e

    return {
        e.TurnStarted: ChatPane._show_turn_started,
        e.TextDelta: ChatPane._show_text_delta,
        e.ToolCallStarted: ChatPane._show_tool_call_started,
        e.ToolCallFinished: ChatPane._show_tool_call_finished,
        e.Receipt: ChatPane._show_receipt,
        e.ApprovalNeeded: ChatPane._show_approval_needed,
        e.SkillLearned: ChatPane._show_skill_learned,
        e.Usage: ChatPane._show_usage,
        e.Notice: ChatPane._show_notice,
        e.TurnFinished: ChatPane._show_turn_finished,
        e.Error: ChatPane._show_error,
        e.FilesChanged: ChatPane._show_files_changed,
        e.Unsent: ChatPane._show_unsent,
        e.Subagent: ChatPane._show_subagent,
    }

