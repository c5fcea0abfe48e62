"""Context window management: a long session with big tool outputs keeps answering, remembers.

The fake server refuses any request over 100 KB with the real "context length exceeded" body
of its wire format. The OpenAI model is unknown to litellm, so HERMES_CONTEXT_TOKENS sets its
window and Hermes compacts before it is refused; claude-sonnet-4-5 has a 200k window in
litellm's table, far more than the server accepts, so Hermes learns from the refusal, compacts
and retries. Either way every turn is answered and the facts of turn 1 are still sent at turn 60.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.agent.context import ContextWindow, trimmed
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.agent.prompts import COMPACTION_PROMPT, COMPACTION_SECTIONS
from hermes_tui.config import Config
from hermes_tui.events import Error, Notice, TurnFinished, Usage
from hermes_tui.llm import LLMClient
from hermes_tui.memory.store import MemoryStore
from hermes_tui.providers import provider
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Item, RecordedRequest, Reply, ToolCall
from tests.helpers import assert_history_valid
from tests.tui_harness import HermesApp, Pilot, notices, run, send, send_and_wait, server, text_of, wait_for  # noqa: F401 - fixtures
from tests.web_harness import chat, llm, login, make_app, ndjson, web_env  # noqa: F401 - fixtures

TURNS = 60
LIMIT_BYTES = 100_000
FACT = "the deploy target is staging-7"
TASKS = ("migrate the billing database", "rotate the API keys")
FIRST = f"Please remember: {FACT}. Open tasks: {TASKS[0]}; {TASKS[1]}. Now read big.txt."
SUMMARY_MARK = "Conversation to summarize:"


def fake_model(request: RecordedRequest) -> Item:
    """A stand-in model: summarizes when asked (keeping what it is shown), reads big.txt, answers."""
    messages = request.messages
    last = messages[-1]
    if SUMMARY_MARK in str(last.get("content")):
        prompt = str(last["content"])
        facts = sorted(set(re.findall(r"the deploy target is [\w-]+", prompt)))
        tasks = [t for t in TASKS if t in prompt]
        return Reply(text="## Goals and constraints\nKeep answering the user's reads.\n## Facts to remember\n"
                          + "".join(f"- {f}\n" for f in facts) + "## Tasks\n"
                          + "".join(f"- [open] {t}\n" for t in tasks)
                          + "## Files touched\n- big.txt\n## Decisions\nnone\n## Errors met\nnone\n"
                          "## Current state\nReading big.txt.\n", chunk_size=4096)
    if last["role"] == "tool":
        turns = sum(1 for m in messages if m["role"] == "user" and "read big.txt" in str(m.get("content")))
        return Reply(text=f"I read it (request {len(messages)} messages, {turns} visible turns).", chunk_size=4096)
    return Reply(tool_calls=[ToolCall("read_file", {"path": "big.txt"})], chunk_size=4096)


@pytest.fixture
def session(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeLLMServer, Config, MemoryStore, SkillManager]]:
    fake_llm_env.max_request_bytes = LIMIT_BYTES
    fake_llm_env.strict = True
    fake_llm_env.responder = fake_model
    lines = [f"{n:05d} The quick brown fox jumps over the lazy dog while the build keeps running.\n"
             for n in range(600)]
    (workspace / "big.txt").write_text("".join(lines))  # ~48 KB
    if fake_llm_env.wire_under_test == "openai":
        monkeypatch.setenv("HERMES_CONTEXT_TOKENS", "22000")  # unknown model: the window is configured
    config = Config.load()
    memory = MemoryStore(config.db_path)
    yield fake_llm_env, config, memory, SkillManager(config.skills_dir)
    memory.close()


def test_sixty_turns_of_50kb_tool_outputs(session: tuple[FakeLLMServer, Config, MemoryStore, SkillManager]) -> None:
    server, config, memory, skills = session
    loop = AgentLoop(config, memory, skills)
    compactions = 0
    usages: list[Usage] = []
    for turn in range(1, TURNS + 1):
        text = FIRST if turn == 1 else f"Turn {turn}: read big.txt again."
        events = list(loop.run_turn(text))
        errors = [e for e in events if isinstance(e, Error)]
        assert not errors, f"turn {turn}: {errors}"
        finished = [e for e in events if isinstance(e, TurnFinished)]
        assert finished[0].stopped_reason == "done" and finished[0].text.startswith("I read it"), (turn, finished)
        compactions += sum(1 for e in events if isinstance(e, Notice) and e.message.startswith("Compacted"))
        usages += [e for e in events if isinstance(e, Usage)]

    assert server.violations == []
    assert compactions >= 10
    final = server.requests[-1]
    assert final.messages[-1]["role"] == "tool"  # the last answer of turn 60 ...
    sent = str(final.messages)
    assert FACT in sent and all(task in sent for task in TASKS)  # ... still carries turn 1
    assert "Turn 60" in sent
    if server.wire_under_test == "openai":
        assert server.refused == []  # compacted before the provider had to refuse
    else:
        assert server.refused  # learned the real window from the refusal, then retried
    assert all(u.context_limit and 0 < u.context_tokens <= u.context_limit for u in usages)

    stored = [m.to_llm() for m in memory.get_messages(loop.session_id)]
    assert len(stored) == TURNS * 4  # every original message is kept
    assert sum(len(m["content"] or "") for m in stored if m["role"] == "tool") > TURNS * 45_000
    assert_history_valid(stored)

    # A resumed session sends the compacted view, not the whole history.
    server.reset()
    resumed = AgentLoop(config, memory, skills, session_id=loop.session_id)
    events = list(resumed.run_turn("What is the deploy target?"))
    assert not [e for e in events if isinstance(e, Error)]
    first = server.requests[0]
    assert FACT in str(first.messages) and len(first.messages) < 20
    if server.wire_under_test == "openai":
        assert server.refused == []


def test_compact_command_with_focus(session: tuple[FakeLLMServer, Config, MemoryStore, SkillManager]) -> None:
    server, config, memory, skills = session
    server.max_request_bytes = None
    loop = AgentLoop(config, memory, skills)
    for text in (FIRST, "Turn 2: read big.txt again.", "Turn 3: read big.txt again."):
        assert list(loop.run_turn(text))[-1].stopped_reason == "done"
    before = loop.context.tokens(loop.history, 0)
    events = list(loop.compact("the deploy target"))
    assert isinstance(events[0], Notice) and events[0].message.startswith("Compacted")
    assert isinstance(events[-1], Usage) and events[-1].context_tokens < before
    prompt = str(server.requests[-1].messages[-1]["content"])
    assert "focus on: the deploy target" in prompt and SUMMARY_MARK in prompt
    stored = memory.latest_compaction(loop.session_id)
    assert stored is not None and FACT in stored.summary
    view = loop.context.view(loop.history)
    assert FACT in view[0]["content"] and "Turn 3" in str(view)  # the last turn stays verbatim
    assert "Turn 2" not in str(view) or "trimmed" in str(view)


def test_limit_sources_and_trimming(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = Config.load()
    window = ContextWindow(LLMClient(config), config)
    if fake_llm_env.wire_under_test == "anthropic":
        assert window.limit() == 200_000  # litellm's model table
    else:
        assert window.limit() == provider("openai").context_window  # unknown model: the provider's fallback
        monkeypatch.setenv("HERMES_CONTEXT_TOKENS", "50000")
        config = Config.load()
        assert ContextWindow(LLMClient(config), config).limit() == 50_000
    assert window.threshold() == int(window.limit() * 0.8)
    text = "head " * 1000 + "tail " * 1000
    cut = trimmed(text)
    assert cut.startswith("head") and cut.endswith("tail ") and "trimmed" in cut and len(cut) < 3000
    assert trimmed("short") == "short"


def test_tui_compact_command_and_context_share(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_CONTEXT_TOKENS", "20000")
    server.responder = fake_model

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/compact")
        assert notices(app)[-1].endswith("Nothing to compact yet: the conversation is empty.")
        (Config.load().workspace / "big.txt").write_text("a line of text for the window\n" * 600)
        await send_and_wait(app, pilot, FIRST)
        await send_and_wait(app, pilot, "Turn 2: read big.txt again.")
        before = text_of(app.query_one("#usage"))
        share = int(re.search(r"context (\d+)%", before).group(1))
        assert share > 20
        await send(app, pilot, "/compact the deploy target")
        await wait_for(pilot, lambda: any(n.startswith("ℹ Compacted") for n in notices(app)))
        await wait_for(pilot, lambda: text_of(app.query_one("#usage")) != before)
        after = int(re.search(r"context (\d+)%", text_of(app.query_one("#usage"))).group(1))
        assert after < share
        assert "focus on: the deploy target" in str(server.requests[-1].messages)

    run(scenario)


def test_web_compact_action_and_context_share(make_app: Any, llm: FakeLLMServer, workspace: Path) -> None:
    llm.responder = fake_model
    (workspace / "big.txt").write_text("a line of text for the window\n" * 600)
    client = make_app().test_client()
    token = login(client)
    headers = {"X-CSRF-Token": token}
    empty = client.post("/api/chat/compact", json={}, headers=headers)
    assert empty.status_code == 200 and empty.get_json()["notices"] == ["Nothing to compact yet: the conversation is short."]
    for text in (FIRST, "Turn 2: read big.txt again."):
        events = ndjson(chat(client, token, text))
    usage = [e for e in events if e["type"] == "usage"][-1]
    assert usage["context_limit"] == provider("openai").context_window and usage["context_tokens"] > 10_000
    assert client.post("/api/chat/compact", json={"focus": 5}, headers=headers).status_code == 400
    assert client.post("/api/chat/compact", json={}).status_code in (400, 403)  # CSRF
    done = client.post("/api/chat/compact", json={"focus": "the deploy target"}, headers=headers).get_json()
    assert done["notices"][0].startswith("Compacted the conversation")
    assert done["context_limit"] == usage["context_limit"] and done["context_tokens"] < usage["context_tokens"]
    assert "focus on: the deploy target" in str(llm.requests[-1].messages)


@pytest.mark.parametrize("summary", [
    "User: hi\nAssistant: hello\nUser: read big.txt",  # a made-up dialogue, no sections
    "## " + "\n## ".join(COMPACTION_SECTIONS) + "\n" + "filler " * 40_000,  # bigger than what it replaces
])
def test_a_summary_that_does_not_help_is_not_kept(session: tuple[FakeLLMServer, Config, MemoryStore, SkillManager],
                                                  summary: str) -> None:
    """The turns stay, old tool results are trimmed deterministically, and the notice says so."""
    server, config, memory, skills = session
    server.max_request_bytes = None
    loop = AgentLoop(replace(config, context_tokens=190_000), memory, skills)  # no compaction before /compact
    for text in (FIRST, "Turn 2: read big.txt again.", "Turn 3: read big.txt again."):
        assert list(loop.run_turn(text))[-1].stopped_reason == "done"
    before = loop.context.tokens(loop.history, 0)
    server.queue(Reply(text=summary, chunk_size=4096))
    events = list(loop.compact())
    notice = events[0].message
    assert notice.startswith("Compacted") and "turns were kept and old tool results trimmed" in notice
    assert ("lacks the section" in notice) == ("##" not in summary)
    assert ("not smaller" in notice) == ("##" in summary)
    view = loop.context.view(loop.history)
    assert summary[:20] not in str(view) and loop.context.summary is None
    assert FIRST in str(view) and "Turn 2" in str(view)  # every turn is still sent verbatim
    assert "trimmed to save context" in str(view)
    assert isinstance(events[-1], Usage) and events[-1].context_tokens < before


def test_compaction_prompt_asks_for_every_required_section() -> None:
    assert all(f"## {name}\n" in COMPACTION_PROMPT for name in COMPACTION_SECTIONS)
