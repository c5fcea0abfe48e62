"""Learning that proves itself (issue #36, points 2 and 3), through ``hermes-tui`` against the fake server.

The curator is asked only after a turn whose work ended well and is told what failed on the way;
a correction, /retry or /undo demotes what was learned; HERMES_LEARN=review holds it in the inbox
and off learns nothing; every learned skill names its model and session, every use books its
outcome and cost, and a skill that fails more than it works leaves the prompt until pinned.
Headless runs here use HERMES_HELPER=off (conftest): the warm helper's ``complete`` is not used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_tui.config import Config
from hermes_tui.learning.outcome import is_correction
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui.session import ChatSession
from hermes_tui.tui.stores import Stores
from tests.engine_harness import SKILL_ANSWER, three_tool_script
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli

SKILL = "count-file-lines"


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    return fake_llm_env


def model_of(env: FakeLLMServer) -> str:
    return "anthropic:claude-sonnet-4-5" if env.wire_under_test == "anthropic" else "openai:test-model"


def run(*args: str) -> str:
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def turn(text: str, session: int | None = None) -> int:
    """One ``-p --json`` turn; its session id."""
    more = ("--session", str(session)) if session is not None else ()
    out = run("-p", text, "--yes", "--json", *more)
    return int(json.loads(out.splitlines()[0])["session_id"])


def learn(env: FakeLLMServer) -> int:
    """The three-call task that teaches count-file-lines; its session id."""
    three_tool_script(env)
    return turn("How many lines are in data.txt?")


def use_skill_turn(env: FakeLLMServer, text: str, session: int | None = None) -> int:
    env.queue(Reply(tool_calls=[ToolCall("use_skill", {"name": SKILL})]), Reply(text="Done with the skill."))
    return turn(text, session)


def test_unrecovered_failure_asks_no_curator(env: FakeLLMServer, hermes_home: Path) -> None:
    env.queue(
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l data.txt"})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l missing.txt"})]),  # fails, never fixed
        Reply(text="It has 3 lines, I think."),
        Reply(text=SKILL_ANSWER),
    )
    turn("How many lines are in data.txt and missing.txt?")
    assert len(env.requests) == 4  # the turn's calls only: no curator request
    assert SkillManager(hermes_home / "skills").get(SKILL) is None


def test_failed_then_fixed_turn_asks_curator_naming_the_failure(env: FakeLLMServer, hermes_home: Path) -> None:
    env.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l dat.txt"})]),  # a typo: fails
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l data.txt"})]),  # fixed
        Reply(tool_calls=[ToolCall("read_file", {"path": "data.txt"})]),
        Reply(text="data.txt has 3 lines."),
        Reply(text=SKILL_ANSWER),
    )
    turn("How many lines are in data.txt?")
    assert len(env.requests) == 5
    prompt = env.requests[-1].messages[-1]["content"]
    failed = prompt.split("failed on the way", 1)[1].split("Transcript:", 1)[0]
    assert "run_bash" in failed and "dat.txt" in failed and "exit code" in failed
    assert "wc -l data.txt" not in failed  # only the failure is named as a pitfall
    assert SkillManager(hermes_home / "skills").get(SKILL) is not None


def test_learned_skill_records_model_and_session(env: FakeLLMServer) -> None:
    session = learn(env)
    shown = run("skills", "show", SKILL)
    assert f"learned by: {model_of(env)}" in shown
    assert f"learned in: session {session}" in shown


def test_correction_in_next_message_demotes_learned_skill(env: FakeLLMServer) -> None:
    session = learn(env)
    env.queue(Reply(text="Sorry, let me check again."))
    turn("no, that's wrong: it has 4 lines", session)
    line = next(li for li in run("skills", "stats", SKILL).splitlines() if li.startswith(SKILL))
    assert line.split()[1:4] == ["0", "0", "1"]  # never used, one failure: the turn it came from


def test_review_keeps_skill_in_inbox_until_accepted(env: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LEARN", "review")
    learn(env)
    assert f"1. skill {SKILL}" in run("inbox", "list")
    env.queue(Reply(text="Two."))
    turn("count the lines of a file")
    assert SKILL not in (env.requests[-1].system or "")  # neither in the index nor as a hint
    assert SKILL not in env.requests[-1].messages[-1]["content"]

    assert f"accepted skill {SKILL}" in run("inbox", "accept", "1")
    assert "The inbox is empty." in run("inbox", "list")
    env.queue(Reply(text="Two."))
    turn("count the lines of a file")
    assert SKILL in (env.requests[-1].system or "")


def test_review_keeps_curated_facts_in_inbox_until_accepted(env: FakeLLMServer, hermes_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LEARN", "review")
    env.queue(Reply(text="Noted."))
    session = turn("I always use pytest, never unittest")
    env.queue(Reply(text="Sure."), Reply(text="summary"), Reply(text="USER: The user uses pytest, never unittest"))
    turn("thanks", session)  # a continued session is closed at exit: summary, then the memory curator
    assert "What the user wrote" in str(env.requests[-1].messages)
    assert "1. fact (user): The user uses pytest, never unittest" in run("inbox", "list")
    env.queue(Reply(text="Hi."))
    turn("hello")
    assert "uses pytest" not in (env.requests[-1].system or "")

    assert "accepted: remembered (user): The user uses pytest" in run("inbox", "accept", "1")
    assert "uses pytest" in (hermes_home / "memory" / "USER.md").read_text()
    env.queue(Reply(text="Hi."))
    turn("hello")
    assert "The user uses pytest" in (env.requests[-1].system or "")


def test_off_asks_no_curator(env: FakeLLMServer, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LEARN", "off")
    learn(env)
    assert len(env.requests) == 4
    assert SkillManager(hermes_home / "skills").get(SKILL) is None


def test_stats_compare_uses_with_the_turn_learned_from(env: FakeLLMServer) -> None:
    learn(env)  # 4 model calls, 3 tool calls
    use_skill_turn(env, "lines in data.txt please")  # 2 model calls, 1 tool call
    stats = run("skills", "stats", SKILL).splitlines()
    assert "CALLS/USE" in stats[0] and "LEARNED FROM" in stats[0]
    fields = stats[1].split()
    assert fields[:4] == [SKILL, "1", "1", "0"]  # uses, worked, failed
    assert fields[4] == "1.0"  # tool calls per use
    tokens_per_call = float(fields[5]) / 2
    assert tokens_per_call > 0
    assert fields[6:8] == ["3,", str(int(tokens_per_call * 4))]  # the learned-from turn's calls and tokens


def test_failing_skill_leaves_the_prompt_until_pinned(env: FakeLLMServer) -> None:
    session = learn(env)
    for text in ("count lines in data.txt", "that didn't work, count again", "still broken, try again"):
        session = use_skill_turn(env, text, session)
    env.queue(Reply(text="Sorry."))
    turn("no, that's wrong", session)  # three uses, each corrected, plus the learned-from turn's
    assert "failing" in run("skills", "stats", SKILL)
    env.queue(Reply(text="Two."))
    turn("count the lines of a file")
    assert SKILL not in (env.requests[-1].system or "")
    assert SKILL not in env.requests[-1].messages[-1]["content"]  # no hint either
    assert f"pinned {SKILL}" in run("skills", "pin", SKILL)
    env.queue(Reply(text="Two."))
    turn("count the lines of a file")
    assert SKILL in (env.requests[-1].system or "")


def test_retry_or_undo_of_the_turn_demotes_the_skill_learned_from_it(env: FakeLLMServer) -> None:
    """/retry and /undo both take the turn back first (``ChatSession.retract_last_turn``)."""
    config = Config.load()
    stores = Stores(config)
    try:
        session = ChatSession(config, stores, approver=lambda: lambda name, args: True)
        three_tool_script(env)
        list(session.ensure_loop().run_turn("How many lines are in data.txt?"))
        assert stores.skills.stats(SKILL)[0].failures == 0
        assert session.retract_last_turn() is not None
        assert stores.skills.stats(SKILL)[0].failures == 1
    finally:
        stores.skills.close()
        stores.memory.close()


@pytest.mark.parametrize(("text", "corrects"), [
    ("no, that's wrong", True), ("No.", True), ("That didn't work", True), ("that didn\u2019t work either", True),
    ("> still broken", True), ("Nein, das stimmt nicht", True), ("ça ne marche pas", True), ("no funciona", True),
    ("now count the words", False), ("no problem, next: the README", False), ("Is this wrong?", False),
    ("what went wrong in the build?", False),
])
def test_corrections_are_told_from_new_requests(text: str, corrects: bool) -> None:
    assert is_correction(text) is corrects



def fact_id(text: str) -> str:
    """The id ``hermes-tui facts list`` shows for the fact worded ``text``."""
    return next(line.split()[0] for line in run("facts", "list").splitlines() if text in line)


def test_review_curated_facts_wait_in_the_memory_files(env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """One place: the curator's facts of both scopes wait in the files' waiting sections, and
    ``hermes-tui facts approve`` and ``hermes-tui inbox accept|reject`` settle the same facts."""
    monkeypatch.setenv("HERMES_LEARN", "review")
    env.queue(Reply(text="Noted."))
    session = turn("I use pytest, deploy to staging-7 and indent with tabs")
    env.queue(Reply(text="Sure."), Reply(text="summary"),
              Reply(text="USER: The user uses pytest\nPROJECT: The deploy target is staging-7\n"
                         "USER: The user indents with tabs"))
    turn("thanks", session)
    waiting = [line for line in run("facts", "list").splitlines() if "waiting for approval" in line]
    assert len(waiting) == 3 and "project" in next(li for li in waiting if "staging-7" in li)
    assert not (hermes_home / "memory" / "inbox.json").exists()
    user_md = (hermes_home / "memory" / "USER.md").read_text()
    assert user_md.index("## Waiting for your approval") < user_md.index("The user uses pytest")
    assert "uses pytest" in run("facts", "approve", fact_id("The user uses pytest"))

    listed = run("inbox", "list")
    assert "1. fact (user): The user indents with tabs" in listed
    assert "2. fact (project): The deploy target is staging-7" in listed
    assert "rejected fact: The user indents with tabs" in run("inbox", "reject", "1")
    assert "accepted: remembered (project): The deploy target is staging-7" in run("inbox", "accept", "1")
    assert "The inbox is empty." in run("inbox", "list")
    assert "tabs" in (hermes_home / "memory" / "USER.md").read_text().split("## Earlier versions")[1]

    env.queue(Reply(text="Hi."))
    turn("hello")
    system = env.requests[-1].system or ""
    assert "The user uses pytest" in system and "staging-7" in system and "tabs" not in system


def test_a_former_inbox_file_moves_into_the_waiting_sections_once(env: FakeLLMServer, hermes_home: Path,
                                                                  workspace: Path) -> None:
    """An inbox.json written before facts waited in the memory files is adopted, then deleted."""
    inbox = hermes_home / "memory" / "inbox.json"
    inbox.parent.mkdir(parents=True, exist_ok=True)
    inbox.write_text(json.dumps([
        {"scope": "user", "text": "The user prefers short answers", "workspace": str(workspace),
         "replaces": None, "session_id": 3},
        {"scope": "project", "text": "The service listens on port 8080", "workspace": str(workspace),
         "replaces": None, "session_id": None}]))
    listed = run("inbox", "list")
    assert "1. fact (user): The user prefers short answers" in listed
    assert "2. fact (project): The service listens on port 8080" in listed
    assert not inbox.exists() and not list(inbox.parent.glob("inbox.json*"))
    assert "accepted: remembered (project): The service listens on port 8080" in run("inbox", "accept", "2")
    assert "1. fact (user): The user prefers short answers" in run("inbox", "list")  # moved once, not twice
