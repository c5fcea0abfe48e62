"""Permissions (issue 23 §13): "always here" rules for shell commands, kept per workspace in
HERMES_HOME (0600, atomic), strict program rules, ``/permissions`` to see and revoke every rule,
``hermes-tui permissions list|revoke N``, and headless runs that honour the lasting rules."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, OptionList

from hermes_tui.agent.permissions import EXACT, PROGRAM, LastingRules, program_of, rules_path
from hermes_tui.agent.tools import approval_spec
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.blocks import ToolCallView
from hermes_tui.tui.permissions_screen import PermissionsScreen, entries
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli, headless_turn
from tests.tui_harness import conversation, dialog, notices, run_with_clock, send, server, text_of, wait_for

__all__ = ["server"]


def bash(command: str) -> Reply:
    return Reply(tool_calls=[ToolCall("run_bash", {"command": command})])


# -- what a program rule may match ---------------------------------------------------------------


@pytest.mark.parametrize(("command", "program"), [
    ("grep", "grep"),
    ("grep -q tests/test_x.py", "grep"),
    ("grep -k 'slow and not db'", "grep"),
    ('grep -k "a or b"', "grep"),
    ("grep; rm -rf ~", None),
    ("grep && curl https://x.invalid", None),
    ("grep || true", None),
    ("grep | sh", None),
    ("grep $(curl x)", None),
    ('grep "$(curl x)"', None),
    ("grep `id`", None),
    ("grep > /etc/passwd", None),
    ("grep\nrm -rf ~", None),
    ("grep & disown", None),
    ("grep tests/*.py", None),
    ("grep ~/x", None),
    ("grep \\; rm", None),
    ("grep 'unclosed", None),
    ("./grep", None),
    ("/tmp/grep", None),
    ("PYTHONPATH=. grep", None),
    ("bash -c grep", None),
    ("env grep", None),
    ("sudo grep", None),
    ("xargs rm", None),
    ("python -c 'import os'", None),  # an interpreter runs any code: never a program rule
    ("node -e 1", None),
    ("npx some-package", None),
    ("uv run anything", None),
    ("grep \x1b[8m", None),
    ("pyt\u0435st", None),  # a Cyrillic ie (U+0435)
    ("", None),
])
def test_a_program_rule_matches_only_a_plain_call(command: str, program: str | None) -> None:
    assert program_of(command) == program


# -- the rules file ---------------------------------------------------------------------------------


def test_rules_live_in_hermes_home_private_per_workspace(tmp_path: Path) -> None:
    home, one, two = tmp_path / "home", tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    rules = LastingRules(home, one)
    rules.add(PROGRAM, "grep")
    rules.add(EXACT, "make lint")
    rules.add(EXACT, "make lint")  # once only
    assert rules.path.parent.parent == home and stat.S_IMODE(rules.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(rules.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in rules.path.parent.iterdir()] == [rules.path.name]  # no temporary left
    assert [(r.kind, r.value) for r in LastingRules(home, one).rules()] == [(PROGRAM, "grep"), (EXACT, "make lint")]
    assert LastingRules(home, two).rules() == []  # another workspace has its own
    assert not list(one.iterdir())  # nothing in the workspace
    allowed = LastingRules(home, one)
    shell, write = approval_spec("run_bash"), approval_spec("write_file")
    assert allowed.allowing("run_bash", {"command": "grep -x"}, shell) is not None
    assert allowed.allowing("run_bash", {"command": "grep -x; rm -rf ~"}, shell) is None
    assert allowed.allowing("run_bash", {"command": "make lint "}, shell) is None  # exact means exact
    assert allowed.allowing("write_file", {"command": "grep"}, write) is None
    assert allowed.revoke(allowed.rules()[0]) and [r.value for r in allowed.rules()] == ["make lint"]


@pytest.mark.parametrize("content", [
    "{not json", "[]", '{"rules": "all"}', '{"workspace": "WS", "rules": [{"tool": "run_bash", "kind": "any"}]}',
    '{"workspace": "WS", "rules": [{"tool": "run_bash", "kind": "program", "value": "./bash"}]}',
    '{"workspace": "/another/folder", "rules": []}',
])
def test_a_malformed_file_is_one_warning_and_no_rules(tmp_path: Path, content: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = rules_path(tmp_path / "home", workspace)
    path.parent.mkdir(parents=True)
    path.write_text(content.replace("WS", str(workspace)))
    said: list[str] = []
    rules = LastingRules(tmp_path / "home", workspace, on_warning=said.append)
    for _ in range(3):
        assert rules.allowing("run_bash", {"command": "bash"}, approval_spec("run_bash")) is None
        assert rules.rules() == []
    assert len(said) == 1 and str(path) in said[0] and "\n" not in said[0]
    rules.add(EXACT, "ls")  # the bad file is moved aside, not lost
    assert path.with_name(path.name + ".bad").read_text() == content.replace("WS", str(workspace))
    assert [r.value for r in rules.rules()] == ["ls"]


# -- the TUI: the dialog's lasting answers, /permissions ---------------------------------------------


def test_always_here_outlives_the_session(server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    server.queue(bash("echo a >> x"), Reply(text="done"), bash("echo a >> x"), Reply(text="again"))

    async def scenario(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "go")
        screen = await dialog(app, pilot)
        labels = [str(b.label) for b in screen.query(Button)]
        assert "This command · always here (w)" in labels
        assert not any("Any " in label for label in labels)  # ">>" is shell syntax: no program rule
        await pilot.press("p")  # not offered: does nothing
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("w")
        await wait_for(pilot, lambda: not app.chat.busy)

    async def later(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "go again")  # another app, another session: the rule still allows it
        await wait_for(pilot, lambda: len(server.requests) >= 4 and not app.chat.busy)
        assert not isinstance(app.screen, ApprovalScreen)
        assert [v.ok for v in conversation(app, ToolCallView)] == [True]

    run_with_clock(scenario)
    run_with_clock(later)
    assert (workspace / "x").read_text() == "a\na\n"
    path = rules_path(hermes_home, workspace)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [r["value"] for r in json.loads(path.read_text())["rules"]] == ["echo a >> x"]


def test_a_program_rule_allows_plain_calls_only(server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    server.queue(bash("touch one"), bash("touch two"), bash("touch three; touch pwned"), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "go")
        screen = await dialog(app, pilot)
        assert "Any touch · always here (p)" in [str(b.label) for b in screen.query(Button)]
        shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show}
        assert {"w", "p"} <= shown
        await pilot.press("p")
        screen = await dialog(app, pilot)  # "touch two" ran unasked; this one has a ";"
        assert text_of(screen.query_one("#approval-text")) == "touch three; touch pwned"
        assert not any("Any " in str(b.label) for b in screen.query(Button))
        shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show}
        assert "p" not in shown and "w" in shown
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.chat.busy)
        assert [v.ok for v in conversation(app, ToolCallView)] == [True, True, False]

    run_with_clock(scenario)
    assert (workspace / "one").exists() and (workspace / "two").exists()
    assert not (workspace / "pwned").exists()
    assert [(r.kind, r.value) for r in LastingRules(hermes_home, workspace).rules()] == [(PROGRAM, "touch")]


def test_permissions_lists_and_revokes_every_rule(server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    LastingRules(hermes_home, workspace).add(PROGRAM, "grep")
    server.queue(bash("echo a >> x"), bash("echo b >> x"), Reply(text="done"),
                 bash("echo a >> x"), Reply(text="asked again"))

    async def scenario(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "go")
        await dialog(app, pilot)
        await pilot.press("c")  # this command, for the session
        await dialog(app, pilot)
        await pilot.press("a")  # all shell, for the session
        await wait_for(pilot, lambda: not app.chat.busy)
        await send(app, pilot, "/permissions")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        listing = app.screen.query_one(OptionList)
        rows = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert rows == ["session      every run_bash call", "session      shell: echo a >> x",
                        "always here  shell: any plain grep command"]
        await pilot.press("x")  # all shell goes
        await pilot.press("x")  # then this command
        await pilot.press("x")  # then the lasting rule
        await wait_for(pilot, lambda: listing.option_count == 0)
        assert "No rules" in text_of(app.screen.query_one("#permissions-detail"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PermissionsScreen))
        await send(app, pilot, "once more")
        await dialog(app, pilot)  # revoked: it asks again
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.chat.busy)

    run_with_clock(scenario)
    assert LastingRules(hermes_home, workspace).rules() == []


def test_a_malformed_rules_file_is_one_line_in_the_chat(server: FakeLLMServer, hermes_home: Path,
                                                       workspace: Path) -> None:
    path = rules_path(hermes_home, workspace)
    path.parent.mkdir(parents=True)
    path.write_text('{"rules": [oops')
    server.queue(bash("touch x"), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await wait_for(pilot, lambda: any("permissions file" in n for n in notices(app)))
        assert len([n for n in notices(app) if "permissions file" in n]) == 1
        await send(app, pilot, "go")
        await dialog(app, pilot)  # no rules: it asks
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.chat.busy)

    run_with_clock(scenario)


# -- headless and the command line ---------------------------------------------------------------------


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


@on_wire("openai")
def test_headless_honours_lasting_rules_and_the_model_cannot_add_one(env: FakeLLMServer, hermes_home: Path,
                                                                     workspace: Path) -> None:
    LastingRules(hermes_home, workspace).add(PROGRAM, "touch")
    path = rules_path(hermes_home, workspace)
    forged = json.dumps({"format": 1, "workspace": str(workspace),
                         "rules": [{"tool": "run_bash", "kind": "program", "value": "rm"}]})
    env.queue(bash("touch made-it"), bash("touch a; touch pwned"), Reply(text="done"))
    result = cli("-p", "make files")
    assert result.returncode == 0, result.stderr
    assert (workspace / "made-it").exists() and not (workspace / "pwned").exists()
    assert result.stderr.count("denied: rerun with --yes") == 1  # the ";" command only

    # Even allowed to run anything (--yes: the headless surface without an approver, here in this
    # process), the model cannot write a rule: HERMES_HOME is out of its reach.
    env.queue(Reply(tool_calls=[ToolCall("write_file", {"path": str(path), "content": forged})]),
              bash(f"echo '{forged}' > {path}"), Reply(text="done"))
    assert headless_turn("allow rm")[-1].stopped_reason == "done"
    assert [(r.kind, r.value) for r in LastingRules(hermes_home, workspace).rules()] == [(PROGRAM, "touch")]


def test_permissions_command_lists_and_revokes(hermes_home: Path, workspace: Path) -> None:
    empty = cli("permissions", "list")
    assert empty.returncode == 0 and "No lasting rules" in empty.stdout
    rules = LastingRules(hermes_home, workspace)
    rules.add(EXACT, "make lint")
    rules.add(PROGRAM, "grep")
    listed = cli("permissions")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[1:] == ["  1  shell: make lint", "  2  shell: any plain grep command"]
    assert cli("permissions", "revoke", "1").stdout.startswith("Revoked: shell: make lint.")
    assert [r.value for r in rules.rules()] == ["grep"]
    missing = cli("permissions", "revoke", "5")
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    rules.path.write_text("garbage")
    broken = cli("permissions", "list")
    assert broken.returncode == 1 and broken.stderr.startswith("hermes: the permissions file")
    assert len(broken.stderr.splitlines()) == 1


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_six_answers_fit_and_p_works_from_raw_bytes(server: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                    size: tuple[int, int]) -> None:
    from tests.tui_harness import run, screen_rows, type_bytes

    server.queue(bash("touch tested"), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "test it\r")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=120)
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        rows = "\n".join(screen_rows(app))
        buttons = list(screen.query(Button))
        assert len(buttons) == 6
        for button in buttons:  # wholly on screen, label drawn
            assert screen.region.contains_region(button.region), (button.id, button.region)
            assert str(button.label) in rows, button.label
        type_bytes(app, "p")
        await wait_for(pilot, lambda: not app.chat.busy)

    run(scenario, size=size)
    assert (workspace / "tested").exists()
    assert [(r.kind, r.value) for r in LastingRules(hermes_home, workspace).rules()] == [(PROGRAM, "touch")]


# -- rules of other tools: keyed by each tool's record (a file's path), in every surface --------------


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[ToolCall("write_file", {"path": path, "content": content})])


def test_always_here_for_a_file_write_in_the_tui_then_headless(server: FakeLLMServer, hermes_home: Path,
                                                               workspace: Path) -> None:
    server.queue(write("notes.md", "one\n"), Reply(text="done"),
                 write("notes.md", "two\n"), write("other.md", "no\n"), Reply(text="again"))

    async def scenario(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "note it")
        screen = await dialog(app, pilot)
        assert "This file · always here (w)" in [str(b.label) for b in screen.query(Button)]
        await pilot.press("w")
        await wait_for(pilot, lambda: not app.chat.busy)

    async def later(app: HermesApp, pilot: Pilot, now: list[float]) -> None:
        await send(app, pilot, "note again")  # another app and session: notes.md runs unasked
        screen = await dialog(app, pilot)  # other.md is another key: asked
        assert text_of(screen.query_one("#approval-question")).startswith("Write other.md")
        await pilot.press("n")
        await wait_for(pilot, lambda: not app.chat.busy)
        assert [v.ok for v in conversation(app, ToolCallView)] == [True, False]
        assert [e.text for e in entries(app.approvals)] == ["writes to: notes.md"]

    run_with_clock(scenario)
    run_with_clock(later)
    assert (workspace / "notes.md").read_text() == "two\n" and not (workspace / "other.md").exists()
    rules = LastingRules(hermes_home, workspace).rules()
    assert [(r.tool, r.kind, r.value) for r in rules] == [("write_file", EXACT, "notes.md")]
    assert rules[0].label == "writes to: notes.md"


@on_wire("openai")
def test_headless_honours_a_lasting_rule_of_an_edit(env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    (workspace / "todo.txt").write_text("buy milk\n")
    (workspace / "other.txt").write_text("buy milk\n")
    LastingRules(hermes_home, workspace).add(EXACT, "todo.txt", tool="edit_file")
    edit = {"old": "milk", "new": "oat milk"}
    env.queue(Reply(tool_calls=[ToolCall("edit_file", {"path": "todo.txt", **edit})]),
              Reply(tool_calls=[ToolCall("edit_file", {"path": "other.txt", **edit})]), Reply(text="done"))
    result = cli("-p", "fix the lists")
    assert result.returncode == 0, result.stderr
    assert (workspace / "todo.txt").read_text() == "buy oat milk\n"  # the rule's file, without --yes
    assert (workspace / "other.txt").read_text() == "buy milk\n"  # another file: denied
    assert result.stderr.count("denied: rerun with --yes") == 1
    listed = cli("permissions", "list")
    assert listed.stdout.splitlines()[1:] == ["  1  edits of: todo.txt"]
