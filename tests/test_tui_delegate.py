"""delegate in the TUI: each sub-agent shows as a block under its call (its current tool, steps and
tokens), ctrl+o unfolds its steps, and a write it was given is asked about naming it."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Collapsible

from hermes_tui.llm_host import StreamHost
from hermes_tui.memory.usage import totals
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.blocks import SubagentView, ToolCallView
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply, ToolCall
from tests.tui_harness import dialog, run, send, server, text_of, type_bytes, wait_for  # noqa: F401 - fixture

TASK = "Read notes.txt and report its first line."


def first_user(request: RecordedRequest) -> str:
    return next(str(m["content"]) for m in request.messages if m["role"] == "user")


def tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


def test_a_sub_agent_shows_as_a_block_under_its_call(server: FakeLLMServer, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("first line\n")
    held = threading.Event()
    release = threading.Event()

    def respond(request: RecordedRequest) -> Reply:
        if first_user(request).startswith(TASK):
            if not tool_results(request):
                return Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
            held.set()
            release.wait(60)  # the block is looked at while the sub-agent waits for its model
            return Reply(text="first line")
        if tool_results(request):
            return Reply(text="It says: first line")
        return Reply(tool_calls=[ToolCall("delegate", {"task": TASK})])

    server.responder = respond

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        try:
            await send(app, pilot, "what does notes.txt say?")
            await wait_for(pilot, lambda: held.is_set() and app.chat.conversation.query(SubagentView))
            block = app.chat.conversation.query_one(SubagentView)
            await wait_for(pilot, lambda: block.lines == ["✓ read_file notes.txt"])
            head = text_of(block.query_one(".subagent-head"))
            assert "1 step · 19 tokens · thinking…" in head  # one model call of 12 + 7 tokens so far
            call = app.chat.conversation.query_one(ToolCallView)
            assert call.tool_name == "delegate" and block.parent is call
            steps = block.query_one(".subagent-steps", Collapsible)
            assert steps.collapsed
            type_bytes(app, "\x0f")  # ctrl+o: the sub-agent's steps, the last output shown
            await wait_for(pilot, lambda: not steps.collapsed)
            assert "✓ read_file notes.txt" in text_of(steps.query_one(".tool-result"))
        finally:
            release.set()
        await wait_for(pilot, lambda: not app.chat.busy)
        head = text_of(block.query_one(".subagent-head"))
        assert f"session {block.session_id} · 2 steps · 38 tokens · done" in head
        assert call.ok
        # /cost and the status line count the sub-agent's tokens in the parent's session.
        await wait_for(pilot, lambda: totals(app.usage.of(app.session.session_id)).prompt_tokens == 2 * 12 + 2 * 12)
        assert totals(app.usage.of(app.session.session_id)).calls == 2 + 2  # each model call, the sub-agent's too

    run(scenario)


def test_a_named_write_asks_in_the_dialog_naming_the_sub_agent(server: FakeLLMServer, workspace: Path) -> None:
    task = "Write hello to out.txt."

    def respond(request: RecordedRequest) -> Reply:
        if first_user(request).startswith(task):
            if not tool_results(request):
                return Reply(tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "hello"})])
            return Reply(text="written")
        if tool_results(request):
            return Reply(text="done")
        return Reply(tool_calls=[ToolCall("delegate", {"task": task, "tools": ["write_file"]})])

    server.responder = respond

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "delegate the write")
        screen = await dialog(app, pilot)
        assert f"asked by sub-agent 1: {task}" in text_of(screen.query_one("#approval-title"))
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.chat.busy)
        assert (workspace / "out.txt").read_text() == "hello"

    run(scenario)


def test_escape_cancels_sub_agents_whose_model_never_answers(server: FakeLLMServer) -> None:
    """Both sub-agents' streams are parsed in the app's stream helper (llm_host, as shipped) and
    their model sends nothing: escape stops them both at once."""
    arrived: list[str] = []
    release = threading.Event()

    def respond(request: RecordedRequest) -> Reply:
        if first_user(request).startswith(TASK):
            arrived.append(TASK)
            release.wait(120)  # the provider never answers while the test runs
            return Reply(text="too late")
        return Reply(text="ok") if tool_results(request) else Reply(
            tool_calls=[ToolCall("delegate", {"task": TASK}), ToolCall("delegate", {"task": TASK + " Again."})])

    server.responder = respond

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "delegate twice")
        await wait_for(pilot, lambda: len(arrived) == 2)
        assert isinstance(app.session.loop.llm.host, StreamHost)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.busy)
        calls = app.chat.conversation.query(ToolCallView)
        assert [(c.tool_name, c.ok) for c in calls] == [("delegate", False), ("delegate", False)]
        blocks = app.chat.conversation.query(SubagentView)
        await wait_for(pilot, lambda: [b.ended for b in blocks] == ["cancelled", "cancelled"])

    try:
        run(scenario)
    finally:
        release.set()
