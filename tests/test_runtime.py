"""The agent runtime every surface uses: events in order, failures as one Error + TurnFinished."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent.runtime import EventQueue, RunningTurn, build_agent, headless_surface, start_turn, web_surface
from hermes_tui.background import Background
from hermes_tui.config import DEFAULT_MODELS, KEY_VARIABLES, Config
from hermes_tui.events import Error, Event, TextDelta, TurnFinished, TurnStarted
from hermes_tui.memory.store import MemoryStore
from hermes_tui.providers import PROVIDER_TABLE
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply


def drain(events: EventQueue) -> list[Event]:
    seen: list[Event] = []
    while (event := events.get(timeout=30)) is not None:
        seen.append(event)
    return seen


def test_a_turn_runs_through_the_runtime(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    fake_llm_env.queue(Reply(text="Hello from the fake."))
    config = Config.load()
    memory = MemoryStore(config.db_path)
    agent = build_agent(config, memory, SkillManager(config.skills_dir), headless_surface(None))
    events = EventQueue()
    running = start_turn(agent, "hi", events.put, Background(), on_end=events.end)
    seen = drain(events)
    assert running.join(5) and running.stopped_reason == "done"
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "Hello from the fake."
    assert memory.get_session(agent.session_id).source == "headless"
    memory.close()


def test_the_runners_shutdown_cancels_a_streaming_turn_and_waits_for_it(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    fake_llm_env.queue(Reply(text="word " * 4000, chunk_size=5, chunk_delay=0.02))  # minutes of stream
    config = Config.load()
    memory = MemoryStore(config.db_path)
    agent = build_agent(config, memory, SkillManager(config.skills_dir), headless_surface(None))
    events, streaming = EventQueue(), threading.Event()

    def sink(event: Event) -> None:
        if isinstance(event, TextDelta):
            streaming.set()
        events.put(event)

    runner = Background()
    running = start_turn(agent, "talk for a long time", sink, runner, on_end=events.end)
    assert streaming.wait(30)
    assert runner.running() == [f"hermes-turn-{agent.session_id}"]
    assert runner.shutdown(runner.clock() + 30) == []  # cancelled, then waited for
    assert running.stopped_reason == "cancelled" and running.done.is_set()
    assert [e.type for e in drain(events)][-1] == "turn_finished"
    stored = [m for m in memory.get_messages(agent.session_id) if m.role == "assistant"]
    assert stored and stored[0].content and stored[0].content.startswith("word")  # what came is kept
    memory.close()


def test_web_surface_takes_its_tools_from_the_environment(hermes_home: Path, workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    config = Config.load()
    memory = MemoryStore(config.db_path)
    agent = build_agent(config, memory, SkillManager(config.skills_dir), web_surface(config))
    assert "run_bash" in agent.tools.names and "write_file" not in agent.tools.names
    assert memory.get_session(agent.session_id).source == "web"
    memory.close()


def test_a_crashing_turn_still_ends_with_error_and_turn_finished() -> None:
    def broken() -> Iterator[Event]:
        yield TurnStarted(1)
        raise RuntimeError("disk on fire")

    events = EventQueue()
    running = RunningTurn(broken(), events.put, Background(), on_end=events.end, is_turn=True).start()
    seen = drain(events)
    assert [e.type for e in seen] == ["turn_started", "error", "turn_finished"]
    assert isinstance(seen[1], Error) and "disk on fire" in seen[1].message
    assert isinstance(seen[2], TurnFinished) and seen[2].stopped_reason == "error"
    assert running.done.is_set() and running.stopped_reason == "error"


def test_config_derives_provider_facts_from_the_table() -> None:
    assert {name: p.default_model for name, p in PROVIDER_TABLE.items()} == DEFAULT_MODELS
    assert {name: p.key_env_var for name, p in PROVIDER_TABLE.items()} == KEY_VARIABLES
    ollama = Config(provider="ollama", model="llama3.2")
    assert ollama.effective_api_base == PROVIDER_TABLE["ollama"].default_base and ollama.has_api_key
    assert PROVIDER_TABLE["openrouter"].caches("anthropic/claude-sonnet-5")
    assert not PROVIDER_TABLE["openrouter"].caches("openai/gpt-5.5")
    assert PROVIDER_TABLE["anthropic"].caches("claude-sonnet-5") and not PROVIDER_TABLE["openai"].caches("gpt-5.5")
