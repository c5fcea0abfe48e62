"""Plan mode: the model gets read-only tools only, a call to any other runs nothing, and leaving
the mode offers every tool again; in the core, headless (-p --plan) and on the web."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from hermes_tui.agent.tools import TOOLS
from hermes_tui.conversation import Status
from hermes_tui.events import ToolCallFinished
from tests.engine_harness import make_loop, stores  # noqa: F401 - fixture
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli
from tests.mcp_harness import declare, stdio_entry
from tests.web_harness import llm, login, make_app, ndjson, web_env  # noqa: F401 - fixtures among them

WRITERS = {"run_bash", "write_file", "edit_file", "memory", "create_skill"}
READERS = {"read_file", "list_dir", "grep", "glob", "search_memory", "list_skills", "use_skill", "read_skill_file",
           "delegate"}  # delegate: its sub-agents get read-only tools only in plan mode (test_delegate.py)


def test_read_only_is_decided_by_the_tool_record() -> None:
    read_only = {tool.name for tool in TOOLS if tool.read_only}
    assert read_only == READERS
    assert not read_only & WRITERS


def test_plan_mode_offers_read_only_tools_and_leaving_it_offers_every_tool(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="1. Read the file. 2. Change it."), Reply(text="Done."))
    loop = make_loop(stores)
    loop.plan = True
    list(loop.run_turn("plan the change"))
    loop.plan = False
    list(loop.run_turn("now do it"))
    planned, normal = fake_llm_env.requests
    assert set(planned.tools) == READERS
    assert set(normal.tools) >= WRITERS
    # The mode note rides on the plan turn's user message; the system prompt (the cached prefix) is unchanged.
    assert planned.system == normal.system and "Plan mode" not in str(planned.system)
    users = [str(m["content"]) for m in normal.messages if m["role"] == "user"]
    assert "Plan mode" in users[0] and "Plan mode" not in users[1]
    stored = [m.content for m in stores[1].get_messages(loop.session_id) if m.role == "user"]
    assert stored == ["plan the change", "now do it"]  # the note is never stored


def test_a_scripted_run_bash_call_in_plan_mode_runs_nothing(stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made.txt"}),
                                         ToolCall("write_file", {"path": "w.txt", "content": "x"})]),
                       Reply(text="The plan: create made.txt."))
    loop = make_loop(stores)  # no approver: outside plan mode both calls would run at once
    loop.plan = True
    events = list(loop.run_turn("make a file"))
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(r.name, r.ok) for r in results] == [("run_bash", False), ("write_file", False)]
    assert all("not available in plan mode" in r.result for r in results)
    assert not (workspace / "made.txt").exists() and not (workspace / "w.txt").exists()
    tools = [m for m in stores[1].get_messages(loop.session_id) if m.role == "tool"]
    assert [m.status for m in tools] == [Status.DENIED, Status.DENIED]
    sent = [str(m.get("content")) for m in fake_llm_env.requests[1].messages if m["role"] == "tool"]
    assert len(sent) == 2 and all("plan mode" in text for text in sent)


def test_headless_plan_offers_only_read_only_tools_even_mcp_and_runs_nothing(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    declare(hermes_home / "mcp.json", {"fake": stdio_entry()})
    target = workspace / "mcp.txt"
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made.txt"}),
                                         ToolCall("mcp__fake__write", {"path": str(target), "text": "x"})]),
                       Reply(text="Plan: 1. touch made.txt"))
    result = cli("-p", "make a file", "--plan", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Plan: 1. touch made.txt"
    assert not (workspace / "made.txt").exists() and not target.exists()
    offered = set(fake_llm_env.requests[0].tools)
    assert "mcp__fake__add" in offered  # its server marks it read-only (readOnlyHint)
    assert not offered & (WRITERS | {"mcp__fake__write", "mcp__fake__echo"})
    sent = [str(m.get("content")) for m in fake_llm_env.requests[1].messages if m["role"] == "tool"]
    assert len(sent) == 2 and all("not available in plan mode" in text for text in sent)


def test_plan_needs_p(hermes_home: Path) -> None:
    result = cli("--plan")
    assert result.returncode != 0 and "--plan only work" in result.stderr


def _chat(client: FlaskClient, token: str, body: dict[str, Any]) -> Any:
    return client.post("/api/chat", json=body, headers={"X-CSRF-Token": token})


def test_web_chat_plan_field_sets_the_sessions_mode(make_app: Any, llm: FakeLLMServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    client = make_app().test_client()
    token = login(client)
    assert _chat(client, token, {"message": "x", "plan": "yes"}).status_code == 400
    ndjson(_chat(client, token, {"message": "plan it", "plan": True}))
    ndjson(_chat(client, token, {"message": "refine it"}))  # absent: the session stays in plan mode
    ndjson(_chat(client, token, {"message": "do it", "plan": False}))
    offered = [set(request.tools) for request in llm.requests]
    assert "run_bash" not in offered[0] and "run_bash" not in offered[1] and "run_bash" in offered[2]
