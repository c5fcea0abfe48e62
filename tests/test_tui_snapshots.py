"""Screenshots of the app compared with approved SVGs (pytest-textual-snapshot).

Stable across machines and runs: a fixed terminal size, a fake clock (every elapsed time and
duration on screen comes from it), a scripted fake LLM with fixed tool-call ids, HOME set so the
header shows ``~/workspace``, no cursor blink. Update with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Collapsible, Input

from hermes_tui.config import Config
from hermes_tui.tui.app import HermesApp, build_app
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.setup_screen import SetupScreen
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

SIZE = (100, 32)


def fixed_clock() -> float:
    return 1000.0


@pytest.fixture
def stable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path, workspace: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))  # workspace shows as ~/workspace on every machine
    return tmp_path


@pytest.fixture
def server(stable_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        for name, value in wire_env(fake, "openai").items():  # an unpriced model: "cost —"
            monkeypatch.setenv(name, value)
        yield fake


async def until(condition: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await asyncio.sleep(0.02)


async def send(app: HermesApp, pilot: Pilot, text: str) -> None:
    app.chat.prompt.cursor_blink = False
    app.chat.prompt.load(text)
    await pilot.press("enter")


def chat_app(server: FakeLLMServer, workspace: Path) -> HermesApp:
    (workspace / "notes.txt").write_text("one\ntwo\n")
    server.queue(
        Reply(text="I'll check the **workspace** first.",
              tool_calls=[ToolCall("list_dir", {"path": "."}, id="call_list")]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l notes.txt"}, id="call_wc")]),
        Reply(text="## Result\n\n`notes.txt` has **2 lines**:\n\n1. one\n2. two\n"),
    )
    return build_app(Config.load(), clock=fixed_clock)


async def finish_turn(app: HermesApp, pilot: Pilot) -> None:
    await send(app, pilot, "How many lines does notes.txt have?")
    await until(lambda: app.chat.query(".answer") and not app.chat.busy)
    app.chat.query_one("#tool-call_wc Collapsible", Collapsible).collapsed = False
    await pilot.pause()


def test_chat_with_streamed_answer_and_tools(snap_compare, server: FakeLLMServer, workspace: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    app = chat_app(server, workspace)

    async def run_before(pilot: Pilot) -> None:
        await finish_turn(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_chat_in_the_light_theme(snap_compare, server: FakeLLMServer, workspace: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    app = chat_app(server, workspace)

    async def run_before(pilot: Pilot) -> None:
        app.theme = "textual-light"
        await finish_turn(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_modal(snap_compare, server: FakeLLMServer) -> None:
    server.queue(Reply(text="Cleaning up first.",
                       tool_calls=[ToolCall("run_bash", {"command": "rm -rf build && make dist"}, id="call_rm")]))
    app = build_app(Config.load(), clock=fixed_clock)

    async def run_before(pilot: Pilot) -> None:
        await send(app, pilot, "rebuild the dist folder")
        await until(lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_of_a_long_command(snap_compare, server: FakeLLMServer) -> None:
    command = "\n".join(f"echo step {n} >> log.txt" for n in range(1, 43))
    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": command}, id="call_long")]))
    app = build_app(Config.load(), clock=fixed_clock)

    async def run_before(pilot: Pilot) -> None:
        await send(app, pilot, "log 42 steps")
        await until(lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_of_a_write_shows_the_diff(snap_compare, server: FakeLLMServer, workspace: Path) -> None:
    (workspace / "app.py").write_text("import os\n\n\ndef main():\n    print('hello')\n")
    new = "import os\nimport sys\n\n\ndef main():\n    print('hello, world', file=sys.stderr)\n"
    server.queue(Reply(tool_calls=[ToolCall("write_file", {"path": "app.py", "content": new}, id="call_w")]))
    app = build_app(Config.load(), clock=fixed_clock)

    async def run_before(pilot: Pilot) -> None:
        await send(app, pilot, "print to stderr")
        await until(lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_setup_screen(snap_compare, stable_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_PROVIDER", "anthropic")  # and no key anywhere
    app = build_app(Config.load(), clock=fixed_clock)

    async def run_before(pilot: Pilot) -> None:
        await until(lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
        await pilot.pause()  # the screen focuses the provider list first
        for box in app.screen.query(Input):
            box.cursor_blink = False
        # The prompt behind the dialog blinks too: on a loaded machine the snapshot caught its
        # cursor off now and then. Not blinking, it is always drawn.
        app.chat.prompt.cursor_blink = False
        app.screen.query_one("#setup-key", Input).focus()
        await pilot.press(*"sk-ant-secret")  # shown masked
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
