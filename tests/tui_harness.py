"""The TUI tests' harness: a headless HermesApp on the fake server, and what they ask of it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual._xterm_parser import XTermParser
from textual.css.query import NoMatches
from textual.pilot import Pilot

from hermes_tui.config import Config
from hermes_tui.tui.answer import HelpText
from hermes_tui.tui.app import HermesApp, build_app
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.blocks import NoticeLine
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer

SIZE = (100, 32)
# Varied words: litellm aborts a stream whose chunks all repeat ("the model is repeating").
LONG_TEXT = " ".join(f"word{n}" for n in range(600))
Scenario = Callable[[HermesApp, Pilot], Awaitable[None]]


# -- harness ---------------------------------------------------------------------------------


@pytest.fixture
def server(hermes_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """The fake server on the OpenAI wire (the streaming test covers both wires)."""
    with FakeLLMServer() as fake:
        for name, value in wire_env(fake, "openai").items():
            monkeypatch.setenv(name, value)
        yield fake


def run(scenario: Scenario, *, size: tuple[int, int] = SIZE, **build: Any) -> HermesApp:
    """Build the app from the environment (``build``: ``build_app``'s options) and drive it with
    ``scenario`` at ``size``; its stores and MCP servers are closed after."""
    app = build_app(Config.load(), **build)

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await scenario(app, pilot)

    try:
        asyncio.run(main())
    finally:
        app.memory.close()
        if app._mcp is not None:  # started after the first frame, if at all
            app._mcp.close()
    return app


async def wait_for(pilot: Pilot, condition: Callable[[], object], timeout: float = 45.0) -> None:
    """Poll with plain sleeps (``pilot.pause`` needs a screen, which an exiting app no longer has).

    A condition that reads a widget still being composed (``NoMatches``) does not hold yet."""
    deadline = time.monotonic() + timeout
    missing: NoMatches | None = None
    while True:
        try:
            if condition():
                return
        except NoMatches as exc:
            missing = exc
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app") from missing
        await asyncio.sleep(0.02)


def exited(app: HermesApp) -> bool:
    return app.return_code is not None


async def press_and_exit(app: HermesApp, pilot: Pilot, key: str, timeout: float = 15.0) -> float:
    """Press a key that quits; the seconds until the app has exited.

    ``simulate_key``, not ``pilot.press``: the pilot waits for the screen to settle, which an app
    that exits meanwhile never does.
    """
    started = time.monotonic()
    app.simulate_key(key)
    await wait_for(pilot, lambda: exited(app), timeout)
    return time.monotonic() - started


async def send(app: HermesApp, pilot: Pilot, text: str) -> None:
    app.chat.prompt.load(text)
    await pilot.press("enter")
    await pilot.pause()


async def send_and_wait(app: HermesApp, pilot: Pilot, text: str) -> None:
    await send(app, pilot, text)
    await wait_for(pilot, lambda: not app.chat.busy)
    await pilot.pause()


def conversation(app: HermesApp, kind: type) -> list:
    return list(app.chat.conversation.query(kind))


async def help_card(app: HermesApp, pilot: Pilot, count: int = 1) -> HelpText:
    """The ``count``-th card in the chat (/cost, /context) once it shows its text (Textual fills
    ``source`` when it mounts)."""
    await wait_for(pilot, lambda: len(cards := conversation(app, HelpText)) >= count and cards[count - 1].source)
    return conversation(app, HelpText)[count - 1]


async def help_screen(app: HermesApp, pilot: Pilot) -> HelpText:
    """The /help (F1) card, on its own screen, once it shows its text."""
    from hermes_tui.tui.help_screen import HelpScreen

    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen.query_one(HelpText).source)
    return app.screen.query_one(HelpText)


def text_of(widget: object) -> str:
    """The plain text a Static shows."""
    rendered = widget.render()
    return getattr(rendered, "plain", str(rendered))


def notices(app: HermesApp) -> list[str]:
    return [text_of(n) for n in conversation(app, NoticeLine)]


def active_pane(app: HermesApp) -> str:
    return app.active_pane


def keys_from_bytes(data: str) -> list:
    """The events Textual's terminal parser makes of ``data`` (a lone ESC needs the escape delay)."""
    parser = XTermParser()
    found = list(parser.feed(data))
    deadline = time.monotonic() + 1.0
    while parser._timeout_time is not None and time.monotonic() < deadline:
        time.sleep(0.02)
        found += list(parser.tick())
    return found


def rendered_text(markdown: object) -> str:
    """What a Markdown widget shows, block by block."""
    from textual.widgets._markdown import MarkdownBlock

    return "\n".join(block._content.plain for block in markdown.query(MarkdownBlock)
                     if getattr(block, "_content", None) is not None)


def type_bytes(app: HermesApp, data: str) -> None:
    """Deliver raw terminal bytes to the app the way its driver does, with no pause between keys."""
    for event in keys_from_bytes(data):
        event.set_sender(app)
        app._driver.send_message(event)


def run_with_clock(scenario: Callable[[HermesApp, Pilot, list[float]], Awaitable[None]]) -> None:
    now = [100.0]
    app = build_app(Config.load(), clock=lambda: now[0])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await scenario(app, pilot, now)

    try:
        asyncio.run(main())
    finally:
        app.memory.close()


async def dialog(app: HermesApp, pilot: Pilot) -> ApprovalScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
    await pilot.pause()
    return app.screen


def screen_rows(app: HermesApp) -> list[str]:
    """The characters on the terminal, row by row, as the compositor draws them."""
    return [strip.text for strip in app.screen._compositor.render_strips()]
