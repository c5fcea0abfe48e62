"""The one approval policy (agent/approvals.py) that the TUI, headless and the web share: what a
surface's answer allows afterwards, per tool as its record declares, and what is never asked."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.agent import permissions
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
    assert PROGRAM in policy.answers("run_bash", {"command": "grep -q"})
    assert PROGRAM not in policy.answers("run_bash", {"command": "grep; rm -rf ~"})
    assert policy.decide(call("write_file", path="a.md", content="x")) is True
    assert policy.decide(call("run_bash", command="grep -q")) is True
    assert policy.decide(call("edit_file", path="a.md", old="x", new="y")) is True
    fresh = ApprovalPolicy(lambda _call: DENY, LastingRules(tmp_path / "home", workspace))  # a later session
    assert fresh.settled("write_file", {"path": "a.md", "content": "other"})
    assert fresh.settled("edit_file", {"path": "a.md", "old": "y", "new": "z"})
    assert fresh.settled("run_bash", {"command": "grep tests"})
    assert not fresh.settled("write_file", {"path": "b.md", "content": "x"})
    assert not fresh.settled("edit_file", {"path": "b.md", "old": "y", "new": "z"})  # a rule of another file
    assert not fresh.settled("run_bash", {"command": "grep; curl x"})


def test_a_new_session_forgets_the_session_rules_and_unasked_tools_are_never_asked() -> None:
    policy, asked = scripted(SESSION, DENY)
    policy.decide(call("run_bash", command="ls"))
    policy.reset()
    assert "denied" in str(policy.decide(call("run_bash", command="ls")))
    web = ApprovalPolicy(lambda _call: DENY, unasked=lambda name: name.startswith("mcp__"))
    assert web.settled("mcp__server__tool", {}) and not web.settled("run_bash", {"command": "ls"})
    assert len(asked) == 2


# Commands that ran with no prompt under a lasting rule for their program (issue #40, Trust III).
DISGUISED = [
    'git -c core.fsmonitor="touch pwned" status', "git --config-env=core.fsmonitor=X status",
    'git ls-remote --upload-pack="touch pwned" .', "git st", "git diff --ext-diff", "git show --textconv HEAD",
    "git log --output=notes.txt", "git diff --out=notes.txt", "git --exec-path=. status", "git submodule foreach id",
    'sed -n "1e touch pwned" a.txt', "sed -i s/a/b/ a.txt",
    "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=id a.txt", "tar -xf x.tar --to-command=id",
    "make SHELL=/bin/sh .SHELLFLAGS=-c all", "make", "pytest --doctest-glob=SKILL.md", "pytest -q",
    "rg --pre=./x foo", "rg --pre ./x foo",
]
# Programs the dialog offered "Any X · always here" for, though they run what they are told.
NEVER_OFFERED = ["python3.12 -V", "pypy3.10 -V", "pnpm test", "yarn test", "poetry run x", "conda run x",
                 "taskset 1 id", "prlimit id", "setpriv id", "hyperfine id", "tmux new id", "expect -c x",
                 "cmake -P x.cmake", "zip -T -TT id x.zip x", "rsync -e id a b", "sqlite3 db .shell",
                 "man -P id ls", "vim -c q", "npm test", "cargo build", "sed -n 1p a.txt", "tar -tf x.tar",
                 "make lint", "pytest", "find . -exec id"]


def test_a_program_rule_never_allows_a_command_that_can_run_code(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lasting = LastingRules(tmp_path / "home", workspace)
    for program in ("git", "sed", "tar", "make", "pytest", "rg", "grep"):  # as a rules file of an older version holds them
        lasting.add(permissions.PROGRAM, program)
    policy = ApprovalPolicy(lambda _call: DENY, lasting)
    for command in DISGUISED:
        assert not policy.settled("run_bash", {"command": command}), command
        assert PROGRAM not in policy.answers("run_bash", {"command": command}), command
    for command in ("grep -rn foo src", "rg -n foo src", "rg --pretty foo"):
        assert policy.settled("run_bash", {"command": command}), command  # what the list allows still runs


def test_the_dialog_offers_a_program_rule_only_for_the_declared_list(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = ApprovalPolicy(lambda _call: DENY, LastingRules(tmp_path / "home", workspace))
    for command in NEVER_OFFERED:
        offered = policy.answers("run_bash", {"command": command})
        assert PROGRAM not in offered and ALWAYS in offered, command  # the exact command may still be kept
    offered = [command.split()[0] for command in ("grep -rn x .", "git status", "ls -la")
               if PROGRAM in policy.answers("run_bash", {"command": command})]
    assert offered == ["grep", "ls"] and set(offered) <= set(permissions.PROGRAMS)
