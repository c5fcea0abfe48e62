"""``hermes-tui acp``: the real entry point driven by the ACP SDK's client side over stdio, against
the fake LLM server (both wire formats), with the warm helper on (as shipped) and off."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from hermes_tui.memory.store import MemoryStore
from tests.acp_harness import Editor, acp_agent, run
from tests.fakes.server import FakeLLMServer, Reply

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
