"""edit_file, glob and grep driven by the fake model over both wire formats, on every surface:
headless (the installed ``hermes-tui -p``), the TUI (Textual's pilot) and the web (Flask's client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.blocks import ToolCallView
from tests.fakes.fixtures import on_wire, wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli
from tests.tui_harness import conversation, run, send, text_of, wait_for
from tests.web_harness import chat, chat_answering, login, make_app, ndjson, web_env  # noqa: F401  (fixtures)

CODE = "def area(r):\n    return 3.14 * r * r\n\n\ndef main():\n    print(area(2))\n"


def search_then_edit(server: FakeLLMServer) -> None:
    server.queue(
        Reply(text="Looking.", tool_calls=[ToolCall("glob", {"pattern": "**/*.py"}),
                                           ToolCall("grep", {"pattern": r"3\.14", "context": 1})]),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "src/geo.py", "edits": [
            {"old": "def area(r):", "new": "import math\n\n\ndef area(r):"},
            {"old": "3.14 * r * r", "new": "math.pi * r ** 2"}]})]),
        Reply(text="Now uses math.pi."),
    )


def tool_results(server: FakeLLMServer) -> list[str]:
    """The tool results the model was sent last (the curator's request after the turn holds none)."""
    sent = [request for request in server.requests if any(m["role"] == "tool" for m in request.messages)]
    return [str(m["content"]) for m in sent[-1].messages if m["role"] == "tool"]


def check_results(server: FakeLLMServer, workspace: Path) -> None:
    globbed, grepped, edited = tool_results(server)
    assert globbed == "src/geo.py"
    assert grepped.splitlines() == ["src/geo.py", "1- def area(r):", "2:     return 3.14 * r * r", "3- "]
    assert edited.startswith("Edited src/geo.py: 2 replacements, +4 −1 lines.")
    assert "+    1\timport math" in edited and "+    5\t    return math.pi * r ** 2" in edited
    assert (workspace / "src/geo.py").read_text() == ("import math\n\n\n" + CODE).replace(
        "3.14 * r * r", "math.pi * r ** 2")


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src/geo.py").write_text(CODE)
    return workspace


@on_wire("anthropic")
def test_headless_searches_without_asking_and_edits_with_yes(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                             project: Path) -> None:
    search_then_edit(fake_llm_env)
    result = cli("-p", "use math.pi in geo.py", "--yes")
    assert result.returncode == 0, result.stderr
    assert "✓ glob" in result.stderr and "✓ grep" in result.stderr and "✓ edit_file" in result.stderr
    check_results(fake_llm_env, project)


@on_wire("openai")
def test_headless_without_yes_searches_but_denies_the_edit(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                           project: Path) -> None:
    search_then_edit(fake_llm_env)
    result = cli("-p", "use math.pi in geo.py")
    assert result.returncode == 0, result.stderr
    assert "✓ glob" in result.stderr and "✓ grep" in result.stderr
    assert "edit_file denied: rerun with --yes" in result.stderr
    assert (project / "src/geo.py").read_text() == CODE


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_tui_asks_for_the_edit_with_its_diff_and_never_for_search(wire: str, hermes_home: Path, project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as server:
        for name, value in wire_env(server, wire).items():
            monkeypatch.setenv(name, value)
        search_then_edit(server)

        async def scenario(app: HermesApp, pilot: Pilot) -> None:
            await send(app, pilot, "use math.pi in geo.py")
            # the first answer waits for the stream helper's litellm import: slow on a busy machine
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=180)
            await pilot.pause()
            screen = app.screen
            assert screen.tool_name == "edit_file"  # glob and grep ran without a question
            assert [v.ok for v in conversation(app, ToolCallView)][:2] == [True, True]
            body = text_of(screen.query_one("#approval-text")).splitlines()
            assert "+    1\timport math" in body and "-    2\t    return 3.14 * r * r" in body
            assert text_of(screen.query_one("#approval-summary")).startswith("2 replacements: +4 −1 lines")
            await pilot.press("y")
            await wait_for(pilot, lambda: not app.chat.busy)

        run(scenario)
        check_results(server, project)


def test_tui_shows_an_edit_that_will_fail_before_asking(hermes_home: Path, project: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as server:
        for name, value in wire_env(server, "openai").items():
            monkeypatch.setenv(name, value)
        server.queue(Reply(tool_calls=[ToolCall("edit_file", {"path": "src/geo.py", "old": "radius", "new": "r"})]),
                     Reply(text="Sorry."))

        async def scenario(app: HermesApp, pilot: Pilot) -> None:
            await send(app, pilot, "rename")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=180)
            await pilot.pause()
            assert "will fail" in text_of(app.screen.query_one("#approval-summary"))
            assert "old was not found" in text_of(app.screen.query_one("#approval-text"))
            await pilot.press("n")
            await wait_for(pilot, lambda: not app.chat.busy)

        run(scenario)
    assert (project / "src/geo.py").read_text() == CODE


def test_web_runs_search_and_edit_and_streams_the_diff(make_app: Any, fake_llm_env: FakeLLMServer,
                                                       project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_WRITE", "true")
    client = make_app().test_client()
    token = login(client)
    search_then_edit(fake_llm_env)
    events = chat_answering(client, token, "use math.pi in geo.py")
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert [(e["name"], e["ok"]) for e in finished] == [("glob", True), ("grep", True), ("edit_file", True)]
    assert "+    1\timport math" in finished[2]["result"]
    check_results(fake_llm_env, project)


def test_web_without_writes_offers_search_but_not_edit(make_app: Any, fake_llm_env: FakeLLMServer,
                                                       project: Path) -> None:
    client = make_app().test_client()
    token = login(client)
    fake_llm_env.queue(Reply(text="hi"))
    ndjson(chat(client, token, "hello"))
    offered = set(fake_llm_env.requests[0].tools)
    assert {"glob", "grep", "read_file"} <= offered and "edit_file" not in offered
