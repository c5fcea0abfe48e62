"""``hermes-tui -p`` with the warm helper on, as shipped (HERMES_HELPER unset), and off.

The helper-on runs are the installed entry point in a subprocess (``run_cli``): the module's first
run answers in its own process and leaves a helper, which imports litellm once and serves the
later runs. The helper-off runs are the same
``tui_main`` in this process (``cli``): a new interpreter would only add its seconds of
``import litellm``. What the whole-answer calls do (the skill curator, compaction's summary, a
continued session's summary and memory curator) must not depend on where they run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_tui import warm
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.engine_harness import three_tool_script
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Item, RecordedRequest, Reply, ToolCall
from tests.helpers import cli, run_cli, wait_until

pytestmark = pytest.mark.timeout(900)  # the helper's first start imports litellm: a minute loaded

Run = Callable[..., "subprocess.CompletedProcess[str]"]
SUMMARY_MARK = "Conversation to summarize:"  # compaction's prompt (agent/prompts.py)
SESSION_SUMMARY = "note to your future self"  # a closing session's summary prompt
MEMORY_CURATOR = "What the user wrote"  # the memory curator's prompt
FACT = "the deploy target is staging-7"


@pytest.fixture(params=["helper-on", "helper-off"])
def run(request: pytest.FixtureRequest, runtime: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        hermes_home: Path, workspace: Path) -> Run:
    """How a ``hermes-tui`` command runs: helper on as shipped (the variable unset), or off."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if request.param == "helper-off":
        monkeypatch.setenv("HERMES_HELPER", "off")
        return cli
    monkeypatch.delenv("HERMES_HELPER", raising=False)  # conftest turns it off for ordinary tests

    def on(*args: str) -> subprocess.CompletedProcess[str]:
        result = run_cli(*args, timeout=600)
        assert wait_until(lambda: warm.status() is not None)  # the helper served it, or runs for the next
        return result

    return on


def _asked(server: FakeLLMServer, mark: str) -> int:
    return sum(mark in str(r.messages) for r in server.requests)


@on_wire("anthropic")
def test_a_three_tool_turn_learns_a_skill(fake_llm_env: FakeLLMServer, run: Run, hermes_home: Path,
                                          workspace: Path) -> None:
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    three_tool_script(fake_llm_env)
    result = run("-p", "How many lines are in data.txt?", "--yes")
    assert result.returncode == 0, result.stderr
    assert "**data.txt** has 3 lines" in result.stdout
    assert "learned skill count-file-lines (v1)" in result.stderr, result.stderr
    assert "skill proposal skipped" not in result.stderr
    skill = SkillManager(hermes_home / "skills").get("count-file-lines")
    assert skill is not None and skill.path is not None and skill.path.name == "SKILL.md" and skill.path.is_file()


# -- compaction ------------------------------------------------------------------------------------


def _reader(request: RecordedRequest) -> Item:
    """A stand-in model: summarizes when asked (keeping the fact), reads big.txt, answers."""
    last = request.messages[-1]
    content = str(last.get("content"))
    if SUMMARY_MARK in content:
        facts = "".join(f"- {fact}\n" for fact in sorted(set(_facts(content))))
        return Reply(text="## Goals and constraints\nRead big.txt.\n## Facts to remember\n" + facts
                          + "## Tasks\nnone\n## Files touched\n- big.txt\n## Decisions\nnone\n## Errors met\n"
                            "none\n## Current state\nReading big.txt.\n", chunk_size=4096)
    if last["role"] == "tool":
        return Reply(text="I read it again.", chunk_size=4096)
    if "read big.txt" in content:
        return Reply(tool_calls=[ToolCall("read_file", {"path": "big.txt"})], chunk_size=4096)
    return Reply(text="NONE")  # a session summary or the memory curator: nothing worth keeping


def _facts(text: str) -> list[str]:
    return [FACT] if FACT in text else []


def _long_session(hermes_home: Path, workspace: Path, turns: int) -> int:
    """A stored session of ``turns`` reads of big.txt, the fact in its first message. Each result
    (2.4 KB) is too small to trim: only folding turns into a summary makes room."""
    big = "".join(f"{n:05d} The quick brown fox jumps over the lazy dog while the build keeps running.\n"
                  for n in range(30))
    (workspace / "big.txt").write_text(big)
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        session = memory.new_session("headless", workspace=str(workspace))
        for turn in range(1, turns + 1):
            ask = f"Please remember: {FACT}. Now read big.txt." if turn == 1 else f"Turn {turn}: read big.txt."
            call = {"id": f"call_{turn}", "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": "big.txt"})}}
            memory.add_message(session, "user", ask)
            memory.add_message(session, "assistant", "", tool_calls=[call])
            memory.add_message(session, "tool", big, tool_call_id=f"call_{turn}", name="read_file")
            memory.add_message(session, "assistant", "I read it.")
    return session


@pytest.mark.parametrize("fake_llm_env", ["openai", "anthropic"], indirect=True)
def test_a_session_longer_than_the_window_compacts_and_the_turn_answers(
        fake_llm_env: FakeLLMServer, run: Run, hermes_home: Path, workspace: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI wire: the model is unknown to litellm, HERMES_CONTEXT_TOKENS sets a small window and
    Hermes compacts before sending. Anthropic wire: litellm's table says 200k, the server refuses
    (a real context-length 400), Hermes learns the window, compacts and the turn recovers."""
    fake_llm_env.max_request_bytes = 100_000
    fake_llm_env.strict = True
    fake_llm_env.responder = _reader
    if fake_llm_env.wire_under_test == "openai":
        monkeypatch.setenv("HERMES_CONTEXT_TOKENS", "22000")
    session = _long_session(hermes_home, workspace, turns=45)  # ~110 KB: more than either window

    result = run("-p", "Turn 4: read big.txt.", "--session", str(session), "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "I read it again.\n"
    assert _asked(fake_llm_env, SUMMARY_MARK) >= 1  # the model wrote the summary ...
    assert "could not write the summary" not in result.stderr
    final = next(r for r in reversed(fake_llm_env.requests) if r.messages[-1]["role"] == "tool")
    assert FACT in str(final.messages) and "Turn 4" in str(final.messages)  # ... and it was sent
    assert fake_llm_env.violations == []
    if fake_llm_env.wire_under_test == "openai":
        assert fake_llm_env.refused == []  # compacted before the provider had to refuse
    else:
        assert fake_llm_env.refused  # the 400 came, and the turn recovered from it


# -- a continued session ---------------------------------------------------------------------------


@on_wire("openai")
def test_a_continued_session_gets_its_summary_and_memory_curator(fake_llm_env: FakeLLMServer, run: Run,
                                                                 hermes_home: Path, workspace: Path) -> None:
    def answer(request: RecordedRequest) -> Item:
        sent = str(request.messages)
        if SESSION_SUMMARY in sent:
            return Reply(text="The user asked me to remember kiwi, and later which fruit it was.")
        if MEMORY_CURATOR in sent:
            return Reply(text="NONE")
        return Reply(text="It was kiwi.")

    fake_llm_env.responder = answer
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        session = memory.new_session("headless", workspace=str(workspace))
        memory.add_message(session, "user", "remember kiwi")
        memory.add_message(session, "assistant", "Noted.")

    result = run("-p", "which fruit?", "--session", str(session))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It was kiwi.\n"
    assert _asked(fake_llm_env, MEMORY_CURATOR) == 1  # the memory curator read the session
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        info = memory.get_session(session)
    assert info is not None and (info.summary or "").startswith("The user asked me to remember kiwi")


# -- hooks -----------------------------------------------------------------------------------------


@on_wire("openai")
def test_a_pre_tool_use_hook_blocks_as_shipped(fake_llm_env: FakeLLMServer, run: Run, hermes_home: Path,
                                               workspace: Path, tmp_path: Path) -> None:
    """Hooks run in the turn's own process, whichever process makes the model calls."""
    from tests.test_hooks import command_hook, script, settings, tool_results

    guard = script(tmp_path / "hooks", "guard.sh", "echo 'not in this repository' >&2\nexit 2\n")
    settings(hermes_home / "settings.json", {"PreToolUse": [command_hook(str(guard), "Bash")]})
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made-it"})]), Reply(text="OK."))
    result = run("-p", "make a file", "--yes")
    assert result.returncode == 0, result.stderr
    assert not (workspace / "made-it").exists()
    [blocked] = tool_results(fake_llm_env, 1)
    assert blocked.startswith("Blocked by the user's PreToolUse hook.") and blocked.endswith("\nnot in this repository")
