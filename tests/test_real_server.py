"""Hermes against a real OpenAI-compatible server with a real model: llama-cpp-python's server
running SmolLM2-135M-Instruct on a loopback port (``tests/realserver.py`` starts it).

This server does what the fake servers did not: its chat templates read ``message.content``
strictly, its errors after HTTP 200 are an empty stream, it sends no usage in streams, and it
serves one request at a time. Sessions that hold a tool call and its result are recorded through
the fake server first (this model never picks a tool by itself), then continued here.

Skips, saying why, when llama-cpp-python or the model package is not installed (``.ci/run``
installs both from ``../shared/realserver/`` when that folder exists).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import realserver

if realserver.missing():
    pytest.skip(f"no real server: {realserver.missing()}", allow_module_level=True)

from hermes_tui.agent.context import ContextWindow  # after the skip, like the imports it needs
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config, ConfigError
from hermes_tui.events import Error, Notice, TextDelta, TurnFinished, Usage
from hermes_tui.llm import LLMClient
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.windows import SERVER, Window
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli, says_http_500

WINDOW = 2048  # the server's --n_ctx, as llama.cpp's own default


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realserver.RealServer]:
    """One server for the module (loading the model costs seconds)."""
    server = realserver.start(tmp_path_factory.mktemp("llama"), n_ctx=WINDOW)
    yield server
    server.stop()


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    return home, workspace


def real_config(server: realserver.RealServer, places: tuple[Path, Path], **extra: str) -> Config:
    return Config.load(server.hermes_env(*places, **extra), cwd=places[1])


def fake_config(fake: FakeLLMServer, places: tuple[Path, Path]) -> Config:
    home, workspace = places
    return Config.load({"HERMES_PROVIDER": "openai", "HERMES_MODEL": "test-model", "HERMES_API_BASE": fake.openai_base,
                        "OPENAI_API_KEY": "sk-test", "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace)},
                       cwd=workspace)


def recorded_session(places: tuple[Path, Path], replies: list[Reply], prompts: list[str]) -> int:
    """A session recorded through the fake server (the same store the real server's loop opens)."""
    with FakeLLMServer() as fake:
        config = fake_config(fake, places)
        memory = MemoryStore(config.db_path)
        try:
            loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
            fake.queue(*replies)
            for prompt in prompts:
                assert next(e for e in loop.run_turn(prompt) if isinstance(e, TurnFinished)).stopped_reason == "done"
            return loop.session_id
        finally:
            memory.close()


def turn(config: Config, text: str, session_id: int | None = None) -> list[object]:
    memory = MemoryStore(config.db_path)
    try:
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir), session_id=session_id)
        return list(loop.run_turn(text))
    finally:
        memory.close()


def finished(events: list[object]) -> TurnFinished:
    errors = [e for e in events if isinstance(e, Error)]
    assert not errors, errors
    return next(e for e in events if isinstance(e, TurnFinished))


def test_a_text_answer(llama: realserver.RealServer, places: tuple[Path, Path]) -> None:
    events = turn(real_config(llama, places), "Say hello.")
    done = finished(events)
    assert done.stopped_reason == "done" and done.text.strip()
    assert [e for e in events if isinstance(e, TextDelta)]
    usage = [e for e in events if isinstance(e, Usage)][-1]
    assert usage.context_limit and usage.context_tokens


def test_the_window_is_the_servers_n_ctx(llama: realserver.RealServer, places: tuple[Path, Path]) -> None:
    """llama-cpp-python serves no /props and no max_model_len: its window is read from its refusal of
    an overlong prompt (it was read as the assumed 8,192 before)."""
    config = real_config(llama, places)
    assert ContextWindow(LLMClient(config), config).window() == Window(WINDOW, SERVER)


def test_the_step_after_a_tool_call_and_resuming_it(llama: realserver.RealServer, places: tuple[Path, Path]) -> None:
    """The assistant message holding the call has no text: it must still carry "content" (llama.cpp's
    template fails after HTTP 200 without it), in the next request and after a resume."""
    session = recorded_session(places, [Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
                                        Reply(text="It says alpha and beta.")], ["What is in notes.txt?"])
    config = real_config(llama, places)
    assert finished(turn(config, "Thanks. Say ok.", session_id=session)).stopped_reason == "done"
    assert finished(turn(config, "Say ok once more.", session_id=session)).stopped_reason == "done"


def test_compaction_in_a_2048_window(llama: realserver.RealServer, places: tuple[Path, Path]) -> None:
    long_answer = "The report covers budgets, staffing and the timeline of the migration. " * 25
    session = recorded_session(places, [Reply(text=f"Answer {n}. {long_answer}") for n in range(4)],
                               [f"Question {n}: tell me about the report." for n in range(4)])
    config = real_config(llama, places, HERMES_CONTEXT_TOKENS=str(WINDOW))
    events = turn(config, "Say ok.", session_id=session)
    assert finished(events).stopped_reason == "done"
    compacted = [e.message for e in events if isinstance(e, Notice) and e.message.startswith("Compacted")]
    assert compacted, [e for e in events if isinstance(e, Notice)]
    usage = [e for e in events if isinstance(e, Usage)][-1]
    assert usage.context_limit <= WINDOW and usage.context_tokens < WINDOW
    # Resumed later, the compacted view is sent again (and fits).
    assert finished(turn(config, "Say ok again.", session_id=session)).stopped_reason == "done"


def test_the_server_killed_mid_stream(tmp_path: Path, places: tuple[Path, Path]) -> None:
    server = realserver.start(tmp_path, n_ctx=WINDOW, answer_tokens=400)
    try:
        config = real_config(server, places)
        memory = MemoryStore(config.db_path)
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
        events: list[object] = []
        for event in loop.run_turn("Write a long story about a lighthouse keeper."):
            events.append(event)
            if isinstance(event, TextDelta) and server.process.poll() is None:
                server.kill()  # at the first words of the answer
        errors = [e for e in events if isinstance(e, Error)]
        shown = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert len(errors) == 1 and shown, events
        assert "cut off after" in errors[0].message and "What arrived is kept" in errors[0].message
        assert "\n" not in errors[0].message
        stored = [m for m in memory.get_messages(loop.session_id) if m.role == "assistant"]
        assert stored and stored[-1].content == shown
        memory.close()
    finally:
        server.stop()


def test_a_url_without_a_scheme(llama: realserver.RealServer, places: tuple[Path, Path],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    bare = llama.base.removeprefix("http://")
    with pytest.raises(ConfigError, match="HERMES_API_BASE"):
        real_config(llama, places, HERMES_API_BASE=bare)
    for name, value in llama.hermes_env(*places, HERMES_API_BASE=bare).items():
        monkeypatch.setenv(name, value)
    result = cli("-p", "hi")
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "HERMES_API_BASE" in lines[0] and f"http://{bare}" in lines[0] and not says_http_500(lines[0])


def test_a_summary_that_outlives_the_quit(llama: realserver.RealServer, places: tuple[Path, Path]) -> None:
    """A slow local model cannot summarize within a quit's grace: the session is marked pending, the
    abandoned request closes its connection (the one-at-a-time server is free at once), and the
    summary is written at the next start (doctor does what a surface's background writer does)."""
    from hermes_tui.learning import pending
    from hermes_tui.llm import LLMClient

    config = real_config(llama, places)
    memory = MemoryStore(config.db_path)
    try:
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
        assert finished(list(loop.run_turn("Say hello."))).stopped_reason == "done"
        assert loop.close(timeout=0.05) is None  # the quit's grace runs out first
        assert pending.pending(memory) == [loop.session_id]
        # The server is free for the next request: the abandoned summary did not keep it busy.
        assert finished(turn(config, "Say ok.")).stopped_reason == "done"
        outcome, summary = pending.write(memory, LLMClient(config), loop.session_id, timeout=300)
        assert outcome is pending.Outcome.WRITTEN and summary, outcome
        assert memory.get_session(loop.session_id).summary == summary
        assert pending.pending(memory) == []
    finally:
        memory.close()
