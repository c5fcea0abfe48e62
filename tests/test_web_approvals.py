"""The web asks before shell commands and writes (HERMES_WEB_ENABLE_SHELL / _WRITE): the chat stream
carries ``approval_needed``, the turn waits, and ``POST /api/approve`` answers once, for the session
or deny; a page that goes away denies. The policy is the one of every surface (agent/approvals.py)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.agent.approvals import PendingCall
from hermes_tui.agent.permissions import EXACT, LastingRules
from hermes_tui.web.approvals import WebQuestions
from hermes_tui.web.context import EXTENSION
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import wait_until
from tests.web_harness import (
    Served,
    app,
    approve,
    chat,
    chat_answering,
    lines_of,
    llm,
    login,
    make_app,
    served,
    served_login,
    types,
    web_env,
)

__all__ = ["app", "llm", "make_app", "served", "web_env"]


@pytest.fixture
def shell_app(make_app: Any, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    monkeypatch.setenv("HERMES_WEB_ENABLE_WRITE", "true")
    return make_app()


def _bash(llm: FakeLLMServer, command: str) -> None:
    llm.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": command})]), Reply(text="done"))


def _finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_call_finished")


def test_a_shell_call_waits_and_allow_once_runs_it(shell_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    client = shell_app.test_client()
    token = login(client)
    _bash(llm, "echo ran > proof.txt")
    stream = lines_of(chat(client, token, "make the proof", buffered=False))
    asked = next(e for e in stream if e["type"] == "approval_needed")
    assert asked["name"] == "run_bash" and asked["arguments"] == {"command": "echo ran > proof.txt"}
    assert not (workspace / "proof.txt").exists()  # it waits for the answer
    assert len(llm.requests) == 1
    answered = approve(client, token, asked["id"], "once")
    assert answered.status_code == 200 and answered.get_json() == {"id": asked["id"], "decision": "once"}
    rest = list(stream)
    assert _finished(rest)["ok"] is True and (workspace / "proof.txt").read_text() == "ran\n"
    assert rest[-1]["type"] == "turn_finished"
    assert approve(client, token, asked["id"], "once").status_code == 404  # answered: gone
    _bash(llm, "echo again > proof.txt")  # "once" allowed that one call only
    assert "approval_needed" in types(chat_answering(client, token, "again", "deny"))


def test_deny_denies_and_the_model_is_told(shell_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    client = shell_app.test_client()
    token = login(client)
    _bash(llm, "echo no > proof.txt")
    events = chat_answering(client, token, "try it", "deny")
    assert _finished(events)["ok"] is False and "denied" in _finished(events)["result"]
    assert not (workspace / "proof.txt").exists()
    assert any("denied" in str(m.get("content")) for m in llm.requests[1].messages if m["role"] == "tool")


def test_allow_for_the_session_skips_the_next_question(shell_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    client = shell_app.test_client()
    token = login(client)
    _bash(llm, "echo one >> log.txt")
    assert "approval_needed" in types(chat_answering(client, token, "first", "session"))
    _bash(llm, "echo two >> log.txt")  # another command: "all shell" for this session
    events = chat_answering(client, token, "second", "deny")
    assert "approval_needed" not in types(events) and _finished(events)["ok"] is True
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"
    assert client.post("/api/sessions", headers={"X-CSRF-Token": token}).status_code == 201
    shell_app.extensions[EXTENSION].state.drain()  # the old session's summary takes its own reply first
    _bash(llm, "echo three >> log.txt")  # a new session asks again
    assert "approval_needed" in types(chat_answering(client, token, "third", "deny"))
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"


def test_a_closed_page_denies_the_waiting_call(shell_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    client = shell_app.test_client()
    token = login(client)
    _bash(llm, "echo late > proof.txt")
    response = chat(client, token, "make the proof", buffered=False)
    stream = lines_of(response)
    asked = next(e for e in stream if e["type"] == "approval_needed")
    response.close()  # the browser went away: the WSGI server closes the body
    llm.queue(Reply(text="next"))
    events = chat_answering(client, token, "hello again", "once")  # waits for the denied turn to end
    assert events[-1]["stopped_reason"] == "done"
    assert not (workspace / "proof.txt").exists()
    assert approve(client, token, asked["id"], "once").status_code == 404


@pytest.mark.parametrize(("body", "status", "words"), [
    ("not json", 400, "send JSON"),
    (json.dumps({"id": "call_1"}), 400, "decision"),
    (json.dumps({"id": "call_1", "decision": "always"}), 400, "decision"),
    (json.dumps({"id": 7, "decision": "once"}), 400, "send JSON"),
    (json.dumps({"id": "call_nobody", "decision": "once"}), 404, "no call 'call_nobody' is waiting"),
])
def test_bad_answers_get_one_clear_line(shell_app: Any, body: str, status: int, words: str) -> None:
    client = shell_app.test_client()
    token = login(client)
    answered = client.post("/api/approve", data=body, content_type="application/json",
                           headers={"X-CSRF-Token": token})
    assert answered.status_code == status and words in answered.get_json()["error"]


def test_an_answer_needs_the_csrf_token_and_a_login(shell_app: Any) -> None:
    client = shell_app.test_client()
    body = {"id": "call_1", "decision": "once"}
    assert client.post("/api/approve", json=body).status_code == 401  # not logged in
    login(client)
    refused = client.post("/api/approve", json=body)
    assert refused.status_code == 403 and "CSRF" in refused.get_json()["error"]


def test_an_unanswered_question_denies_after_its_wait() -> None:
    questions = WebQuestions(wait_seconds=0.0)
    assert questions.ask(PendingCall("call_1", "run_bash", {"command": "ls"})) == "deny"
    assert not questions.answer("call_1", "once")  # no longer open


def _served_chat(served: Served, cookie: str, token: str, text: str) -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    connection.request("POST", "/api/chat", json.dumps({"message": text}).encode(),
                       {"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"})
    return connection, connection.getresponse()


def _served_answer(served: Served, cookie: str, token: str, call_id: str, decision: str) -> int:
    body = json.dumps({"id": call_id, "decision": decision}).encode()
    return served.request("POST", "/api/approve", body, {"Cookie": cookie, "X-CSRF-Token": token,
                                                         "Content-Type": "application/json"}, 30).status


def _events_until(response: Any, kind: str) -> list[dict[str, Any]]:
    events = []
    while not events or events[-1]["type"] != kind:
        events.append(json.loads(response.readline()))
    return events


def _stored_result(served: Served, cookie: str, session_id: int, call_id: str) -> dict[str, Any]:
    """The call's stored result, once the turn has written it (the server notices the closed
    connection at its next keep-alive); a bounded wait for that event, not a measurement."""
    found: list[dict[str, Any]] = []

    def stored() -> bool:
        listing = served.request("GET", f"/api/sessions/{session_id}", headers={"Cookie": cookie}, timeout=30)
        found[:] = [m for m in json.loads(listing.read())["messages"] if m.get("tool_call_id") == call_id]
        return bool(found)

    assert wait_until(stored), "the waiting call was never denied"
    return found[0]


@pytest.fixture
def served_shell(monkeypatch: pytest.MonkeyPatch, web_env: Path) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")


def test_over_http_a_call_waits_allow_once_runs_it_and_a_closed_connection_denies(
        served_shell: None, served: Served, llm: FakeLLMServer, workspace: Path) -> None:
    cookie, token = served_login(served)
    _bash(llm, "echo ran > proof.txt")
    connection, response = _served_chat(served, cookie, token, "make the proof")
    asked = _events_until(response, "approval_needed")[-1]
    assert not (workspace / "proof.txt").exists()
    assert _served_answer(served, cookie, token, asked["id"], "once") == 200
    finished = _events_until(response, "turn_finished")
    assert _finished(finished)["ok"] is True and (workspace / "proof.txt").read_text() == "ran\n"
    connection.close()

    _bash(llm, "echo closed > closed.txt")
    connection, response = _served_chat(served, cookie, token, "try again")
    started = _events_until(response, "approval_needed")
    asked, session_id = started[-1], started[0]["session_id"]
    connection.close()  # the page went away while the call waited
    assert _stored_result(served, cookie, session_id, asked["id"])["status"] == "denied"
    llm.queue(Reply(text="back"))
    connection, response = _served_chat(served, cookie, token, "hello")  # waits for the denied turn
    assert response.status == 200 and _events_until(response, "turn_finished")[-1]["stopped_reason"] == "done"
    connection.close()
    assert not (workspace / "closed.txt").exists()
    assert _served_answer(served, cookie, token, asked["id"], "once") == 404


def test_a_lasting_rule_of_a_write_is_honoured_on_the_web(shell_app: Any, llm: FakeLLMServer, workspace: Path,
                                                          hermes_home: Path) -> None:
    LastingRules(hermes_home, workspace).add(EXACT, "notes.md", tool="write_file")  # added in the TUI
    client = shell_app.test_client()
    token = login(client)
    llm.queue(Reply(tool_calls=[ToolCall("write_file", {"path": "notes.md", "content": "kept\n"})]),
              Reply(tool_calls=[ToolCall("write_file", {"path": "other.md", "content": "no\n"})]), Reply(text="done"))
    events = chat_answering(client, token, "write both", "deny")
    assert [e["arguments"]["path"] for e in events if e["type"] == "approval_needed"] == ["other.md"]
    assert (workspace / "notes.md").read_text() == "kept\n" and not (workspace / "other.md").exists()


def test_a_write_through_a_symlinked_folder_is_asked_by_its_real_target(
        shell_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    (workspace / ".github" / "workflows").mkdir(parents=True)
    (workspace / "docs").symlink_to(Path(".github") / "workflows")
    client = shell_app.test_client()
    token = login(client)
    llm.queue(Reply(tool_calls=[ToolCall("write_file", {"path": "docs/ci.yml", "content": "on: push\n"})]),
              Reply(text="done"))
    events = chat_answering(client, token, "add ci", "once")
    asked = next(e for e in events if e["type"] == "approval_needed")
    assert asked["target"] == ".github/workflows/ci.yml" and asked["arguments"]["path"] == "docs/ci.yml"
    assert (workspace / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"


def test_a_sub_agents_write_is_asked_in_the_page_naming_it(shell_app: Any, llm: FakeLLMServer,
                                                          workspace: Path) -> None:
    """delegate on the web: the sub-agent's call shows as a call of the turn (a ``subagent`` line
    with its summary), its question is a plain ``approval_needed`` naming it, and the answer runs it."""
    task = "Write hello to out.txt."

    def respond(request: Any) -> Reply:
        first = next(str(m["content"]) for m in request.messages if m["role"] == "user")
        done = any(m["role"] == "tool" for m in request.messages)
        if first.startswith(task):
            return Reply(text="written") if done else Reply(
                tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "hello"})])
        return Reply(text="ok") if done else Reply(
            tool_calls=[ToolCall("delegate", {"task": task, "tools": ["write_file"]})])

    llm.responder = respond
    client = shell_app.test_client()
    token = login(client)
    stream = lines_of(chat(client, token, "delegate the write", buffered=False))
    before: list[dict[str, Any]] = []
    while not before or before[-1]["type"] != "approval_needed":
        before.append(next(stream))
    asked = before[-1]
    assert asked["name"] == "write_file" and asked["agent"] == f"sub-agent 1: {task}"
    started = [e["event"] for e in before if e["type"] == "subagent" and e["event"]["type"] == "tool_call_started"]
    assert [(e["id"], e["summary"]) for e in started] == [(asked["id"], "out.txt")]
    assert not (workspace / "out.txt").exists()
    assert approve(client, token, asked["id"], "once").status_code == 200
    rest = list(stream)
    assert (workspace / "out.txt").read_text() == "hello"
    delegated = next(e for e in rest if e["type"] == "tool_call_finished")
    assert delegated["name"] == "delegate" and delegated["result"] == "written"
    assert rest[-1]["type"] == "turn_finished"
