"""Keys as terminals really send them: raw bytes through Textual's input parser, not key names.

Also: the action table is the single source of the bindings, /help and the docs' key table;
and every screen answers once, however many answers reach it before it closes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.screen import Screen

import hermes_tui.tui
from hermes_tui.tui import actions, commands
from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.chat import ChatPane
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.dismiss_once import DismissOnce
from hermes_tui.tui.prompt import PromptArea
from tests.fakes.server import FakeLLMServer, Reply
from tests.tui_harness import (
    LONG_TEXT,
    conversation,
    help_screen,
    keys_from_bytes,
    notices,
    run,
    send,
    send_and_wait,
    server,
    type_bytes,
    wait_for,
)

__all__ = ["server"]
TUI_DOCS = Path(__file__).parent.parent / "docs" / "tui.md"

def test_the_parser_reports_alt_digit_and_f_keys(server: FakeLLMServer) -> None:
    actions.restore_alt_digits()
    assert [k.key for k in keys_from_bytes("\x1b2")] == ["alt+2"]  # not "trade_mark_sign" (™)
    assert [k.key for k in keys_from_bytes("\x1bOQ\x1bOR\x1bOS\x1b[15~")] == ["f2", "f3", "f4", "f5"]
    assert [k.key for k in keys_from_bytes("\x1b[5~\x1b[6~\x03")] == ["pageup", "pagedown", "ctrl+c"]
    assert [k.character for k in keys_from_bytes("£™")] == ["£", "™"]  # typed characters still type


# What tmux (default config), macOS Terminal, xterm and SSH send: alt+digit is ESC digit; F3 is
# ESC O R (xterm) or ESC [ 1 3 ~ (rxvt, some tmux TERMs); F4 ESC O S; F5 ESC [ 1 5 ~.
@pytest.mark.parametrize(("data", "pane"), [
    ("\x1b2", "skills"), ("\x1b3", "memory"), ("\x1b4", "sessions"),
    ("\x1bOR", "skills"), ("\x1b[13~", "skills"), ("\x1bOS", "memory"), ("\x1b[15~", "sessions"),
])
def test_pane_keys_from_raw_bytes(server: FakeLLMServer, data: str, pane: str) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, data)
        await wait_for(pilot, lambda: app.active_pane == pane)
        type_bytes(app, "\x1b1")  # alt+1 back to the chat
        await wait_for(pilot, lambda: app.active_pane == "chat")
        await pilot.pause()
        assert app.chat.prompt.text == ""  # nothing typed into the prompt (no "™£¢¡")

    run(scenario)


def test_ctrl_c_cancels_a_turn_then_asks_before_quitting(server: FakeLLMServer) -> None:
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.03))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "write a lot")
        await wait_for(pilot, lambda: conversation(app, AnswerText))
        type_bytes(app, "\x03")
        await wait_for(pilot, lambda: not app.chat.busy, timeout=10)
        assert any("Cancelled" in n for n in notices(app))
        assert app.return_code is None  # cancelling never quits
        type_bytes(app, "\x03")
        await pilot.pause()
        assert app.return_code is None
        assert any("ctrl+c again" in str(n.message) for n in app._notifications)
        type_bytes(app, "\x03")
        await wait_for(pilot, lambda: app.return_code is not None)

    run(scenario)


def test_ctrl_c_during_an_approval_cancels_the_turn(server: FakeLLMServer, workspace: Path) -> None:
    from hermes_tui.tui.approval_screen import ApprovalScreen
    from tests.fakes.server import ToolCall

    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch never.txt"})]), Reply(text="ok"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "make it")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        type_bytes(app, "\x03")
        await wait_for(pilot, lambda: not app.chat.busy and not isinstance(app.screen, ApprovalScreen))
        assert not (workspace / "never.txt").exists() and app.return_code is None

    run(scenario)


def test_page_keys_scroll_the_chat_from_the_prompt(server: FakeLLMServer) -> None:
    server.queue(Reply(text="\n\n".join(f"Paragraph {n} of the answer." for n in range(120))))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "long")
        view = app.chat.conversation
        await wait_for(pilot, lambda: view.max_scroll_y > 50)
        await pilot.pause()
        bottom = view.scroll_y
        assert app.chat.prompt.has_focus
        type_bytes(app, "\x1b[5~")  # PageUp
        await pilot.pause()
        assert bottom - view.scroll_y >= view.scrollable_content_region.height - 2  # a screen, not a message
        type_bytes(app, "\x1b[6~")  # PageDown
        await pilot.pause()
        assert view.scroll_y == bottom

    run(scenario)


def test_bindings_come_from_the_action_table() -> None:
    def keys(bindings: list) -> set[str]:
        return {key for binding in bindings for key in binding.key.split(",")}

    for scope, owner in (("app", HermesApp), ("chat", ChatPane), ("prompt", PromptArea)):
        declared = {key for a in actions.in_scope(scope) if a.bound for key in a.keys}
        assert keys(owner.BINDINGS) == declared, scope
    every = [key for a in actions.ACTIONS if a.scope in ("app",) for key in a.keys]
    assert len(every) == len(set(every))  # no key declared twice

    # Every class of the TUI that binds keys, modal screens included, binds the table's.
    import importlib
    import inspect
    import pkgutil

    import hermes_tui.tui

    declared = {(",".join(a.keys), a.action) for a in actions.ACTIONS if a.bound}
    owners = 0
    for info in pkgutil.iter_modules(hermes_tui.tui.__path__):
        module = importlib.import_module(f"hermes_tui.tui.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in cls.__dict__:
                owners += 1
                for binding in cls.__dict__["BINDINGS"]:
                    assert (binding.key, binding.action) in declared, (cls.__name__, binding)
    assert owners >= 15


def test_help_lists_every_action_and_command(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "\x1bOP")  # F1
        source = (await help_screen(app, pilot)).source
        for action in actions.ACTIONS:
            if action.scope != "approval":
                assert f"`{action.key_text}`" in source and action.help in source
        for command in commands.COMMANDS:
            assert f"`{command.title}`" in source

    run(scenario)


def test_the_docs_key_table_and_command_list_match_the_app() -> None:
    page = TUI_DOCS.read_text()
    keys = page.split("\n## Keys", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| (`[^|]+`) \| ", keys, re.MULTILINE))
    expected = {"`" + a.key_text.replace(" / ", "` / `") + "`" for a in actions.ACTIONS}
    assert rows == expected, rows ^ expected
    command_list = page.split("\n## Slash commands", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(/[a-z]+)", command_list, re.MULTILINE))
    assert listed == {f"/{c.name}" for c in commands.COMMANDS}


def test_slash_command_handlers_reach_the_app_only_through_its_controls(server: FakeLLMServer) -> None:
    """``command_runner`` gets a ``Controls``, not the App: every member it touches is declared
    there, and the app provides them all."""
    import ast
    import inspect

    from hermes_tui.tui import command_runner
    from hermes_tui.tui.controls import Controls

    declared = {name for name in dir(Controls) if not name.startswith("_")}
    tree = ast.parse(inspect.getsource(command_runner))
    reached = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and ((isinstance(node.value, ast.Name) and node.value.id == "app")
                    or (isinstance(node.value, ast.Attribute) and node.value.attr == "app"
                        and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"))}
    assert reached and reached <= declared, reached - declared
    assert not any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and
                   isinstance(t.value, ast.Name) and t.value.id == "app" for t in node.targets)
                   for node in ast.walk(tree))  # a handler never reassigns the app's state

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        assert isinstance(app, Controls)

    run(scenario)


def test_text_that_names_a_key_asks_the_action_table() -> None:
    """No string in ``tui/`` spells a key itself (docstrings aside): a notice, a button or a
    placeholder names its key through ``actions.main_key``/``all_keys``, so it follows the table."""
    import ast

    spelled = re.compile(r"\b(ctrl\+[a-z]|alt\+[a-z0-9]|shift\+[a-z]+|F\d{1,2}|Esc|Enter|PgUp|PgDn)\b|\s\(([a-z])\)")
    textual_scrolling = " · nothing cut: ↑ ↓ PgUp PgDn scroll"  # a scroll view's own keys, not Hermes' bindings
    found = []
    for path in sorted((Path(__file__).parent.parent / "hermes_tui" / "tui").glob("*.py")):
        if path.name in ("actions.py", "panes.py"):  # where keys are declared
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and node.value != textual_scrolling and spelled.search(node.value)]
    assert found == []


def test_a_second_answer_before_the_question_closes_is_ignored(server: FakeLLMServer) -> None:
    """Two answers that reach a question before its pop runs (keys in one burst, a double click):
    the first one answers; the second used to answer again and pop the chat's screen as well."""
    answers: list[bool | None] = []

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        main = app.screen
        question = ConfirmScreen("Delete it?")
        await app.push_screen(question, answers.append)
        question.dismiss(False)
        question.dismiss(True)
        await wait_for(pilot, lambda: app.screen is main)
        await pilot.pause()
        assert answers == [False] and app.return_code is None and app.screen is main

    run(scenario)


def _screens(cls: type[Screen]) -> set[type[Screen]]:
    return {sub for direct in cls.__subclasses__() for sub in (direct, *_screens(direct))}


def test_every_screen_of_ours_answers_once() -> None:
    for module in pkgutil.iter_modules(hermes_tui.tui.__path__):
        importlib.import_module(f"hermes_tui.tui.{module.name}")
    ours = {screen for screen in _screens(Screen) if screen.__module__.startswith("hermes_tui.")}
    assert len(ours) >= 8 and not [s.__name__ for s in ours if not issubclass(s, DismissOnce)]
