"""What each slash command does (typed in the prompt, or chosen in the command palette)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui.config import ConfigError
from hermes_tui.memory import exports
from hermes_tui.tui import actions, commands
from hermes_tui.tui.format import short_path
from hermes_tui.tui.session import model_switch_notice
from hermes_tui.tui.workers import in_thread

_SESSIONS_KEY = actions.main_key("app", "show_pane('sessions')")  # named where a usage line points at the pane

if TYPE_CHECKING:
    from hermes_tui.tui.controls import Controls



class CommandRunner:
    """The handlers, one method per ``commands.COMMANDS`` row, found through ``HANDLERS``; they
    reach the app only through ``Controls`` (``controls.py``)."""

    def __init__(self, app: Controls) -> None:
        self.app = app

    async def run(self, invocation: commands.Invocation, typed: str = "") -> None:
        """Run a command; an unknown one goes back to the prompt (``typed``) with a hint."""
        handler = HANDLERS.get(invocation.name) if invocation.command else None
        if handler is None:
            if typed:
                self.app.chat.prompt.give_back(typed)
            await self.app.chat.add_notice(
                f"Unknown command /{invocation.name}: kept in the prompt. /help lists the commands; "
                "start with // to send a line that begins with / as a message.", "error")
            return
        await handler(self, invocation.argument)

    def palette_callback(self, command: commands.SlashCommand) -> Callable[[], object]:
        """Commands without an argument run; the others are put in the prompt to complete."""
        if not command.takes_argument:
            return lambda: self.run(commands.Invocation(command.name, ""))

        async def fill() -> None:
            await self.app.show_pane("chat")
            self.app.chat.prompt.load(f"/{command.name} ")

        return fill

    async def refuse_while_busy(self, what: str) -> bool:
        busy = self.app.chat.busy
        if busy:
            await self.app.chat.add_notice(f"{what} has to wait for the running turn: press {actions.main_key('chat', 'cancel_turn')} to cancel it.",
                                           "error")
        return busy

    async def _help(self, argument: str) -> None:
        from hermes_tui.tui.help_screen import HelpScreen

        if isinstance(self.app.screen, HelpScreen):
            return
        keys = [(action.key_text, action.help) for action in actions.ACTIONS if action.scope != "approval"]
        self.app.push_screen(HelpScreen(commands.help_markdown(keys)))

    async def _new(self, argument: str) -> None:
        if await self.refuse_while_busy("/new"):
            return
        self.app.sessions.leave()
        await self.app.chat.clear()
        self.app.show_header()
        self.app.show_usage()
        await self.app.chat.add_notice("New session: the previous one is being summarised in the background.")

    async def _model(self, argument: str) -> None:
        app = self.app
        if not argument:
            endpoint = app.config.effective_api_base or "the provider's own endpoint"
            await app.chat.add_notice(f"Model: {app.config.provider}:{app.config.model} at {endpoint}. "
                                      "Switch with /model [provider:]model.")
            return
        before = app.config
        try:
            app.switch_model(argument)
        except ConfigError as exc:
            await app.chat.add_notice(str(exc), "error")
            return
        app.show_header()
        await app.chat.add_notice(model_switch_notice(before, app.config))

    async def _skills(self, argument: str) -> None:
        pane = await self.app.show_pane("skills")
        pane.set_filter(argument)

    async def _memory(self, argument: str) -> None:
        pane = await self.app.show_pane("memory")
        if argument:
            pane.set_query(argument)

    async def _sessions(self, argument: str) -> None:
        await self.app.show_pane("sessions")

    async def _learn(self, argument: str) -> None:
        if await self.refuse_while_busy("/learn"):
            return
        loop = self.app.session.loop
        if loop is None:
            await self.app.chat.add_notice("Nothing to learn from yet: run a task first.")
            return
        await self.app.chat.add_notice("Looking for a skill in the last turn…")
        self.app.chat.run_in_background(loop.learn_now(), "hermes-learn", loop.cancel)

    async def _plan(self, argument: str) -> None:
        """Toggle the session's plan mode (the agent owns it; the status line shows it)."""
        if await self.refuse_while_busy("/plan"):
            return
        session = self.app.session
        session.plan = not session.plan
        self.app.show_header()
        if session.plan:
            await self.app.chat.add_notice("Plan mode: Hermes gets read-only tools only and answers with a plan; "
                                           "then you choose to carry it out, keep planning or discard it. /plan again leaves.")
        else:
            await self.app.chat.add_notice("Plan mode off: every tool is offered again.")

    async def _compact(self, argument: str) -> None:
        if await self.refuse_while_busy("/compact"):
            return
        loop = self.app.session.loop
        if loop is None:
            await self.app.chat.add_notice("Nothing to compact yet: the conversation is empty.")
            return
        await self.app.chat.add_notice("Compacting the conversation…")
        self.app.chat.run_in_background(loop.compact(argument or None), "hermes-compact", loop.cancel)

    async def _resume(self, argument: str) -> None:
        if not argument.isdigit():
            await self.app.chat.add_notice(f"Usage: /resume <id> (the Sessions pane, {_SESSIONS_KEY}, lists the ids).",
                                           "error")
            return
        await self.app.sessions.resume(int(argument))

    async def _retry(self, argument: str) -> None:
        if await self.refuse_while_busy("/retry"):
            return
        await self.app.sessions.retry()

    async def _undo(self, argument: str) -> None:
        if await self.refuse_while_busy("/undo"):
            return
        await self.app.sessions.undo()

    async def _rewind(self, argument: str) -> None:
        if await self.refuse_while_busy("/rewind"):
            return
        await self.app.sessions.rewind()

    async def _cost(self, argument: str) -> None:
        from hermes_tui.tui.session_tools import cost_markdown, window_line

        rows = self.app.usage.of(self.app.session.session_id)
        loop = self.app.session.loop
        window = None
        if loop is not None and loop.context_fill is not None:  # known once a request was counted
            window = window_line(loop.context.limit(), loop.context.window().source, loop.context.assumed)
        await self.app.chat.add_help(cost_markdown(rows, window))

    async def _remember(self, argument: str) -> None:
        from hermes_tui.memory import facts

        scope, text = "user", argument.strip()
        if text.lower().startswith("project:"):
            scope, text = "project", text[len("project:"):].strip()
        if not text:
            await self.app.chat.add_notice("Usage: /remember TEXT (about you), or /remember project: TEXT.", "error")
            return
        store = facts.for_config(self.app.config)
        try:
            saved = await in_thread(self.app, store.save, scope, text, session_id=self.app.session.session_id, by="user")
        except (facts.FactError, OSError) as exc:
            await self.app.chat.add_notice(f"Not remembered: {exc}", "error")
            return
        await self.app.chat.add_notice(saved.receipt + " — from the next session on, it is in the prompt.", "receipt")

    async def _image(self, argument: str) -> None:
        await self.attach_image(argument.strip())

    async def attach_image(self, given: str, pasted: bool = False) -> None:
        """``/image PATH`` or a pasted path: the image goes with the next message (``AgentLoop.attach_image``);
        ``/image`` lists what is attached, ``/image clear`` drops it."""
        from hermes_tui.agent.attachments import AttachmentError

        app = self.app
        if given in ("", "clear"):
            loop = app.session.loop
            attached = list(loop.attached) if loop is not None else []
            if given == "clear" and loop is not None:
                loop.attached.clear()
            if not attached:
                await app.chat.add_notice("No image is attached. /image PATH attaches one to your next message "
                                          "(PNG, JPEG, GIF or WebP); so does pasting or dropping its path.")
                return
            names = ", ".join(ref.describe() for ref in attached)
            verb = "Dropped" if given == "clear" else "Attached to your next message:"
            await app.chat.add_notice(f"{verb} {names}" + ("" if given == "clear" else " (/image clear drops them)."))
            return
        loop = await in_thread(app, app.session.ensure_loop)  # the session the message will go to
        try:
            ref = await in_thread(app, loop.attach_image, given)
        except AttachmentError as exc:
            await app.chat.add_notice(f"Not attached: {exc}", "error")
            return
        how = "the pasted path " if pasted else ""
        await app.chat.add_notice(f"Attached {how}{ref.describe()}: it goes with your next message "
                                  "(/image clear drops it).", "receipt")

    async def _context(self, argument: str) -> None:
        from hermes_tui.agent import instructions
        from hermes_tui.agent.runtime import context_report, tui_surface

        app = self.app
        word, _, number = argument.partition(" ")
        if argument and (word != "approve" or not number.strip().isdigit()):
            await app.chat.add_notice("Usage: /context, or /context approve N (N from the list /context shows).",
                                      "error")
            return
        report = await in_thread(self.app, context_report, app.config, app.memory, app.skills,
                                 tui_surface(None, app.session.host()),
                                 app.session.loop)
        if not argument:
            await app.chat.add_help(report.markdown())
            return
        files = report.instructions.files
        index = int(number) - 1
        if not 0 <= index < len(files) or not files[index].flagged or files[index].approved:
            await app.chat.add_notice(f"Instruction file {number} is not held back: /context lists them.", "error")
            return
        await in_thread(self.app, instructions.approve, app.config.home, files[index])
        await app.chat.add_notice(f"Approved {files[index].label}: sessions started from now on read it "
                                  "(this one keeps the prompt it started with).")

    async def _copy(self, argument: str) -> None:
        from hermes_tui.tui.session_tools import code_blocks, last_answer, osc52_likely

        app = self.app
        session_id = app.session.session_id
        answer = last_answer(app.memory.get_messages(session_id)) if session_id is not None else None
        if answer is None:
            await app.chat.add_notice("Nothing to copy yet: there is no answer in this session.")
            return
        what, text = "the last answer", answer
        if argument:
            blocks = code_blocks(answer)
            if not argument.isdigit() or not 1 <= int(argument) <= len(blocks):
                await app.chat.add_notice(f"Usage: /copy [N]: the last answer has {len(blocks)} code block(s).",
                                          "error")
                return
            what, text = f"code block {argument}", blocks[int(argument) - 1]
        app.copy_to_clipboard(text)  # OSC 52: the terminal may or may not honour it
        if osc52_likely(os.environ):
            app.notify(f"Copied {what} ({len(text):,} characters) to the clipboard (OSC 52).", timeout=4)
            return
        try:  # recorded, so forgetting the session removes it
            path = await in_thread(self.app, exports.write, app.config.db_path, session_id,
                                   app.config.home / "clipboard.txt", text)
        except OSError as exc:
            app.notify(f"Sent {what} by OSC 52; saving a copy failed: {exc}", severity="warning", markup=False)
            return
        app.notify(f"This terminal may ignore OSC 52: {what} is saved in {short_path(path)}.", timeout=8,
                   markup=False)

    async def _export(self, argument: str) -> None:
        from hermes_tui.tui.session_tools import export_markdown

        app = self.app
        session_id = app.session.session_id
        info = app.memory.get_session(session_id) if session_id is not None else None
        if info is None or session_id is None:
            await app.chat.add_notice("Nothing to export yet: send a message first.")
            return
        name = argument.strip() or str(app.config.home / "exports" / f"session-{session_id}.md")
        path = Path(os.path.expanduser(name))
        if not path.is_absolute():
            path = app.config.workspace / path
        text = export_markdown(session_id, info.title or info.first_user_line or "", app.memory.get_messages(session_id))
        try:  # recorded, so forgetting the session removes it
            await in_thread(self.app, exports.write, app.config.db_path, session_id, path, text)
        except OSError as exc:
            await app.chat.add_notice(f"Could not write {short_path(path)}: {exc.strerror or exc}", "error")
            return
        await app.chat.add_notice(f"Exported session {session_id} to {short_path(path)}.")

    async def _setup(self, argument: str) -> None:
        self.app.open_setup()

    async def _mcp(self, argument: str) -> None:
        from hermes_tui.tui.mcp_screen import McpScreen

        self.app.push_screen(McpScreen(self.app.mcp))

    async def _jobs(self, argument: str) -> None:
        from hermes_tui.tui.session_tools import job_markdown, jobs_markdown

        loop = self.app.session.loop
        jobs = loop.tools.jobs if loop is not None else None
        words = argument.split()
        number = words[-1] if words else ""
        if len(words) > 2 or (words and (not number.isdigit() or (len(words) == 2 and words[0] != "stop"))):
            await self.app.chat.add_notice("Usage: /jobs, /jobs N (its latest output), or /jobs stop N.", "error")
            return
        if jobs is None or not jobs.all():
            await self.app.chat.add_notice("No background jobs in this session (run_bash starts them with background: true).")
            return
        assert loop is not None  # it has jobs
        scrub = loop.tools.secrets.scrub  # as every tool's output
        if not words:
            await self.app.chat.add_help(scrub(jobs_markdown(jobs.all())))
            return
        job = jobs.get(int(number))
        if job is None:
            await self.app.chat.add_notice(f"{jobs.unknown(int(number)).capitalize()}.", "error")
        elif words[0] != "stop":
            recent = await in_thread(self.app, job.recent)
            await self.app.chat.add_help(scrub(job_markdown(job, recent)))
        elif not job.running:
            await self.app.chat.add_notice(f"Job {job.number} has already {job.state()}.")
        else:
            await in_thread(self.app, jobs.stop, job)  # its end is told as every job's (JobsChanged)

    async def _hooks(self, argument: str) -> None:
        from hermes_tui.agent.hooks import config, report
        from hermes_tui.tui.session_tools import hooks_markdown

        found = await in_thread(self.app, config.declared, self.app.config.home, self.app.config.workspace)
        await self.app.chat.add_help(hooks_markdown(report.lines(found)))

    async def _permissions(self, argument: str) -> None:
        from hermes_tui.tui.permissions_screen import PermissionsScreen

        self.app.push_screen(PermissionsScreen(self.app.approvals))

    async def _forget(self, argument: str) -> None:
        app = self.app
        if argument and not argument.isdigit():
            await app.chat.add_notice(f"Usage: /forget [id] (the Sessions pane, {_SESSIONS_KEY}, lists the ids).", "error")
            return
        session_id = int(argument) if argument else app.session.session_id
        if session_id is None:
            await app.chat.add_notice("Nothing to forget: this session has no messages yet.")
            return
        if session_id == app.session.session_id and await self.refuse_while_busy("/forget"):
            return
        app.sessions.ask_to_forget(session_id)

    async def _exit(self, argument: str) -> None:
        await self.app.action_quit()


HANDLERS: dict[str, Callable[[CommandRunner, str], Awaitable[None]]] = {
    "help": CommandRunner._help,
    "new": CommandRunner._new,
    "model": CommandRunner._model,
    "skills": CommandRunner._skills,
    "memory": CommandRunner._memory,
    "sessions": CommandRunner._sessions,
    "learn": CommandRunner._learn,
    "plan": CommandRunner._plan,
    "compact": CommandRunner._compact,
    "resume": CommandRunner._resume,
    "retry": CommandRunner._retry,
    "undo": CommandRunner._undo,
    "rewind": CommandRunner._rewind,
    "cost": CommandRunner._cost,
    "image": CommandRunner._image,
    "remember": CommandRunner._remember,
    "context": CommandRunner._context,
    "copy": CommandRunner._copy,
    "export": CommandRunner._export,
    "setup": CommandRunner._setup,
    "mcp": CommandRunner._mcp,
    "jobs": CommandRunner._jobs,
    "hooks": CommandRunner._hooks,
    "permissions": CommandRunner._permissions,
    "forget": CommandRunner._forget,
    "exit": CommandRunner._exit,
}
"""What each slash command runs: one entry per ``commands.COMMANDS`` row (a test checks it)."""
