"""``hermes-tui acp``: the real entry point driven by the ACP SDK's client side over stdio, against
the fake LLM server (both wire formats), with the warm helper on (as shipped) and off."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from hermes_tui import warm
from hermes_tui.memory.store import MemoryStore
from tests.acp_harness import Editor, acp_agent, run
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

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


@pytest.fixture(scope="module")
def runtime() -> Iterator[Path]:
    """The module's runtime folder for the helper's socket (short: a socket path fits 107 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="ha-", dir="/tmp"))
    yield base
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(base))
        warm.stop()
    shutil.rmtree(base, ignore_errors=True)


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
                                                       workspace: Path, tmp_path: Path) -> None:
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
            while "agent_message_chunk" not in editor.kinds():
                await asyncio.sleep(0.02)  # the editor's user watches the first words arrive
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
