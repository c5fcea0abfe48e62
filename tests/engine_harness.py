"""The engine tests' harness: an AgentLoop on real stores against the fake server, and scripts for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

SKILL_ANSWER = """NAME: count-file-lines
DESCRIPTION: Count the lines of a text file in the workspace
TRIGGERS: count, lines, file, wc
BODY:
1. `list_dir` to find the file.
2. `run_bash` with `wc -l <file>`.
3. `read_file` to double-check the content."""


@pytest.fixture
def stores(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> Iterator[tuple[Config, MemoryStore, SkillManager]]:
    # On the OpenAI wire the fake answers like llama.cpp's server: what its chat templates cannot
    # render (an assistant message without "content", or null content) fails the request.
    fake_llm_env.strict_local = fake_llm_env.wire_under_test == "openai"
    config = Config.load()
    memory = MemoryStore(config.db_path)
    yield config, memory, SkillManager(config.skills_dir)
    memory.close()


def make_loop(stores: tuple[Config, MemoryStore, SkillManager], **kwargs) -> AgentLoop:
    config, memory, skills = stores
    return AgentLoop(config, memory, skills, **kwargs)


def three_tool_script(server: FakeLLMServer) -> None:
    server.queue(
        Reply(text="Let me look.", tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l data.txt"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "data.txt"})]),
        Reply(text="**data.txt** has 3 lines: alpha, beta, gamma."),
        Reply(text=SKILL_ANSWER),
    )
