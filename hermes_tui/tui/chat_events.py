"""How each agent event shows in the chat, mixed into ``ChatPane`` (``chat.py``): one
``_show_<type>`` per event type, called by ``ChatPane._show`` with the event's text already made
inert; the tool call views, the status line's activity, and the end of a turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.tui import actions, collector
from hermes_tui.tui.format import widget_id

if TYPE_CHECKING:
    from hermes_tui.events import (
        ApprovalNeeded,
        Error,
        FilesChanged,
        Notice,
        Receipt,
        SkillLearned,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
        TurnFinished,
        Unsent,
        Usage,
    )
    from hermes_tui.tui.chat import ChatPane


class EventViews:
    """The chat's view of each event, for ``ChatPane``."""

    def _set_activity(self: ChatPane, label: str | None, since: float | None = None) -> None:
        self._activity = label
        self.post_message(self.Activity(label, since))

    async def _show_text_delta(self: ChatPane, event: TextDelta) -> None:
        text = self._cleaner.feed(event.text)
        if text:
            if self._activity != "answering…":  # not "thinking…" while the words arrive
                self._set_activity("answering…")
            await self._write(text)

    async def _show_tool_call_started(self: ChatPane, event: ToolCallStarted) -> None:
        from hermes_tui.tui.blocks import ToolCallView

        await self._end_block()
        view = ToolCallView(event.id, event.name, event.arguments, self.clock, id=self._tool_widget_id(event.id))
        self._tools[event.id] = view
        await self._mount(view)
        self._set_activity(f"running {event.name}", since=view.started)

    async def _show_approval_needed(self: ChatPane, event: ApprovalNeeded) -> None:
        view = self._tools.get(event.id)
        if view is not None and not view.answered:
            view.waiting = True
        self._set_activity(f"waiting for your approval of {event.name}")

    def approval_answered(self: ChatPane, name: str) -> None:
        """The user answered an approval for ``name``: its view's timer starts from now."""
        running = [v for v in self._tools.values() if v.tool_name == name and not v.finished and not v.answered]
        if running:
            view = running[0]
            view.start_timer()
            self._set_activity(f"running {name}", since=view.started)

    async def _show_tool_call_finished(self: ChatPane, event: ToolCallFinished) -> None:
        view = self._tools.get(event.id)
        if view is not None and not view.finished:
            await view.finish(event.result, event.ok)
        self._set_activity("thinking…")

    async def _show_usage(self: ChatPane, event: Usage) -> None:
        self.post_message(self.UsageChanged(event))

    async def _show_notice(self: ChatPane, event: Notice) -> None:
        await self.add_notice(event.message)

    async def _show_receipt(self: ChatPane, event: Receipt) -> None:
        await self.add_notice(event.text, "receipt")

    async def _show_error(self: ChatPane, event: Error) -> None:
        await self.add_notice(event.message, "error")

    async def _show_files_changed(self: ChatPane, event: FilesChanged) -> None:
        await self._end_block()
        names = ", ".join(f["path"] for f in event.files[:5]) + (" …" if len(event.files) > 5 else "")
        await self.add_notice(f"Changed {len(event.files)} file(s): {names} (checkpoint {event.checkpoint}; "
                              "/undo restores them)")

    async def _show_unsent(self: ChatPane, event: Unsent) -> None:
        self.unsent = event.text
        self.prompt.give_back(event.text)
        await self.add_notice("Not sent: the turn failed before any answer, so your message is back in the "
                              f"prompt and out of the conversation. {actions.main_key('prompt', 'submit')} (or /retry) sends it again; edit it "
                              "first if it caused the error.")

    async def _show_skill_learned(self: ChatPane, event: SkillLearned) -> None:
        verb = "Learned skill" if event.created else "Refined skill"
        version = "" if event.created else f" (v{event.version})"
        await self.add_notice(f"{verb} {event.name}{version}", "learned")
        self.post_message(self.SkillsChanged())

    async def _show_turn_finished(self: ChatPane, event: TurnFinished) -> None:
        await self._finish_turn(event)

    async def _finish_turn(self: ChatPane, event: TurnFinished) -> None:
        await self._end_block()
        for view in self._tools.values():
            if not view.finished:  # a call cut short by a cancel never reports back
                await view.finish("Cancelled.", False)
        if event.stopped_reason == "cancelled":
            await self.add_notice("Cancelled. The conversation is intact; send the next message.", "cancelled")
        self.busy = False
        self._turn_loop = None
        self._fold_soon()  # the block that streamed is no longer kept out (and again once laid out)
        collector.turn_ended()
        self.call_after_refresh(self._collect_when_quiet)
        self._set_activity(None)  # the prompt takes the next message; a curator may still run
        self.refresh_bindings()
        self.post_message(self.TurnEnded(self))

    def _collect_when_quiet(self: ChatPane) -> None:
        """Collect what the turn left (its last words are on screen), once the user is quiet."""
        if (left := collector.quiet_left(self.clock())) > 0:
            self.set_timer(left, self._collect_when_quiet)
        else:
            collector.collect_after_turn()

    def _tool_widget_id(self: ChatPane, call_id: str) -> str:
        base = candidate = widget_id("tool", call_id)
        number = 1
        while self.conversation.query(f"#{candidate}"):
            number += 1
            candidate = f"{base}-{number}"
        return candidate
