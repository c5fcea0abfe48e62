"""The Hermes app: header, four panes one key away, status line, footer; sending, panes, the
prompt, slash commands and approvals. ``build_app`` is the one place an app is assembled (CLI, tests).

Components own the rest: ``Startup`` (``startup.py``) what happens after the first frame,
``SessionController`` (``session_controller.py``) resume, /new, forget, undo and retry, ``editor``
the user's editor. Start-up: the first frame shows the chat only; the browsing panes are built
the first time they are shown. Quitting cancels a running turn and waits a bounded grace for the
session's summary.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer

from hermes_tui.background import Background
from hermes_tui.clock import Clock
from hermes_tui.config import Config, ConfigError
from hermes_tui.tui import actions, collector, commands
from hermes_tui.tui.approval import ApprovalBridge, ApprovalRequest
from hermes_tui.tui.chat import ChatPane
from hermes_tui.tui.format import short_path
from hermes_tui.tui.history import HISTORY_FILE, PromptHistory
from hermes_tui.tui.messages import JobsChanged, McpLine
from hermes_tui.tui.panes import BROWSING_PANES, PANES, make_pane
from hermes_tui.tui.prompt import PromptArea
from hermes_tui.tui.session import ChatSession
from hermes_tui.tui.session_controller import SessionController
from hermes_tui.tui.startup import Startup
from hermes_tui.tui.status import HeaderBar, PaneBar, StatusLine
from hermes_tui.tui.stores import Stores
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.memory.usage import UsageLedger
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.tui.command_runner import CommandRunner
    from hermes_tui.tui.messages import (
        EditFile,
        EditSkill,
        ForgetSession,
        OpenTranscript,
        ResumeSession,
        UseSkill,
    )
    from hermes_tui.tui.progress_bar import ProgressReport

log = logging.getLogger(__name__)

STYLESHEET = Path(__file__).parent.parent / "hermes.tcss"
PANE_TABS = {pane.name: (pane.title, pane.keys[0].upper()) for pane in PANES}
QUIT_CONFIRM = 2.0  # seconds within which a second ctrl+c quits
QUIT_GRACE = 4.0  # the most quitting waits for the summary (an unreachable provider never hangs it)
CANCEL_GRACE = 2.0  # how long quitting waits for a cancelled turn to wind down


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
        self.session = ChatSession(config, stores, lambda: self.approvals.policy, on_host_ready=self._heap_built)
        self.session.on_jobs = self._jobs_changed
        self.sessions = SessionController(self)
        self._command_runner: CommandRunner | None = None
        self.startup = Startup(resume=session_id, continue_last=continue_last)
        self.background = Background(self.clock)  # every thread the app starts (summaries kept at quit)
        self._quitting = False
        self._quit_armed_until = 0.0

    @functools.cached_property
    def usage(self) -> UsageLedger:
        """Tokens and cost per session and model (/cost); loaded with the first use, after the
        first frame (it brings sqlite3)."""
        from hermes_tui.memory.usage import UsageLedger

        return UsageLedger(self.config.db_path, self.background)

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
    def markdown_loading(self) -> threading.Thread | None:
        """The thread importing the answer's Markdown widgets after the first frame (``startup``)."""
        return self.startup.markdown_loading

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
        self.call_after_refresh(self.startup.run, self)

    # -- parts

    @property
    def chat(self) -> ChatPane:
        return self.query_one("#chat-pane", ChatPane)

    @property
    def status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    def show_header(self) -> None:
        """The header's session line and the status line's mode (both follow the session)."""
        self.query_one("#header", HeaderBar).show(self.config, self.session.session_id)
        for status in self.query(StatusLine):  # none while the app shuts down
            status.set_mode(self.session.plan)

    def switch_model(self, spec: str) -> Config:
        """``/model [provider:]model``: the session's model and the app's config follow; raises
        ConfigError for a model that cannot be used."""
        self.config = self.session.set_model(spec)
        return self.config

    def show_usage(self) -> None:
        """The session's tokens and cost, from every run of it (restored on /resume)."""
        from hermes_tui.memory.usage import totals

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

    async def on_prompt_area_image_pasted(self, event: PromptArea.ImagePasted) -> None:
        await self.command_runner.attach_image(event.path, pasted=True)

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
        loop = await in_thread(self, self.session.ensure_loop)  # starts a session: a write, off the loop
        self.show_header()
        await self.chat.start_turn(loop, text)

    async def on_chat_pane_turn_ended(self, message: ChatPane.TurnEnded) -> None:
        chat = message.control
        if not chat.is_attached or chat.busy or self._quitting:
            return
        if (text := chat.next_queued()) is not None:
            await self.send(text)  # typed while the plan was written: the user has moved on
        elif message.planned and self.session.plan:
            from hermes_tui.tui.plan_screen import PlanScreen

            self.push_screen(PlanScreen(), self._plan_chosen)

    async def _plan_chosen(self, choice: str | None) -> None:
        """Carry the plan out (plan mode ends first), keep planning, or discard it."""
        if choice in (None, "keep"):
            return
        self.session.plan = False
        self.show_header()
        if choice == "carry":
            from hermes_tui.agent.prompts import CARRY_OUT

            await self.send(CARRY_OUT)
        else:
            await self.chat.add_notice("Plan discarded; plan mode is off.")

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

    async def on_mcp_line(self, message: McpLine) -> None:
        from hermes_tui.textsafe import printable

        if self.query("#chat-pane"):
            await self.chat.add_notice(printable(message.line), "error")

    def _jobs_changed(self, line: str | None) -> None:
        self.post_message(JobsChanged(line))  # from a job's thread (post_message is thread-safe)

    async def on_jobs_changed(self, message: JobsChanged) -> None:
        """The status line counts the session's running jobs; one that ends says so in the chat."""
        from hermes_tui.textsafe import printable

        loop = self.session.loop
        for status in self.query(StatusLine):  # none while the app shuts down
            status.set_jobs(len(loop.tools.jobs.running()) if loop is not None else 0)
        if message.line is not None and self.query("#chat-pane"):
            await self.chat.add_notice(printable(message.line))

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

    async def action_interrupt(self) -> None:
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
            await self.action_quit()
            return
        self._quit_armed_until = self.clock() + QUIT_CONFIRM
        self.notify(f"Press {actions.main_key('app', 'interrupt')} again to quit ({actions.main_key('app', 'quit')} "
                    "quits too).", timeout=QUIT_CONFIRM)

    def _prompt_selection(self) -> str:
        prompt = self.chat.prompt
        return prompt.selected_text if prompt.has_focus else ""

    # -- approvals (asked by the turn's worker thread)

    def on_approval_request(self, request: ApprovalRequest) -> None:
        self.approvals.show(request)

    def _approval_answered(self, name: str, choice: str) -> None:
        """The tool's timer starts now: waiting for the user is not the tool's time."""
        if self.query("#chat-pane"):
            self.chat.approval_answered(name)

    # -- what the panes ask (messages.py)

    def on_forget_session(self, message: ForgetSession) -> None:
        self.sessions.ask_to_forget(message.session_id)

    async def on_resume_session(self, message: ResumeSession) -> None:
        await self.sessions.resume(message.session_id)

    async def on_use_skill(self, message: UseSkill) -> None:
        await self.show_pane("chat")
        self.chat.prompt.load(f"use the skill {message.name}: ")

    def on_open_transcript(self, message: OpenTranscript) -> None:
        from hermes_tui.tui.transcript import TranscriptScreen

        self.push_screen(TranscriptScreen(self.memory, message.session_id, message.message_id))

    def on_edit_skill(self, message: EditSkill) -> None:
        from hermes_tui.tui.editor import edit_skill

        if edit_skill(self, self.skills, message.name) and (pane := self.mounted_pane("skills")):
            pane.refresh_data()

    def on_edit_file(self, message: EditFile) -> None:
        from hermes_tui.tui.editor import edit_file

        edit_file(self, message.path)
        if pane := self.mounted_pane(message.pane):
            pane.refresh_data()

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

        problem = await in_thread(self, connection_problem, url)
        if problem is None:
            await self.chat.add_notice(f"The endpoint {url} answers.")
        else:
            await self.chat.add_notice(f"{problem} Fix it with /setup.", "error")

    # -- quitting

    async def action_quit(self) -> None:
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
        self.startup.stop()
        loop = self.session.detach()
        if loop is not None:
            self.status.set_activity(f"saving the session summary… ({actions.main_key('app', 'quit')} again quits at once)")
            self.sessions.summarise(loop)
        self.background.cancel()  # /learn, /compact: their requests close
        await self._wait_until(lambda: not self.background.running(), QUIT_GRACE)
        self.exit(0)

    def _heap_built(self) -> None:
        """The model host answers (on a thread of its own): once the Markdown widgets have loaded
        too, the app's start-up heap is built; freeze it and pace the collector (``collector``).
        A running warm helper answers at once, before that thread is done."""
        loading = self.startup.markdown_loading
        if loading is not None:
            loading.join()
        collector.tune()

    def on_unmount(self) -> None:
        """However the app ends, a worker waiting for an approval is released, and the warm
        helper is no longer held (it ends after its idle time unless others use it)."""
        self.approvals.stop()
        self.session.closed.set()

    async def _wait_until(self, done: Callable[[], bool], timeout: float) -> None:
        """Poll ``done`` until ``timeout`` has passed on the app's clock (tests move it)."""
        deadline = self.clock() + timeout
        while not done() and self.clock() < deadline:
            await asyncio.sleep(0.05)


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
