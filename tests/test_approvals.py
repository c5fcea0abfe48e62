"""The one approval policy (agent/approvals.py) that the TUI, headless and the web share: what a
surface's answer allows afterwards, per tool as its record declares, and what is never asked."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.agent.approvals import (
    ALWAYS,
    CANCEL,
    DENY,
    EXACT,
    ONCE,
    PROGRAM,
    SESSION,
    ApprovalPolicy,
    PendingCall,
)
from hermes_tui.agent.permissions import LastingRules
from hermes_tui.agent.toolkit import CANCELLED


def scripted(*answers: str) -> tuple[ApprovalPolicy, list[PendingCall]]:
    asked: list[PendingCall] = []
    queue = list(answers)

    def ask(call: PendingCall) -> str:
        asked.append(call)
        return queue.pop(0)

    return ApprovalPolicy(ask), asked


def call(name: str, **arguments: str) -> PendingCall:
    return PendingCall("call_1", name, dict(arguments))


def test_once_exact_and_session_allow_what_they_say() -> None:
    policy, asked = scripted(ONCE, EXACT, SESSION)
    assert policy.decide(call("run_bash", command="ls")) is True
    assert policy.decide(call("run_bash", command="ls")) is True  # once: asked again, "this command" now
    assert policy.decide(call("run_bash", command="ls")) is True  # not asked: the exact call is allowed
    assert policy.decide(call("run_bash", command="pwd")) is True  # asked: all shell now
    assert policy.decide(call("run_bash", command="whoami")) is True
    assert [c.arguments["command"] for c in asked] == ["ls", "ls", "pwd"]


def test_deny_and_cancel_are_results_and_anything_else_denies() -> None:
    policy, _ = scripted(DENY, CANCEL, "maybe", ALWAYS)
    assert "denied" in str(policy.decide(call("run_bash", command="ls")))
    assert policy.decide(call("run_bash", command="ls")) == CANCELLED
    assert "denied" in str(policy.decide(call("run_bash", command="ls")))  # not an answer
    assert "denied" in str(policy.decide(call("run_bash", command="ls")))  # no lasting rules: not offered
    assert not policy.allowed and not policy.allowed_calls


def test_lasting_answers_are_keyed_per_tool_by_its_record(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    answers = [ALWAYS, PROGRAM, ALWAYS]
    policy = ApprovalPolicy(lambda _call: answers.pop(0), LastingRules(tmp_path / "home", workspace))
    assert policy.answers("write_file", {"path": "a.md", "content": "x"}) == (ONCE, EXACT, SESSION, ALWAYS, DENY)
    assert PROGRAM in policy.answers("run_bash", {"command": "pytest -q"})
    assert PROGRAM not in policy.answers("run_bash", {"command": "pytest; rm -rf ~"})
    assert policy.decide(call("write_file", path="a.md", content="x")) is True
    assert policy.decide(call("run_bash", command="pytest -q")) is True
    assert policy.decide(call("edit_file", path="a.md", old="x", new="y")) is True
    fresh = ApprovalPolicy(lambda _call: DENY, LastingRules(tmp_path / "home", workspace))  # a later session
    assert fresh.settled("write_file", {"path": "a.md", "content": "other"})
    assert fresh.settled("edit_file", {"path": "a.md", "old": "y", "new": "z"})
    assert fresh.settled("run_bash", {"command": "pytest tests"})
    assert not fresh.settled("write_file", {"path": "b.md", "content": "x"})
    assert not fresh.settled("edit_file", {"path": "b.md", "old": "y", "new": "z"})  # a rule of another file
    assert not fresh.settled("run_bash", {"command": "pytest; curl x"})


def test_a_new_session_forgets_the_session_rules_and_unasked_tools_are_never_asked() -> None:
    policy, asked = scripted(SESSION, DENY)
    policy.decide(call("run_bash", command="ls"))
    policy.reset()
    assert "denied" in str(policy.decide(call("run_bash", command="ls")))
    web = ApprovalPolicy(lambda _call: DENY, unasked=lambda name: name.startswith("mcp__"))
    assert web.settled("mcp__server__tool", {}) and not web.settled("run_bash", {"command": "ls"})
    assert len(asked) == 2
