"""The app's start-up after its first frame, a component that owns what start-up leaves behind:
the thread loading the Markdown widgets and the writer of earlier sessions' pending summaries.

In this order: the MCP servers start in the background (``agent/mcp``), the stores open, the
app's model host is reached or started in the background (``warm.app_host``: the warm helper, or
the app's own stream helper; litellm is never imported in the app's process), a resumed session
is shown, the setup opens if there is no key. Nothing here runs before the first frame: it is
painted without any of it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes_tui import heap
from hermes_tui.config import Config
from hermes_tui.tui.format import short_path
from hermes_tui.tui.messages import McpLine
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.learning.pending import Writer
    from hermes_tui.llm import ModelHost
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.tui.app import HermesApp

log = logging.getLogger(__name__)


class Startup:
    """What the app does once its first frame is on screen (``run``), and what that leaves running."""

    def __init__(self, *, resume: int | None, continue_last: bool) -> None:
        self.resume = resume  # a session id given on the command line
        self.continue_last = continue_last  # -c: resume this workspace's last session
        self.markdown_loading: threading.Thread | None = None  # load_markdown, once started
        self.pending_summaries: Writer | None = None  # earlier sessions' (learning/pending.py)

    async def run(self, app: HermesApp) -> None:
        heap.loaded()  # the first frame is on screen: what it took to paint it is frozen
        # The MCP servers first: before a session can be built, so every session offers their tools.
        def heard(line: str) -> None:
            app.post_message(McpLine(line))

        app.mcp.subscribe(heard)
        await in_thread(app, app.mcp.start)
        # Said from whichever thread opens the store (``call_from_thread`` would raise on this one).
        loop = asyncio.get_running_loop()
        def upgrading(line: str) -> None:
            loop.call_soon_threadsafe(lambda: app.notify(line, timeout=30, markup=False))

        app.stores.on_upgrade = upgrading
        from hermes_tui.tui.progress_bar import PostedProgress

        app.stores.progress = PostedProgress(app.post_message)  # the reindex, a first skills index
        try:
            await in_thread(app, app.stores.open)  # never on the event loop: it may upgrade the schema
        except Exception as exc:  # a readable line; the panes will say it again
            log.exception("opening the stores failed")
            await app.chat.add_notice(f"Cannot open Hermes' data in {short_path(app.config.home)}: {exc}", "error")
        else:
            if app.memory.notice:  # e.g. a read-only store: browsing works, saving does not
                await app.chat.add_notice(app.memory.notice, "error")
        for line in app.config.warnings:  # e.g. a ./.env that tried to pick the provider or key
            await app.chat.add_notice(line, "error")
        self.markdown_loading = app.background.start("hermes-markdown", load_markdown)
        host = app.session.host()  # the warm helper reached or started, or the app's own, from now
        if app.stores.opened:
            chat = app.chat  # looked up here: the writer's thread reads its busy flag, never the widget tree
            self.pending_summaries = await in_thread(app, write_pending_summaries, app.config, app.memory,
                                                     lambda: chat.busy, host)
        if self.resume is not None:
            await app.sessions.resume(self.resume)
        elif app.stores.opened:
            from hermes_tui.tui.last_session import at_start

            await at_start(app, continue_last=self.continue_last)
        if app.approvals.lasting is not None and (warning := await in_thread(app, app.approvals.lasting.warning)):
            await app.chat.add_notice(warning, "error")
        if not app.config.has_api_key:
            app.open_setup()
        from hermes_tui.agent.sandbox import startup_notice

        if sandbox_line := await in_thread(app, startup_notice, app.config):  # probes bwrap once
            await app.chat.add_notice(sandbox_line, "error")
        from hermes_tui.agent.hooks.config import declared

        hooks = await in_thread(app, declared, app.config.home, app.config.workspace)
        if hooks_line := hooks.start_line():  # hooks that do not run (unapproved, unusable): say so
            await app.chat.add_notice(hooks_line, "error")

    def stop(self) -> None:
        """Quitting: the pending summary being written stays pending; its request closes."""
        if self.pending_summaries is not None:
            self.pending_summaries.stop()


def load_markdown() -> None:
    """Import the answer's Markdown widgets (~60 ms, markdown-it) and build the code highlighters
    on a thread after the first frame: the first answer's first words, and its first code block,
    no longer wait for them."""
    from hermes_tui.tui import answer

    answer.warm_highlighting()


def write_pending_summaries(config: Config, memory: MemoryStore, busy: Callable[[], bool],
                            host: ModelHost) -> Writer | None:
    """Earlier sessions' pending summaries, written in the background while no turn runs (``busy``)."""
    from hermes_tui.learning.pending import start_background

    return start_background(config, memory, busy=busy, host=host)
