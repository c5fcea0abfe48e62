"""The app's life after its first frame and at its end, mixed into ``HermesApp`` (``app.py``).

Start-up, in this order: the MCP servers start in the background (``agent/mcp``), the stores open,
the model helper process starts (it imports litellm: the app never does), a resumed session is
shown, the setup opens if there is no key. Quitting cancels a running turn and waits a bounded grace for the summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes_tui.background import Background
from hermes_tui.config import Config
from hermes_tui.tui import actions, collector
from hermes_tui.tui.format import short_path
from hermes_tui.tui.messages import McpLine
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.learning.pending import Writer
    from hermes_tui.tui.app import HermesApp

log = logging.getLogger(__name__)

QUIT_GRACE = 4.0  # the most quitting waits for the summary (an unreachable provider never hangs it)
CANCEL_GRACE = 2.0  # how long quitting waits for a cancelled turn to wind down


class Lifecycle:
    """Start-up, setup and quitting, for ``HermesApp``."""

    async def _after_first_frame(self: HermesApp) -> None:
        # The MCP servers first: before a session can be built, so every session offers their tools.
        self.mcp.subscribe(lambda line: self.post_message(McpLine(line)))
        await in_thread(self, self.mcp.start)
        # Said from whichever thread opens the store (``call_from_thread`` would raise on this one).
        loop = asyncio.get_running_loop()
        self.stores.on_upgrade = lambda line: loop.call_soon_threadsafe(
            lambda: self.notify(line, timeout=30, markup=False))
        from hermes_tui.tui.progress_bar import PostedProgress

        self.stores.progress = PostedProgress(self.post_message)  # the reindex, a first skills index
        try:
            await in_thread(self, self.stores.open)  # never on the event loop: it may upgrade the schema
        except Exception as exc:  # a readable line; the panes will say it again
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
            self._pending_summaries = await in_thread(self, write_pending_summaries, self)
        if self._resume_at_start is not None:
            await self.resume(self._resume_at_start)
        elif self.stores.opened:
            from hermes_tui.tui.last_session import at_start

            await at_start(self, continue_last=self._continue_last)
        if self.approvals.lasting is not None and (line := await in_thread(self, self.approvals.lasting.warning)):
            await self.chat.add_notice(line, "error")
        if not self.config.has_api_key:
            self.open_setup()
        from hermes_tui.agent.sandbox import startup_notice

        if sandbox_line := await in_thread(self, startup_notice, self.config):  # probes bwrap once
            await self.chat.add_notice(sandbox_line, "error")

    # -- first-run setup

    def open_setup(self: HermesApp) -> None:
        from hermes_tui.tui.setup_screen import SetupScreen

        if not isinstance(self.screen, SetupScreen):
            self.push_screen(SetupScreen(self.config), self._setup_done)

    async def _setup_done(self: HermesApp, config: Config | None) -> None:
        if config is None:
            return
        self.config = config
        self.session.set_config(config)
        self.show_header()
        await self.chat.add_notice(f"Saved. Hermes now uses {config.provider}:{config.model}.")
        self.chat.focus_main()
        if config.api_base:
            self.run_worker(self._check_endpoint(config.api_base), group="endpoint")

    async def _check_endpoint(self: HermesApp, url: str) -> None:
        """Test the saved endpoint off the event loop and say what was found."""
        from hermes_tui.tui.setup_screen import connection_problem

        problem = await in_thread(self, connection_problem, url)
        if problem is None:
            await self.chat.add_notice(f"The endpoint {url} answers.")
        else:
            await self.chat.add_notice(f"{problem} Fix it with /setup.", "error")

    # -- quitting

    def action_quit(self: HermesApp) -> None:
        """Cancel a running turn, save the session summary (bounded wait), exit. Twice: at once.

        The waiting runs in a worker so the app keeps processing messages (the cancelled turn's
        last events, closing the approval screen) meanwhile.
        """
        if self._quitting:
            self.exit(0)
            return
        self._quitting = True
        self.run_worker(self._quit(), group="quit")

    async def _quit(self: HermesApp) -> None:
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

    def on_unmount(self: HermesApp) -> None:
        """However the app ends, a worker waiting for an approval is released."""
        self.approvals.stop()

    async def _wait_until(self: HermesApp, done: Callable[[], bool], timeout: float) -> None:
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
    """Start the helper process that makes every model call of the app (``llm_host``: litellm is
    imported there, never in the app's process), then pace the garbage collector (``collector``)
    once the app's own start-up heap is built.
    """
    from hermes_tui import llm_host

    host = llm_host.shared()
    host.start(config)  # with the config: the helper warms litellm up for its model

    def tune() -> None:
        host.wait_ready()
        collector.tune()

    background.start("hermes-gc-tune", tune)


def write_pending_summaries(app: HermesApp) -> Writer | None:
    """Earlier sessions' pending summaries, written in the background while no turn runs."""
    from hermes_tui import llm_host
    from hermes_tui.learning.pending import start_background

    return start_background(app.config, app.memory, busy=lambda: app.chat.busy, host=llm_host.shared())
