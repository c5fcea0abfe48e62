"""Which session the chat shows and sends to, and the TUI side of changing it: leave (/new),
resume, forget, undo and retry the last turn, rewind files.

One component owns this so the rules live in one place and the slash commands, the Sessions
pane and the start-up all go through it. The store work (reading a session, deleting one, the
checkpoints) runs on thread workers (``workers.in_thread``); what the user sees runs here, on the
app thread. The session's loop itself is ``ChatSession``'s (``session.py``, no Textual).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hermes_tui.tui.format import plural, short_path
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.conversation import ChatMessage
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.rewind import Choice, FileRewinder

log = logging.getLogger(__name__)

SUMMARY_TIMEOUT = 3.0  # seconds a session summary may take when leaving a session


class SessionController:
    """Resume, leave, forget, undo and retry, for one app (its chat, session, stores, approvals)."""

    def __init__(self, app: HermesApp) -> None:
        self.app = app
        self._rewinder: FileRewinder | None = None

    # -- leaving and resuming

    def leave(self) -> None:
        """Detach the current loop and summarise it in the background (/new)."""
        app = self.app
        loop = app.session.detach()
        app.approvals.reset()
        if loop is not None:
            self.summarise(loop)

    def summarise(self, loop: AgentLoop) -> None:
        """Store the session's summary in the background: an unreachable provider never holds the
        app, and quitting waits for it (``QUIT_GRACE``)."""
        self.app.background.start(f"hermes-close-{loop.session_id}", lambda: loop.close(timeout=SUMMARY_TIMEOUT),
                                  keep=True)

    async def resume(self, session_id: int) -> None:
        app = self.app
        if await app.command_runner.refuse_while_busy("Resuming a session"):
            return
        await app.show_pane("chat")
        if session_id == app.session.session_id:
            await app.chat.add_notice(f"Session {session_id} is the current one.")
            return
        previous = app.session.loop
        async with app.chat.holding(f"loading session {session_id}…"):
            try:  # the store reads and the token count run off the app thread
                messages = await in_thread(app, self._load_session, session_id)
            except ValueError as exc:
                await app.chat.add_notice(str(exc), "error")
                return
            if previous is not None:
                self.summarise(previous)
            app.approvals.reset()
            await app.chat.clear()
            await app.chat.show_messages(messages)
        app.show_header()
        app.show_usage()  # with the context % the load measured
        await app.chat.add_notice(f"Resumed session {session_id}: your next message continues it.")

    def _load_session(self, session_id: int) -> list[ChatMessage]:
        """Switch the loop to ``session_id`` and read what the view draws (a worker thread);
        raises ValueError when it does not exist."""
        from hermes_tui.memory import resume

        app = self.app
        loop = app.session.resume(session_id)
        app.usage.load(session_id)
        loop.context_usage()  # the status line's context % before the next call
        return resume.shown(app.memory.get_messages(session_id))

    # -- forgetting a session (/forget, the Sessions pane's x)

    def ask_to_forget(self, session_id: int) -> None:
        from hermes_tui.tui.confirm import ConfirmScreen

        app = self.app
        current = " (the current one: the chat starts afresh)" if session_id == app.session.session_id else ""
        question = (f"Forget session {session_id}{current} for good? Its messages are deleted from memory, "
                    "the search index and the database file. This cannot be undone.")

        def answered(yes: bool | None) -> None:
            if yes:
                app.run_worker(self._forget(session_id), group="forget")

        app.push_screen(ConfirmScreen(question, confirm_label="Forget"), answered)

    async def _forget(self, session_id: int) -> None:
        app = self.app
        if session_id == app.session.session_id:
            if app.chat.busy:
                await app.chat.add_notice("Forgetting the session has to wait for the running turn.", "error")
                return
            app.session.detach()  # no summary: the session is going away
            app.approvals.reset()
            await app.chat.clear()
            app.show_header()
        from hermes_tui.memory.forget import forget_session

        try:
            gone = await in_thread(app, forget_session, app.memory, session_id, app.history.path)
        except KeyError:
            await app.chat.add_notice(f"There is no session {session_id}.", "error")
            return
        except Exception as exc:  # one readable line; details in the log
            log.exception("forgetting session %s failed", session_id)
            await app.chat.add_notice(f"Could not forget session {session_id}: {exc}", "error")
            return
        from hermes_tui.memory.prompts import sent_one_of

        dropped = await in_thread(app, app.history.forget, sent_one_of(gone.prompts))  # the app's own copy
        app.show_usage()
        wrote = f"; removed {', '.join(short_path(p) for p in gone.files)}" if gone.files else ""
        await app.chat.add_notice(f"Forgot session {session_id} ({plural(gone.messages, 'message')}, "
                                  f"{plural(dropped, 'prompt')} in the prompt history{wrote}).")
        if pane := app.mounted_pane("sessions"):
            pane.refresh_data()

    # -- the last turn: retry, undo; the files: rewind

    async def retry(self) -> None:
        """Send the last message again: a failed turn's (never in the conversation), else the last
        turn's, whose answer is taken out of what is sent (the core marks it undone)."""
        app = self.app
        unsent, app.chat.unsent = app.chat.unsent, None
        if unsent:  # the last turn failed before any answer: its message is not in the conversation
            await app.chat.add_notice("Retrying your last message (its turn failed before any answer).")
            await app.send(unsent)
            return
        taken = app.session.retract_last_turn()
        if taken is None:
            await app.chat.add_notice("Nothing to retry yet: send a message first.")
            return
        text, _ids = taken
        await app.chat.add_notice("Retrying your last message; the previous answer is left out.")
        await app.send(text)

    @property
    def rewinder(self) -> FileRewinder:
        """What /undo and /rewind do with files (hermes_tui/tui/rewind.py), made on first use."""
        if self._rewinder is None:
            from hermes_tui.tui.rewind import FileRewinder

            self._rewinder = FileRewinder(self.app)
        return self._rewinder

    async def undo(self) -> None:
        """The last turn out of the conversation; when it changed files, the dialog asks about them first."""
        app = self.app
        session = app.session
        message_id = session.last_turn_message_id()
        plan = await self.rewinder.undo_plan(session.session_id, message_id) if message_id is not None else None
        if plan is None:
            await self._undo_conversation()
            return

        async def chosen(choice: Choice | None) -> None:
            if choice is None:
                await app.chat.add_notice("Nothing undone.")
                return
            restored = await self.rewinder.restore(plan, choice) if choice != "chat" else ""
            if restored is not None:
                await self._undo_conversation()
            if restored:
                await app.chat.add_notice(restored)

        self.rewinder.ask(plan, undo=True, then=chosen)

    async def rewind(self) -> None:
        """/rewind: the workspace's files back to a checkpoint the user picks."""
        await self.rewinder.rewind()

    async def _undo_conversation(self) -> None:
        app = self.app
        taken = app.session.retract_last_turn()
        if taken is None:
            await app.chat.add_notice("Nothing to undo yet.")
            return
        text, ids = taken
        await app.chat.drop_last_turn()
        app.chat.prompt.give_back(text)
        await app.chat.add_notice(
            f"Undid the last turn ({plural(len(ids), 'message')}): it is no longer sent to the model. Memory keeps it, "
            "marked undone. Your message is back in the prompt.")
