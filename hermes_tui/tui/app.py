"""The Hermes app: header, four panes one key away, status line, footer; sending, setup,
approvals, sessions and quitting. ``build_app`` is the one place an app is assembled (CLI, tests).

Start-up: the first frame shows the chat only. Then, in this order: the MCP servers start in the
background (``agent/mcp``), the stores open, litellm is imported in the background
(``llm.warm()``), a resumed session is shown, the setup opens if there is no key. The browsing
panes are built the first time they are shown.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer

from hermes_tui.background import Background
from hermes_tui.clock import Clock
from hermes_tui.config import Config, ConfigError
from hermes_tui.tui import actions, collector, commands
from hermes_tui.tui.approval import ApprovalBridge, ApprovalRequest
from hermes_tui.tui.chat import ChatPane
from hermes_tui.tui.format import plural, short_path
from hermes_tui.tui.history import HISTORY_FILE, PromptHistory
from hermes_tui.tui.messages import McpLine
from hermes_tui.tui.panes import BROWSING_PANES, PANES, make_pane
from hermes_tui.tui.prompt import PromptArea
from hermes_tui.tui.session import ChatSession
from hermes_tui.tui.status import HeaderBar, PaneBar, StatusLine
from hermes_tui.tui.stores import Stores

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.conversation import ChatMessage
    from hermes_tui.learning.pending import Writer
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.tui.command_runner import CommandRunner
    from hermes_tui.tui.messages import EditFile, EditSkill, ForgetSession, OpenTranscript, ResumeSession, UseSkill
    from hermes_tui.tui.progress_bar import ProgressReport
    from hermes_tui.tui.traces import Trace
    from hermes_tui.tui.undo import UndoLog
    from hermes_tui.tui.usage import UsageLedger

log = logging.getLogger(__name__)

STYLESHEET = Path(__file__).parent.parent / "hermes.tcss"
SUMMARY_TIMEOUT = 3.0  # seconds a session summary may take when leaving a session
QUIT_GRACE = 4.0  # the most quitting waits for the summary (an unreachable provider never hangs it)
CANCEL_GRACE = 2.0  # how long quitting waits for a cancelled turn to wind down
PANE_TABS = {pane.name: (pane.title, pane.keys[0].upper()) for pane in PANES}
QUIT_CONFIRM = 2.0  # seconds within which a second ctrl+c quits


class HermesApp(App[int]):
    CSS_PATH = STYLESHEET
    TITLE = "Hermes"
    BINDINGS = actions.bindings("app")  # declared once, in actions.ACTIONS

    def __init__(self, config: Config, stores: Stores, *, session_id: int | None = None,
                 clock: Clock | None = None, continue_last: bool = False) -> None:
        super().__init__()
        actions.restore_alt_digits()
        self.config = config
        self.stores = stores
        self.clock: Clock = clock or time.monotonic
        self.history = PromptHistory(config.home / HISTORY_FILE)
        self.approvals = ApprovalBridge(self, short_path(config.workspace), str(config.workspace),
                                        on_answered=self._approval_answered, home=config.home)
        self._mcp: McpManager | None = None
        self.session = ChatSession(config, stores, self.approvals)
        self._command_runner: CommandRunner | None = None
        self._resume_at_start = session_id
        self._continue_last = continue_last  # -c: resume this workspace's last session at start
        self.background = Background(self.clock)  # every thread the app starts (summaries kept at quit)
        self._pending_summaries: Writer | None = None  # earlier sessions' (learning/pending.py)
        self.markdown_loading: threading.Thread | None = None  # after the first frame (load_markdown)
        self._quitting = False
        self._quit_armed_until = 0.0

    @functools.cached_property
    def usage(self) -> UsageLedger:
        """Tokens and cost per session and model (/cost); loaded with the first use, after the
        first frame (it brings sqlite3)."""
        from hermes_tui.tui.usage import UsageLedger

        return UsageLedger(self.config.db_path, self.background)

    @functools.cached_property
    def undo_log(self) -> UndoLog:
        """The messages /undo and /retry took out (loaded like ``usage``)."""
        from hermes_tui.tui.undo import UndoLog

        return UndoLog(self.config.db_path, self.background)

    @property
    def command_runner(self) -> CommandRunner:
        """What the slash commands do (loaded with the first command)."""
        if self._command_runner is None:
            from hermes_tui.tui.command_runner import CommandRunner

            self._command_runner = CommandRunner(self)
        return self._command_runner

    @property
    def mcp(self) -> McpManager:
        """The MCP servers (built after the first frame, when they start; ``/mcp`` shows them)."""
        if self._mcp is None:
            from hermes_tui.agent.mcp.manager import McpManager

            self._mcp = McpManager(self.config.home, self.config.workspace)
            self.session.mcp = self._mcp
        return self._mcp

    @property
    def memory(self) -> MemoryStore:
        return self.stores.memory

    @property
    def skills(self) -> SkillManager:
        return self.stores.skills

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield PaneBar(PANE_TABS, id="pane-bar")
        with ContentSwitcher(id="panes", initial="chat-pane"):
            yield ChatPane(self.history, self.clock, self.background, id="chat-pane")
        yield StatusLine(self.clock, id="status")
        yield Footer()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):  # the collector waits for a quiet moment
            collector.input_seen(self.clock())
        await super().on_event(event)

    def on_mount(self) -> None:
        self.show_header()
        self.query_one("#pane-bar", PaneBar).show_active("chat")
        self.chat.focus_main()
        self.call_after_refresh(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        # The MCP servers first: before a session can be built, so every session offers their tools.
        self.mcp.subscribe(lambda line: self.post_message(McpLine(line)))
        await asyncio.to_thread(self.mcp.start)
        # Said from whichever thread opens the store (``call_from_thread`` would raise on this one).
        loop = asyncio.get_running_loop()
        self.stores.on_upgrade = lambda line: loop.call_soon_threadsafe(
            lambda: self.notify(line, timeout=30, markup=False))
        from hermes_tui.tui.progress_bar import PostedProgress

        self.stores.progress = PostedProgress(self.post_message)  # the reindex, a first skills index
        try:
            await asyncio.to_thread(self.stores.open)  # never on the event loop: it may upgrade the schema
        except Exception as exc:  # noqa: BLE001 - a readable line; the panes will say it again
            log.exception("opening the stores failed")
            await self.chat.add_notice(f"Cannot open Hermes' data in {short_path(self.config.home)}: {exc}", "error")
        else:
            if self.memory.notice:  # e.g. a read-only store: browsing works, saving does not
                await self.chat.add_notice(self.memory.notice, "error")
        for line in self.config.warnings:  # e.g. a ./.env that tried to pick the provider or key
            await self.chat.add_notice(line, "error")
        self.markdown_loading = self.background.start("hermes-markdown", load_markdown)
        warm_llm(self.config, self.background)
        if self.stores.opened:
            self._pending_summaries = await asyncio.to_thread(write_pending_summaries, self)
        if self._resume_at_start is not None:
            await self.resume(self._resume_at_start)
        elif self.stores.opened:
            from hermes_tui.tui.last_session import at_start

            await at_start(self, continue_last=self._continue_last)
        if self.approvals.lasting is not None and (line := await asyncio.to_thread(self.approvals.lasting.warning)):
            await self.chat.add_notice(line, "error")
        if not self.config.has_api_key:
            self.open_setup()
        from hermes_tui.agent.sandbox import startup_notice

        if sandbox_line := await asyncio.to_thread(startup_notice, self.config):  # probes bwrap once
            await self.chat.add_notice(sandbox_line, "error")

    # -- parts

    @property
    def chat(self) -> ChatPane:
        return self.query_one("#chat-pane", ChatPane)

    @property
    def status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    def show_header(self) -> None:
        self.query_one("#header", HeaderBar).show(self.config, self.session.session_id)

    def switch_model(self, spec: str) -> Config:
        """``/model [provider:]model``: the session's model and the app's config follow; raises
        ConfigError for a model that cannot be used."""
        self.config = self.session.set_model(spec)
        return self.config

    def show_usage(self) -> None:
        """The session's tokens and cost, from every run of it (restored on /resume)."""
        from hermes_tui.tui.usage import totals

        total = totals(self.usage.of(self.session.session_id))
        for status in self.query(StatusLine):  # none while the app shuts down
            loop = self.session.loop
            status.set_usage(total.prompt_tokens, total.completion_tokens, total.cost_usd,
                             loop.context_fill if loop is not None else None, estimated=total.estimated,
                             assumed=loop is not None and loop.context_fill is not None and loop.context.assumed)

    # -- panes

    @property
    def active_pane(self) -> str:
        return (self.query_one("#panes", ContentSwitcher).current or "chat-pane").removesuffix("-pane")

    def mounted_pane(self, name: str) -> Any:
        """The pane if it has been built already (the browsing panes are built on first show)."""
        found = self.query(f"#{name}-pane")
        return found.first() if found else None

    async def show_pane(self, name: str) -> Any:
        """Switch to a pane (building it first if needed), refresh and focus it; return it."""
        pane = self.mounted_pane(name)
        if pane is None:
            pane = make_pane(name, self.memory, self.skills)
            await self.query_one("#panes", ContentSwitcher).mount(pane)
        self.query_one("#panes", ContentSwitcher).current = f"{name}-pane"
        self.query_one("#pane-bar", PaneBar).show_active(name)
        # Focus at once: keys typed right behind the pane key (F3 then F7) are already queued,
        # and a deferred focus would land after them, sending them to the hidden pane's widget.
        pane.focus_main()
        if name in BROWSING_PANES:
            pane.refresh_data()
        return pane

    async def action_show_pane(self, name: str) -> None:
        await self.show_pane(name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "show_pane":  # not from under a modal (approval, setup, transcript)
            return self.screen is self.screen_stack[0]
        return True

    # -- the prompt

    async def on_prompt_area_submitted(self, event: PromptArea.Submitted) -> None:
        """The prompt is already empty (it empties on Enter); the text is run, sent, queued, or
        given back to the prompt, never dropped."""
        text = event.text
        self.history.add(text)
        invocation = commands.parse(text)
        if invocation is not None:
            await self.command_runner.run(invocation, text)
            return
        await self.send(commands.as_message(text))

    async def send(self, text: str) -> None:
        """Start a turn; while one runs the message is queued; without a key it goes back to the prompt."""
        if self.chat.busy:
            self.chat.queue(text)
            return
        try:
            self.config.require_api_key()
        except ConfigError as exc:
            self.chat.prompt.give_back(text)
            self.notify(str(exc), severity="warning", markup=False)
            self.open_setup()
            return
        loop = await asyncio.to_thread(self.session.ensure_loop)  # starts a session: a write, off the loop
        self.show_header()
        await self.chat.start_turn(loop, text)

    async def on_chat_pane_turn_ended(self, message: ChatPane.TurnEnded) -> None:
        chat = message.control
        if chat.is_attached and not chat.busy and not self._quitting and (text := chat.next_queued()) is not None:
            await self.send(text)

    # -- long work on worker threads (progress_bar.py)

    async def on_progress_report(self, message: ProgressReport) -> None:
        """A bar above the status line while the work runs; gone when it is done."""
        from hermes_tui.tui.progress_bar import ProgressPanel

        if not self.screen_stack:  # the app shuts down
            return
        base = self.screen_stack[0]  # the status line's screen, also under a dialog (setup)
        panels = base.query(ProgressPanel)
        if message.finished:
            await panels.remove()
            return
        if not panels:
            statuses = base.query(StatusLine)
            if not statuses:
                return
            await base.mount(ProgressPanel(self.clock, id="progress"), before=statuses.first())
        base.query_one(ProgressPanel).show(message)

    # -- chat pane reports

    def on_chat_pane_activity(self, message: ChatPane.Activity) -> None:
        for status in self.query(StatusLine):  # none while the app shuts down
            status.set_activity(message.label, message.since)

    def on_chat_pane_usage_changed(self, message: ChatPane.UsageChanged) -> None:
        session_id = self.session.session_id
        if session_id is not None:
            usage = message.usage
            self.usage.add(session_id, f"{self.config.provider}:{self.config.model}", usage.prompt_tokens,
                           usage.completion_tokens, usage.cache_read_tokens, usage.cost_usd,
                           estimated=usage.estimated)
        self.show_usage()

    def on_chat_pane_skills_changed(self) -> None:
        if pane := self.mounted_pane("skills"):
            pane.refresh_data()

    # -- slash commands: typed, from the palette (ctrl+p), F1 for help

    async def action_command(self, name: str) -> None:
        await self.command_runner.run(commands.Invocation(name, ""))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for command in commands.COMMANDS:
            yield SystemCommand(command.title, command.help, self.command_runner.palette_callback(command))
        for action in actions.ACTIONS:
            if action.palette:
                yield SystemCommand(f"{action.label} ({action.key_text})", action.help,
                                    lambda action=action.action: self.run_action(action))

    def action_interrupt(self) -> None:
        """ctrl+c: copy a selection; else cancel the running turn; else a second press quits."""
        selected = self.screen.get_selected_text() or self._prompt_selection()
        if selected:
            self.copy_to_clipboard(selected)
            self.notify("Copied the selection.", timeout=2)
            return
        if self.chat.cancel_turn():  # from any screen: an open approval is denied and closed
            self.approvals.deny_pending()
            return
        if self.clock() < self._quit_armed_until:
            self.action_quit()
            return
        self._quit_armed_until = self.clock() + QUIT_CONFIRM
        self.notify(f"Press {actions.main_key('app', 'interrupt')} again to quit ({actions.main_key('app', 'quit')} "
                    "quits too).", timeout=QUIT_CONFIRM)

    def _prompt_selection(self) -> str:
        prompt = self.chat.prompt
        return prompt.selected_text if prompt.has_focus else ""

    # -- sessions

    def leave_session(self) -> None:
        """Detach the current loop and summarise it in the background."""
        loop = self.session.detach()
        self.approvals.reset()
        if loop is not None:
            self._summarise(loop)

    def _summarise(self, loop: AgentLoop) -> None:
        """Store the session's summary in the background: an unreachable provider never holds the
        app, and quitting waits for it (``QUIT_GRACE``)."""
        self.background.start(f"hermes-close-{loop.session_id}", lambda: loop.close(timeout=SUMMARY_TIMEOUT), keep=True)

    async def resume(self, session_id: int) -> None:
        if await self.command_runner.refuse_while_busy("Resuming a session"):
            return
        await self.show_pane("chat")
        if session_id == self.session.session_id:
            await self.chat.add_notice(f"Session {session_id} is the current one.")
            return
        previous = self.session.loop
        undone = self.undo_log.undone(session_id)
        async with self.chat.holding(f"loading session {session_id}…"):
            try:  # the store reads and the token count run off the app thread
                messages = await asyncio.to_thread(self._load_session, session_id, undone)
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

    def _load_session(self, session_id: int, undone: set[int]) -> list[ChatMessage]:
        """Switch the loop to ``session_id`` and read what the view draws (a worker thread);
        raises ValueError when it does not exist."""
        loop = self.session.resume(session_id, undone)
        self.usage.load(session_id)
        loop.context_usage()  # the status line's context % before the next call
        return [m for m in self.memory.get_messages(session_id) if m.id not in undone]

    # -- forgetting a session (/forget, the Sessions pane's x)

    def ask_to_forget(self, session_id: int) -> None:
        from hermes_tui.tui.confirm import ConfirmScreen

        current = " (the current one: the chat starts afresh)" if session_id == self.session.session_id else ""
        question = (f"Forget session {session_id}{current} for good? Its messages are deleted from memory, "
                    "the search index and the database file. This cannot be undone.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._forget(session_id), group="forget")

        self.push_screen(ConfirmScreen(question, confirm_label="Forget"), answered)

    async def _forget(self, session_id: int) -> None:
        if session_id == self.session.session_id:
            if self.chat.busy:
                await self.chat.add_notice("Forgetting the session has to wait for the running turn.", "error")
                return
            self.session.detach()  # no summary: the session is going away
            self.approvals.reset()
            await self.chat.clear()
            self.show_header()
        try:
            prompts, files = await asyncio.to_thread(self._traces_of, session_id)
            count = await asyncio.to_thread(self.memory.delete_session, session_id)
        except KeyError:
            await self.chat.add_notice(f"There is no session {session_id}.", "error")
            return
        except Exception as exc:  # noqa: BLE001 - one readable line; details in the log
            log.exception("forgetting session %s failed", session_id)
            await self.chat.add_notice(f"Could not forget session {session_id}: {exc}", "error")
            return
        from hermes_tui.tui import traces

        removed = await asyncio.to_thread(traces.remove, files)
        dropped = await asyncio.to_thread(self.history.forget,
                                          lambda entry: entry in prompts or commands.as_message(entry) in prompts)
        self.show_usage()
        wrote = f"; removed {', '.join(short_path(p) for p in removed)}" if removed else ""
        await self.chat.add_notice(f"Forgot session {session_id} ({plural(count, 'message')}, "
                                   f"{plural(dropped, 'prompt')} in the prompt history{wrote}).")
        if pane := self.mounted_pane("sessions"):
            pane.refresh_data()

    def _traces_of(self, session_id: int) -> tuple[set[str], list[Trace]]:
        """What /forget removes besides the database rows: the session's prompts, the files made of it."""
        from hermes_tui.tui import traces

        prompts = {m.content for m in self.memory.get_messages(session_id) if m.role == "user" and m.content}
        return prompts, traces.traces_of(self.config.db_path, session_id)

    # -- messages from the panes

    async def on_mcp_line(self, message: McpLine) -> None:
        from hermes_tui.textsafe import printable

        if self.query("#chat-pane"):
            await self.chat.add_notice(printable(message.line), "error")

    def on_forget_session(self, message: ForgetSession) -> None:
        self.ask_to_forget(message.session_id)

    async def on_resume_session(self, message: ResumeSession) -> None:
        await self.resume(message.session_id)

    async def on_use_skill(self, message: UseSkill) -> None:
        await self.show_pane("chat")
        self.chat.prompt.load(f"use the skill {message.name}: ")

    def on_open_transcript(self, message: OpenTranscript) -> None:
        from hermes_tui.tui.transcript import TranscriptScreen

        self.push_screen(TranscriptScreen(self.memory, message.session_id, message.message_id))

    def on_edit_skill(self, message: EditSkill) -> None:
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

    def on_edit_file(self, message: EditFile) -> None:
        self._edit(message.path)
        if pane := self.mounted_pane(message.pane):
            pane.refresh_data()

    def _edit(self, path: Path) -> None:
        """Suspend the app and run ``$VISUAL``/``$EDITOR`` (else vi) on ``path``."""
        import shlex
        import subprocess

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            with self.suspend():
                subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (SuspendNotSupported, OSError, ValueError) as exc:
            self.notify(f"Could not open an editor ({editor}): {exc}", severity="error", markup=False)

    # -- approvals (asked by the turn's worker thread)

    def on_approval_request(self, request: ApprovalRequest) -> None:
        self.approvals.show(request)

    def _approval_answered(self, name: str, choice: str) -> None:
        """The tool's timer starts now: waiting for the user is not the tool's time."""
        if self.query("#chat-pane"):
            self.chat.approval_answered(name)

    # -- first-run setup

    def open_setup(self) -> None:
        from hermes_tui.tui.setup_screen import SetupScreen

        if not isinstance(self.screen, SetupScreen):
            self.push_screen(SetupScreen(self.config), self._setup_done)

    async def _setup_done(self, config: Config | None) -> None:
        if config is None:
            return
        self.config = config
        self.session.set_config(config)
        self.show_header()
        await self.chat.add_notice(f"Saved. Hermes now uses {config.provider}:{config.model}.")
        self.chat.focus_main()
        if config.api_base:
            self.run_worker(self._check_endpoint(config.api_base), group="endpoint")

    async def _check_endpoint(self, url: str) -> None:
        """Test the saved endpoint off the event loop and say what was found."""
        from hermes_tui.tui.setup_screen import connection_problem

        problem = await asyncio.to_thread(connection_problem, url)
        if problem is None:
            await self.chat.add_notice(f"The endpoint {url} answers.")
        else:
            await self.chat.add_notice(f"{problem} Fix it with /setup.", "error")

    # -- quitting

    def action_quit(self) -> None:
        """Cancel a running turn, save the session summary (bounded wait), exit. Twice: at once.

        The waiting runs in a worker so the app keeps processing messages (the cancelled turn's
        last events, closing the approval screen) meanwhile.
        """
        if self._quitting:
            self.exit(0)
            return
        self._quitting = True
        self.run_worker(self._quit(), group="quit")

    async def _quit(self) -> None:
        if self.chat.cancel_turn():
            self.approvals.deny_pending()
            await self._wait_until(lambda: not self.chat.busy, CANCEL_GRACE)
        self.approvals.stop()
        if self._pending_summaries is not None:
            self._pending_summaries.stop()  # the one being written stays pending; its request closes
        loop = self.session.detach()
        if loop is not None:
            self.status.set_activity(f"saving the session summary… ({actions.main_key('app', 'quit')} again quits at once)")
            self._summarise(loop)
        self.background.cancel()  # /learn, /compact: their requests close
        await self._wait_until(lambda: not self.background.running(), QUIT_GRACE)
        self.exit(0)

    def on_unmount(self) -> None:
        """However the app ends, a worker waiting for an approval is released."""
        self.approvals.stop()

    async def _wait_until(self, done: Callable[[], bool], timeout: float) -> None:
        """Poll ``done`` until ``timeout`` has passed on the app's clock (tests move it)."""
        deadline = self.clock() + timeout
        while not done() and self.clock() < deadline:
            await asyncio.sleep(0.05)


def load_markdown() -> None:
    """Import the answer's Markdown widgets (~60 ms, markdown-it) and build the code highlighters
    on a thread after the first frame: the first answer's first words, and its first code block,
    no longer wait for them."""
    from hermes_tui.tui import answer

    answer.warm_highlighting()


def warm_llm(config: Config, background: Background) -> None:
    """Start the helper process that parses the model's streams (``llm_host``: the TUI surface
    streams there), import litellm in the background (it takes seconds), then pace the garbage
    collector (``collector``): litellm brings a huge heap of long-lived objects that collections
    would otherwise walk again and again.
    """
    from hermes_tui import llm, llm_host

    llm_host.shared().start(config)
    importing = llm.warm(config)  # with the config: its offline first call too (llm.warm)

    def tune() -> None:
        importing.join()
        collector.tune()

    background.start("hermes-gc-tune", tune)


def write_pending_summaries(app: HermesApp) -> Writer | None:
    """Earlier sessions' pending summaries, written in the background while no turn runs."""
    from hermes_tui import llm_host
    from hermes_tui.learning.pending import start_background

    return start_background(app.config, app.memory, busy=lambda: app.chat.busy, host=llm_host.shared())


def build_app(config: Config, *, session_id: int | None = None, clock: Clock | None = None,
              continue_last: bool = False) -> HermesApp:
    """The app with its own MemoryStore and SkillManager (opened right after the first frame);
    the one builder used by ``run_app`` and the tests. ``clock`` drives every time on screen."""
    return HermesApp(config, Stores(config), session_id=session_id, clock=clock, continue_last=continue_last)


def run_app(config: Config, session_id: int | None = None, continue_last: bool = False) -> int:
    """Run the full-screen app until the user quits; the exit code for the CLI."""
    from hermes_tui.logs import setup_logging

    setup_logging(config)
    app = build_app(config, session_id=session_id, continue_last=continue_last)
    try:
        app.run()
    finally:
        app.stores.close()
        app.mcp.close()
    return app.return_code or 0
