"""A resumed session sends the system prompt its first turn sent, byte for byte: the curated facts
and the skills index it fixed then are stored with it, so the provider's prompt cache survives
``--session N`` even after a fact was added or a skill learned in between."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import Config
from hermes_tui.events import TurnStarted
from hermes_tui.memory import facts
from hermes_tui.memory.store import MemoryStore
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply
from tests.helpers import headless_turn


def _sent(server: FakeLLMServer, text: str) -> RecordedRequest:
    """The request of the turn that sent ``text`` (other requests, e.g. a summary, may come after it)."""
    return next(r for r in reversed(server.requests)
                if any(m["role"] == "user" and text in str(m["content"]) for m in r.messages))


def test_a_resumed_session_sends_its_first_system_prompt(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                         workspace: Path) -> None:
    store = facts.for_config(Config.load())
    store.save("user", "The user prefers metric units.", by="user")
    fake_llm_env.queue(Reply(text="8 km."))
    session = next(e.session_id for e in headless_turn("Convert 5 miles.") if isinstance(e, TurnStarted))
    first = _sent(fake_llm_env, "Convert 5 miles.").system
    assert first and "metric units" in first

    store.save("user", "The user's cat is called Miso.", by="user")  # memory changes between the runs
    skill = hermes_home / "skills" / "unit-conversion" / "SKILL.md"  # and a skill is learned
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: unit-conversion\ndescription: Convert between units.\n---\n1. Multiply.\n")

    fake_llm_env.queue(Reply(text="16 km."))
    headless_turn("And 10 miles?", session_id=session)
    assert _sent(fake_llm_env, "And 10 miles?").system == first

    fake_llm_env.queue(Reply(text="Miso."))  # a new session fixes its own
    headless_turn("What is my cat called?")
    fresh = _sent(fake_llm_env, "What is my cat called?").system
    assert fresh and "Miso" in fresh and "unit-conversion" in fresh


def test_forgetting_a_session_forgets_its_kept_prompt(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                      workspace: Path) -> None:
    facts.for_config(Config.load()).save("user", "The user prefers metric units.", by="user")
    session = next(e.session_id for e in headless_turn("Convert 5 miles.") if isinstance(e, TurnStarted))
    with MemoryStore(Config.load().db_path) as memory:
        kept = memory.session_prompt(session)
        assert kept is not None and "metric units" in kept[0]
        memory.delete_session(session)
        assert memory.session_prompt(session) is None
