"""``hermes-tui acp``: the real entry point driven by the ACP SDK's client side over stdio, against
the fake LLM server (both wire formats), with the warm helper on (as shipped) and off."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from hermes_tui import events, warm
from hermes_tui.acp.updates import UPDATES, replay
from hermes_tui.conversation import ChatMessage, Status, parse_calls
from hermes_tui.learning import pending
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.acp_harness import Editor, acp_agent, acp_process, run
from tests.engine_harness import three_tool_script
from tests.fakes.fixtures import on_wire, wire_env
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import HERMES_TUI
from tests.mcp_harness import declare, stdio_entry

pytestmark = pytest.mark.timeout(600)  # a process that imports litellm, on a loaded machine


@pytest.mark.parametrize("fake_llm_env", ["openai", "anthropic"], indirect=True)
def test_a_prompt_streams_the_answer_in_chunks(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                               tmp_path: Path) -> None:
    fake_llm_env.queue(Reply(text="Hello from the fake model, in many small pieces.", chunk_size=5))
    editor = Editor()

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, hello):
            assert hello.agent_capabilities is not None and hello.agent_capabilities.load_session
            assert hello.agent_info is not None and hello.agent_info.name == "hermes"
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Say hello")])
            assert answer.stop_reason == "end_turn"
            assert session.session_id.isdigit()

    run(scenario())
    chunks = [u for _, u in editor.updates if u.session_update == "agent_message_chunk"]
    assert len(chunks) > 3  # streamed, not one block at the end
    assert editor.text() == "Hello from the fake model, in many small pieces."
    assert fake_llm_env.requests[0].messages[-1]["content"].startswith("Say hello")
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:  # an ACP session is a Hermes session
        sessions = memory.list_sessions()
        assert [s.source for s in sessions] == ["acp"]
        assert [m.role for m in memory.get_messages(sessions[0].id)] == ["user", "assistant"]


# -- the warm helper: on as shipped, and off ----------------------------------------------------------


@pytest.fixture(params=["helper-on", "helper-off"])
def helper(request: pytest.FixtureRequest, runtime: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> bool:
    """True: the helper as shipped (HERMES_HELPER unset); False: HERMES_HELPER=off."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if request.param == "helper-off":
        monkeypatch.setenv("HERMES_HELPER", "off")
        warm.stop()  # the helper-on run before may have left one: this run must not start another
        return False
    monkeypatch.delenv("HERMES_HELPER", raising=False)  # conftest turns it off for ordinary tests
    return True


def _served_by_helper(on: bool) -> None:
    """With the helper on, a helper runs now (it served the turn's model calls); off, none was started."""
    assert (warm.status() is not None) == on


# -- approvals ----------------------------------------------------------------------------------------


def _bash_then_answer(server: FakeLLMServer, command: str = "echo made > made.txt") -> None:
    server.queue(Reply(text="I will run it.", tool_calls=[ToolCall("run_bash", {"command": command})]),
                 Reply(text="All done."))


@on_wire("anthropic")
def test_a_tool_call_asks_the_editor_and_allow_runs_it(fake_llm_env: FakeLLMServer, helper: bool, hermes_home: Path,
                                                       workspace: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """As shipped: the provider and key only in HERMES_HOME/.env (an editor passes little
    environment), and the warm helper on; and with the helper off."""
    settings = wire_env(fake_llm_env, "anthropic")
    hermes_home.mkdir(mode=0o700)
    (hermes_home / ".env").write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    for name in settings:
        monkeypatch.delenv(name)
    _bash_then_answer(fake_llm_env)
    editor = Editor(answer="once")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Make the file")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    assert (workspace / "made.txt").read_text() == "made\n"
    [(call, options)] = editor.asked
    assert call.title == "run_bash: echo made > made.txt" and call.kind == "execute"
    assert options == ["once", "session", "deny"]
    kinds = editor.kinds()
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    [started] = [u for _, u in editor.updates if u.session_update == "tool_call"]
    [finished] = [u for _, u in editor.updates if u.session_update == "tool_call_update"]
    assert started.tool_call_id == finished.tool_call_id == call.tool_call_id
    assert finished.status == "completed"
    assert editor.text() == "I will run it.All done."
    _served_by_helper(helper)


@on_wire("openai")
def test_reject_does_not_run_the_call_and_the_model_is_told(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                            workspace: Path, tmp_path: Path) -> None:
    _bash_then_answer(fake_llm_env)
    editor = Editor(answer="deny")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Make the file")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    assert len(editor.asked) == 1
    assert not (workspace / "made.txt").exists()
    [finished] = [u for _, u in editor.updates if u.session_update == "tool_call_update"]
    assert finished.status == "failed"
    assert "denied" in fake_llm_env.requests[1].messages[-1]["content"]


@on_wire("anthropic")
def test_allow_for_the_session_asks_once(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                         tmp_path: Path) -> None:
    _bash_then_answer(fake_llm_env, "echo one > one.txt")
    _bash_then_answer(fake_llm_env, "echo two > two.txt")
    editor = Editor(answer="session")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            for ask in ("first", "second"):
                answer = await conn.prompt(session_id=session.session_id, prompt=[text_block(ask)])
                assert answer.stop_reason == "end_turn"

    run(scenario())
    assert (workspace / "one.txt").is_file() and (workspace / "two.txt").is_file()
    assert len(editor.asked) == 1


# -- cancel -------------------------------------------------------------------------------------------


@on_wire("openai")
def test_cancel_stops_a_streaming_answer(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                         tmp_path: Path) -> None:
    text = "word " * 2000
    fake_llm_env.queue(Reply(text=text, chunk_size=5, chunk_delay=0.01))
    editor = Editor()

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("Talk")]))
            await editor.until(lambda: "agent_message_chunk" in editor.kinds())  # the first words arrive
            await conn.cancel(session_id=session.session_id)
            answer = await prompt
            assert answer.stop_reason == "cancelled"

    run(scenario())
    assert 0 < len(editor.text()) < len(text)


@on_wire("anthropic")
def test_cancel_while_the_editor_asks_runs_nothing(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                   tmp_path: Path) -> None:
    """The editor cancels the prompt while its permission question is open, then answers it
    "cancelled" (as the protocol asks): the call never runs, the prompt ends cancelled."""
    _bash_then_answer(fake_llm_env)
    holder: dict[str, Any] = {}

    async def cancel_first(_call: Any) -> None:
        await holder["conn"].cancel(session_id=holder["session"])

    editor = Editor(answer="cancelled", when_asked=cancel_first)

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            holder.update(conn=conn, session=session.session_id)
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Make the file")])
            assert answer.stop_reason == "cancelled"

    run(scenario())
    assert len(editor.asked) == 1
    assert not (workspace / "made.txt").exists()
    assert len(fake_llm_env.requests) == 1  # the model was not called again


# -- sessions -----------------------------------------------------------------------------------------


@on_wire("openai")
def test_load_replays_a_stored_session_and_continues_it(fake_llm_env: FakeLLMServer, helper: bool, hermes_home: Path,
                                                        workspace: Path, tmp_path: Path) -> None:
    """A session of one editor process, loaded by the next: its conversation is replayed as
    updates, and the next prompt continues it (the model sees the earlier turn)."""
    _bash_then_answer(fake_llm_env)
    first = Editor(answer="once")

    async def make() -> str:
        async with acp_agent(first, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(session_id=session.session_id, prompt=[text_block("Make the file")])
            return session.session_id

    session_id = asyncio.run(asyncio.wait_for(make(), 300))
    if not helper:  # the editor went away: the summary waits for the TUI, the web or doctor
        with MemoryStore(hermes_home / "memory.sqlite3") as memory:
            assert pending.pending(memory) == [int(session_id)]
    # The next answer is the new prompt's (the helper may meanwhile write the first session's summary).
    fake_llm_env.responder = lambda request: Reply(
        text="It is made." if "Is it there?" in str(request.messages[-1]["content"]) else "NONE")
    second = Editor()

    async def load() -> None:
        async with acp_agent(second, tmp_path / "stderr.log") as (conn, _hello):
            await conn.load_session(cwd=str(workspace), session_id=session_id)
            replayed = list(second.updates)
            answer = await conn.prompt(session_id=session_id, prompt=[text_block("Is it there?")])
            assert answer.stop_reason == "end_turn"
            assert [u.session_update for _, u in replayed] == [
                "user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
            assert replayed[0][1].content.text == "Make the file"
            assert replayed[3][1].status == "completed"
            assert {sid for sid, _ in replayed} == {session_id}

    run(load())
    [sent] = [r.messages for r in fake_llm_env.requests if "Is it there?" in str(r.messages[-1]["content"])]
    assert [m["content"] for m in sent if m["role"] == "user"][:1] == ["Make the file"]
    assert second.text().endswith("It is made.")
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        assert len(memory.list_sessions()) == 1
    _served_by_helper(helper)


@on_wire("anthropic")
def test_bad_input_is_a_readable_protocol_error(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                tmp_path: Path) -> None:
    """Unknown sessions, a bad cwd, a prompt without text and a provider's refusal are each one
    protocol error saying what is wrong; the agent answers the next prompt as usual."""
    fake_llm_env.queue(Fault(401), Reply(text="Still here."))
    editor = Editor()

    async def refused(call: Awaitable[Any]) -> str:
        with pytest.raises(RequestError) as raised:
            await call
        return str(raised.value)

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            assert "no session 999" in await refused(conn.load_session(cwd=str(workspace), session_id="999"))
            assert "no Hermes session id" in await refused(conn.load_session(cwd=str(workspace), session_id="x"))
            assert "absolute path" in await refused(conn.new_session(cwd="relative/folder"))
            assert "not a folder" in await refused(conn.new_session(cwd=str(workspace / "missing")))
            assert "no open session" in await refused(conn.prompt(session_id="42", prompt=[text_block("hi")]))
            session = (await conn.new_session(cwd=str(workspace))).session_id
            assert "no text" in await refused(conn.prompt(session_id=session, prompt=[text_block(" ")]))
            assert "ANTHROPIC_API_KEY" in await refused(conn.prompt(session_id=session, prompt=[text_block("hi")]))
            answer = await conn.prompt(session_id=session, prompt=[text_block("again")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    assert editor.text() == "Still here."


@on_wire("openai")
def test_a_missing_key_is_said_when_a_session_starts(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")

    async def scenario() -> None:
        async with acp_agent(Editor(), tmp_path / "stderr.log") as (conn, _hello):
            with pytest.raises(RequestError, match="OPENAI_API_KEY is not set"):
                await conn.new_session(cwd=str(workspace))

    run(scenario())
    assert not fake_llm_env.requests


def test_only_the_protocol_reaches_stdout(tmp_path: Path) -> None:
    """Once the protocol has its streams, a print and a child's output land on stderr."""
    probe = (
        "import asyncio, os, sys\n"
        "from hermes_tui.acp.pipes import protocol_streams\n"
        "async def main():\n"
        "    _reader, writer = await protocol_streams()\n"
        "    print('stray print')\n"
        "    os.system('echo stray child')\n"
        "    writer.write(b'{\"jsonrpc\": \"2.0\"}\\n')\n"
        "    await writer.drain()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"jsonrpc": "2.0"}\n'
    assert "stray print" in done.stderr and "stray child" in done.stderr


# -- the same core --------------------------------------------------------------------------------------


def test_every_event_type_has_an_update() -> None:
    """Events reach the editor through one table: every event class has its entry, nothing else does."""
    kinds = {cls for _, cls in inspect.getmembers(events, inspect.isclass)
             if issubclass(cls, events.Event) and cls is not events.Event}
    assert kinds and set(UPDATES) == kinds, kinds.symmetric_difference(UPDATES)


@on_wire("anthropic")
def test_a_sub_agents_steps_show_under_its_call(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                tmp_path: Path) -> None:
    """A ``delegate`` call is one tool call in the editor; the sub-agent's own calls are lines
    under it, and its answer is the call's result."""
    (workspace / "notes.txt").write_text("the port is 8431\n")
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("delegate", {"task": "find the port in notes.txt"})]),
                       Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
                       Reply(text="The port is 8431."),
                       Reply(text="It listens on 8431."))
    editor = Editor()

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Which port?")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    kinds = [(u.session_update, getattr(u, "kind", None)) for _, u in editor.updates]
    assert ("tool_call", "think") in kinds
    thoughts = "".join(u.content.text for _, u in editor.updates if u.session_update == "agent_thought_chunk")
    assert "read_file: notes.txt" in thoughts and "sub-agent" in thoughts
    results = [u for _, u in editor.updates if u.session_update == "tool_call_update" and u.status == "completed"]
    assert any("The port is 8431." in c.content.text for u in results for c in u.content or [])
    assert editor.text() == "It listens on 8431."


@pytest.mark.parametrize("fake_llm_env", ["openai", "anthropic"], indirect=True)
def test_an_image_in_the_prompt_reaches_the_model_and_a_non_image_is_refused(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path, tmp_path: Path) -> None:
    """An editor's image block is attached as ``--image`` would attach it (checked, kept, sent as
    image content); bytes that are no image are a protocol error naming why, and nothing is sent."""
    import base64
    import io

    from acp import image_block
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(picture, "PNG")
    fake_llm_env.queue(Reply(text="A red rectangle."))
    editor = Editor()

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, hello):
            assert hello.agent_capabilities is not None
            assert hello.agent_capabilities.prompt_capabilities.image
            session = await conn.new_session(cwd=str(workspace))
            with pytest.raises(RequestError, match="not an image Hermes can send"):
                await conn.prompt(session_id=session.session_id, prompt=[
                    text_block("What is this?"), image_block(base64.b64encode(b"plain text").decode(), "image/png")])
            answer = await conn.prompt(session_id=session.session_id, prompt=[
                text_block("What is this?"), image_block(base64.b64encode(picture.getvalue()).decode(), "image/png")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    assert len(fake_llm_env.requests) == 1
    assert fake_llm_env.requests[0].images == [("user", "image/png", picture.getvalue())]
    assert editor.text() == "A red rectangle."


@on_wire("openai")
def test_the_editors_folder_is_the_workspace(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                             tmp_path: Path) -> None:
    """The session's cwd wins over HERMES_WORKSPACE, and the tools stay inside it."""
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "outside.txt").write_text("not yours\n")
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "echo here > where.txt"})]),
                       Reply(tool_calls=[ToolCall("read_file", {"path": "../outside.txt"})]),
                       Reply(text="Done."))
    editor = Editor(answer="once")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(project))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("Where are you?")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    assert (project / "where.txt").read_text() == "here\n" and not (workspace / "where.txt").exists()
    assert [u.status for _, u in editor.updates if u.session_update == "tool_call_update"] == ["completed", "failed"]
    assert "not yours" not in str(fake_llm_env.requests[2].messages)
    with closing(sqlite3.connect(hermes_home / "memory.sqlite3")) as db:
        assert db.execute("SELECT workspace FROM sessions").fetchall() == [(str(project),)]


@on_wire("anthropic")
def test_a_turn_of_three_tool_calls_teaches_a_skill(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                    workspace: Path, tmp_path: Path) -> None:
    """The curator runs after the prompt is answered, as in every surface; the editor hears of the skill."""
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    three_tool_script(fake_llm_env)
    editor = Editor(answer="once")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id,
                                       prompt=[text_block("How many lines are in data.txt?")])
            assert answer.stop_reason == "end_turn"
            await editor.until(lambda: "Learned skill count-file-lines" in editor.text("agent_thought_chunk"))

    run(scenario())
    assert "**data.txt** has 3 lines" in editor.text()
    assert SkillManager(hermes_home / "skills").get("count-file-lines") is not None


@on_wire("anthropic")
def test_mcp_servers_of_the_workspace_are_offered_and_asked_about(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                                   workspace: Path, tmp_path: Path) -> None:
    """Hermes' own MCP servers (mcp.json) serve an ACP session; an unapproved workspace server does
    not start, and the editor is told so before the first turn."""
    declare(hermes_home / "mcp.json", {"fake": stdio_entry()})
    declare(workspace / ".mcp.json", {"repo": stdio_entry()})
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("mcp__fake__add", {"a": 2, "b": 3})]), Reply(text="It is 5."))
    editor = Editor(answer="once")

    async def scenario() -> None:
        async with acp_agent(editor, tmp_path / "stderr.log") as (conn, _hello):
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("add 2 and 3")])
            assert answer.stop_reason == "end_turn"

    run(scenario())
    [(call, _options)] = editor.asked
    assert call.title == "mcp__fake__add"
    [finished] = [u for _, u in editor.updates if u.session_update == "tool_call_update"]
    assert finished.status == "completed" and "5" in finished.content[0].content.text
    assert "MCP server repo from the workspace's .mcp.json is not approved yet" in editor.text("agent_thought_chunk")
    offered = fake_llm_env.requests[0].tools
    assert "mcp__fake__add" in offered and not [name for name in offered if name.startswith("mcp__repo__")]
    assert editor.text() == "It is 5."


def test_requests_from_a_file_are_answered_and_garbage_ends_nothing(hermes_home: Path, tmp_path: Path) -> None:
    """stdin and stdout may be files (a script, ``< requests > replies``): every request is
    answered in order, a line that is no JSON and a method Hermes lacks end nothing, EOF ends it."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" if isinstance(line, dict) else line for line in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        "this is not JSON\n",
        {"jsonrpc": "2.0", "id": 1, "method": "session/set_mode", "params": {"sessionId": "1", "modeId": "x"}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/no/such/folder", "mcpServers": []}},
    )))
    replies = tmp_path / "replies.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        done = subprocess.run([HERMES_TUI, "acp"], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=120,
                              env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    answers = {reply["id"]: reply for reply in map(json.loads, replies.read_text().splitlines())}
    assert answers[0]["result"]["agentInfo"]["name"] == "hermes"
    assert answers[1]["error"]["code"] == -32601
    assert "does not exist or is not a folder" in answers[2]["error"]["message"]


def test_replay_shows_what_a_view_shows() -> None:
    """Undone messages stay out, a failed call shows failed, a call without a stored result
    (the process died during it) is not left running, text arguments that were no JSON show raw."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
             {"id": "c2", "type": "function", "function": {"name": "run_bash", "arguments": "{not json"}}]
    messages = [
        ChatMessage(1, 1, "user", "read it"),
        ChatMessage(2, 1, "assistant", "Reading.", parse_calls(calls)),
        ChatMessage(3, 1, "tool", "no such file", tool_call_id="c1", name="read_file", status=Status.FAILED),
        ChatMessage(4, 1, "user", "take this back", status=Status.UNDONE),
    ]
    shown = [(u.session_update, getattr(u, "status", None), getattr(u, "title", None)) for u in replay(messages)]
    assert shown == [("user_message_chunk", None, None), ("agent_message_chunk", None, None),
                     ("tool_call", "in_progress", "read_file: a.txt"), ("tool_call", "failed", "run_bash"),
                     ("tool_call_update", "failed", None)]


@on_wire("openai")
def test_sigterm_cancels_the_turn_and_leaves_the_summary_pending(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                                  workspace: Path, tmp_path: Path) -> None:
    """An editor that quits may send SIGTERM: the running turn is cancelled, the session is left
    for its summary, and the process exits cleanly."""
    fake_llm_env.queue(Reply(text="word " * 2000, chunk_size=5, chunk_delay=0.01))
    editor = Editor()
    ended: list[int] = []

    async def scenario() -> None:
        async with acp_process(editor, tmp_path / "stderr.log") as (conn, _hello, process):
            session = await conn.new_session(cwd=str(workspace))
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("Talk")]))
            await editor.until(lambda: "agent_message_chunk" in editor.kinds())
            process.send_signal(signal.SIGTERM)
            ended.append(await process.wait())
            await asyncio.wait({prompt})  # answered "cancelled", or the connection closed under it

    run(scenario())
    assert ended == [0]
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        [session] = memory.list_sessions()
        assert pending.pending(memory) == [session.id]
        assert [m.status for m in memory.get_messages(session.id) if m.role == "user"] == [Status.CANCELLED]
