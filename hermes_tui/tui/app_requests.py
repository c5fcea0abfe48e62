"""What the panes and commands ask of the app: resume a session, forget one, open a transcript,
use a skill, edit a skill or a file in the user's editor. Mixed into ``HermesApp`` (``app.py``),
whose chat, session and stores these methods use; Textual finds the ``on_*`` handlers here too.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from hermes_tui.tui.format import plural, short_path
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.conversation import ChatMessage
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.messages import (
        EditFile,
        EditSkill,
        ForgetSession,
        OpenTranscript,
        ResumeSession,
        UseSkill,
    )

log = logging.getLogger(__name__)

SUMMARY_TIMEOUT = 3.0  # seconds a session summary may take when leaving a session


class PaneRequests:
    """Sessions, forgetting and editing, for ``HermesApp``."""

    # -- sessions

    def leave_session(self: HermesApp) -> None:
        """Detach the current loop and summarise it in the background."""
        loop = self.session.detach()
        self.approvals.reset()
        if loop is not None:
            self._summarise(loop)

    def _summarise(self: HermesApp, loop: AgentLoop) -> None:
        """Store the session's summary in the background: an unreachable provider never holds the
        app, and quitting waits for it (``QUIT_GRACE``)."""
        self.background.start(f"hermes-close-{loop.session_id}", lambda: loop.close(timeout=SUMMARY_TIMEOUT), keep=True)

    async def resume(self: HermesApp, session_id: int) -> None:
        if await self.command_runner.refuse_while_busy("Resuming a session"):
            return
        await self.show_pane("chat")
        if session_id == self.session.session_id:
            await self.chat.add_notice(f"Session {session_id} is the current one.")
            return
        previous = self.session.loop
        async with self.chat.holding(f"loading session {session_id}…"):
            try:  # the store reads and the token count run off the app thread
                messages = await in_thread(self, self._load_session, session_id)
            except ValueError as exc:
                await self.chat.add_notice(str(exc), "error")
                return
            if previous is not None:
                self._summarise(previous)
            self.approvals.reset()
            await self.chat.clear()
            await self.chat.show_messages(messages)
        self.show_header()
        self.show_usage()  # with the context % the load measured
        await self.chat.add_notice(f"Resumed session {session_id}: your next message continues it.")

    def _load_session(self: HermesApp, session_id: int) -> list[ChatMessage]:
        """Switch the loop to ``session_id`` and read what the view draws (a worker thread);
        raises ValueError when it does not exist."""
        from hermes_tui.memory import resume

        loop = self.session.resume(session_id)
        self.usage.load(session_id)
        loop.context_usage()  # the status line's context % before the next call
        return resume.shown(self.memory.get_messages(session_id))

    # -- forgetting a session (/forget, the Sessions pane's x)

    def ask_to_forget(self: HermesApp, session_id: int) -> None:
        from hermes_tui.tui.confirm import ConfirmScreen

        current = " (the current one: the chat starts afresh)" if session_id == self.session.session_id else ""
        question = (f"Forget session {session_id}{current} for good? Its messages are deleted from memory, "
                    "the search index and the database file. This cannot be undone.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._forget(session_id), group="forget")

        self.push_screen(ConfirmScreen(question, confirm_label="Forget"), answered)

    async def _forget(self: HermesApp, session_id: int) -> None:
        if session_id == self.session.session_id:
            if self.chat.busy:
                await self.chat.add_notice("Forgetting the session has to wait for the running turn.", "error")
                return
            self.session.detach()  # no summary: the session is going away
            self.approvals.reset()
            await self.chat.clear()
            self.show_header()
        from hermes_tui.memory.forget import forget_session

        try:
            gone = await in_thread(self, forget_session, self.memory, session_id, self.history.path)
        except KeyError:
            await self.chat.add_notice(f"There is no session {session_id}.", "error")
            return
        except Exception as exc:  # one readable line; details in the log
            log.exception("forgetting session %s failed", session_id)
            await self.chat.add_notice(f"Could not forget session {session_id}: {exc}", "error")
            return
        from hermes_tui.memory.prompts import sent_one_of

        dropped = await in_thread(self, self.history.forget, sent_one_of(gone.prompts))  # the app's own copy
        self.show_usage()
        wrote = f"; removed {', '.join(short_path(p) for p in gone.files)}" if gone.files else ""
        await self.chat.add_notice(f"Forgot session {session_id} ({plural(gone.messages, 'message')}, "
                                   f"{plural(dropped, 'prompt')} in the prompt history{wrote}).")
        if pane := self.mounted_pane("sessions"):
            pane.refresh_data()

    # -- messages from the panes

    def on_forget_session(self: HermesApp, message: ForgetSession) -> None:
        self.ask_to_forget(message.session_id)

    async def on_resume_session(self: HermesApp, message: ResumeSession) -> None:
        await self.resume(message.session_id)

    async def on_use_skill(self: HermesApp, message: UseSkill) -> None:
        await self.show_pane("chat")
        self.chat.prompt.load(f"use the skill {message.name}: ")

    def on_open_transcript(self: HermesApp, message: OpenTranscript) -> None:
        from hermes_tui.tui.transcript import TranscriptScreen

        self.push_screen(TranscriptScreen(self.memory, message.session_id, message.message_id))

    def on_edit_skill(self: HermesApp, message: EditSkill) -> None:
        skill = self.skills.get(message.name)
        if skill is None or skill.path is None:
            self.notify(f"The skill {message.name} no longer exists.", severity="error", markup=False)
            return
        from hermes_tui.skills.manager import SkillError

        before = self.skills.version_text(skill.name, "current")
        self._edit(skill.path)
        try:  # the version before the edit is archived, as a refinement does (F9 restores it)
            self.skills.book_edit(skill.name, before)
        except (SkillError, OSError) as exc:  # e.g. the edit broke the frontmatter: the pane says why
            self.notify(f"The edit of {skill.name} was not kept as a version: {exc}", severity="warning",
                        markup=False)
        self.skills.reload()
        if pane := self.mounted_pane("skills"):
            pane.refresh_data()

    def on_edit_file(self: HermesApp, message: EditFile) -> None:
        self._edit(message.path)
        if pane := self.mounted_pane(message.pane):
            pane.refresh_data()

    def _edit(self: HermesApp, path: Path) -> None:
        """Suspend the app and run ``$VISUAL``/``$EDITOR`` (else vi) on ``path``."""
        import shlex
        import subprocess

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            with self.suspend():
                subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (SuspendNotSupported, OSError, ValueError) as exc:
            self.notify(f"Could not open an editor ({editor}): {exc}", severity="error", markup=False)
