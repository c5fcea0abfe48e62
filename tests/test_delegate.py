"""delegate: sub-agents run at once (their requests overlap at the fake server), their answers come
back as tool results, their sessions are stored under the parent's, and a cancel stops them all."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui import warm
from hermes_tui.agent.approvals import ONCE, SESSION, ApprovalPolicy, PendingCall
from hermes_tui.agent.delegate import ANSWER_CAP, capped, default_names
from hermes_tui.agent.loop import MAX_STEPS, AgentLoop
from hermes_tui.config import Config
from hermes_tui.conversation import Status
from hermes_tui.events import ApprovalNeeded, Event, FilesChanged, Subagent, ToolCallFinished, TurnFinished, Usage
from hermes_tui.memory.forget import forget_session
from hermes_tui.memory.store import MemoryStore
from tests.engine_harness import make_loop, stores  # noqa: F401 - fixture
from tests.fakes.server import FakeLLMServer, Fault, RecordedRequest, Reply, ToolCall
from tests.helpers import HERMES_TUI, assert_history_valid, cli, run_cli, wait_until

TASK_A = "Read a.txt and report its first word."
TASK_B = "Read b.txt and report its first word."
DELEGATING = Reply(tool_calls=[ToolCall("delegate", {"task": TASK_A}), ToolCall("delegate", {"task": TASK_B})])


def first_user(request: RecordedRequest) -> str:
    return next(str(m["content"]) for m in request.messages if m["role"] == "user")


def results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


def sub_task(request: RecordedRequest) -> str | None:
    """The task a sub-agent's request works on (None: the parent's request)."""
    task = first_user(request)
    return next((t for t in (TASK_A, TASK_B) if task.startswith(t)), None)


def parent_replies(request: RecordedRequest) -> Reply:
    """The parent: delegate both tasks, then answer with what came back."""
    return Reply(text="Both said: " + " | ".join(results(request))) if results(request) else DELEGATING


def children(loop: AgentLoop) -> list[int]:
    return sorted(s.id for s in loop.memory.list_sessions() if s.parent_id == loop.session_id)


def run_in_thread(loop: AgentLoop, text: str) -> tuple[threading.Thread, list[Event]]:
    events: list[Event] = []
    thread = threading.Thread(target=lambda: events.extend(loop.run_turn(text)), daemon=True)
    thread.start()
    return thread, events


def test_two_delegate_calls_run_at_once_and_their_answers_come_back(
        stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    both = threading.Barrier(2, timeout=30)  # each sub-agent's first request waits for the other's
    overlapped: list[str] = []

    def respond(request: RecordedRequest) -> Reply | Fault:
        task = sub_task(request)
        if task is None:
            return parent_replies(request)
        if not results(request):
            try:
                both.wait()
            except threading.BrokenBarrierError:  # the other never came while this one waited
                return Fault(500)
            overlapped.append(task)
            return Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt" if task == TASK_A else "b.txt"})])
        return Reply(text=f"first word: {results(request)[-1].split()[-1]}")

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    events = list(loop.run_turn("Find the first words of a.txt and b.txt."))

    assert sorted(overlapped) == sorted([TASK_A, TASK_B])  # both requests were at the server at once
    finished = [e for e in events if isinstance(e, TurnFinished)]
    assert finished[-1].stopped_reason == "done"
    delegated = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "delegate"]
    assert [(e.ok, e.result) for e in delegated] == [(True, "first word: alpha"), (True, "first word: beta")]
    final = fake_llm_env.requests[-1]
    assert sub_task(final) is None and results(final) == ["first word: alpha", "first word: beta"]

    # Each sub-agent's messages are a session of its own, linked to the parent's.
    subs = children(loop)
    assert len(subs) == 2
    for session_id in subs:
        stored = loop.memory.get_messages(session_id)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[0].content in (TASK_A, TASK_B)  # the task as given; the sub-agent's note is only sent
    # Searchable as any session; forgetting the parent forgets them; -c continues the parent.
    assert {h.session_id for h in loop.memory.recall("alpha")} & set(subs)
    assert loop.memory.last_session(str(workspace)).id == loop.session_id
    # The parent's events name each sub-agent by the call and its session.
    seen = {(e.call_id, e.session_id) for e in events if isinstance(e, Subagent)}
    assert {s for _, s in seen} == set(subs)
    assert {c for c, _ in seen} == {e.id for e in delegated}
    # A sub-agent's first request: the task only (not the parent's conversation), read-only tools.
    first = next(r for r in fake_llm_env.requests if sub_task(r) == TASK_A)
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert set(first.tools) == default_names()
    # Their tokens count in the parent's turn: one usage per model call, as the parent's own (a /cost
    # of calls counts them; 12 + 7 tokens per fake call, two calls each), without their window's share.
    spent = [e for e in events if isinstance(e, Usage) and e.context_tokens is None]
    assert [(u.prompt_tokens, u.completion_tokens, u.context_limit) for u in spent] == [(12, 7, None)] * 4

    gone = forget_session(loop.memory, loop.session_id)
    assert gone.messages == 5 + 4 + 4  # the parent's (task, calls, two results, answer) and each sub-agent's
    assert all(loop.memory.get_session(s) is None for s in subs)


def test_a_sub_agent_gets_the_instruction_files_and_skills_index_not_the_conversation(
        stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always answer in haiku (project rule).\n")
    stores[2].create("csv-report", "Summarise a CSV file as a table", ["csv"], "1. Read it.\n2. Tabulate.")
    said = "My private plan: papaya margin 37%. Now find the first word of a.txt."

    def respond(request: RecordedRequest) -> Reply:
        if sub_task(request) is not None:
            return Reply(text="alpha")
        return Reply(text="ok") if results(request) else Reply(
            text="Delegating.", tool_calls=[ToolCall("delegate", {"task": TASK_A})])

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    list(loop.run_turn(said))
    (sub,) = [r for r in fake_llm_env.requests if sub_task(r) == TASK_A]
    system = str(sub.messages[0]["content"])
    assert sub.messages[0]["role"] == "system"
    assert "Always answer in haiku (project rule)." in system and "csv-report" in system
    assert "papaya" not in json.dumps(sub.messages) and "Delegating." not in json.dumps(sub.messages)


def test_hermes_delegates_from_the_home_env_limits_how_many_run_at_once(
        stores, fake_llm_env: FakeLLMServer, hermes_home: Path) -> None:
    (hermes_home / ".env").write_text("HERMES_DELEGATES=1\n")
    order: list[str] = []

    def respond(request: RecordedRequest) -> Reply:
        task = sub_task(request)
        if task is None:
            return parent_replies(request)
        order.append(task)
        return Reply(tool_calls=[ToolCall("list_dir", {})]) if not results(request) else Reply(text="done")

    fake_llm_env.responder = respond
    config = Config.load()
    assert config.delegates == 1
    loop = AgentLoop(config, stores[1], stores[2])
    list(loop.run_turn("go"))
    assert order in ([TASK_A, TASK_A, TASK_B, TASK_B], [TASK_B, TASK_B, TASK_A, TASK_A])  # one after the other


@pytest.fixture
def warm_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The warm helper on, as shipped, in a runtime folder of this test (short: a socket path)."""
    runtime = Path(tempfile.mkdtemp(prefix="hd-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HERMES_HELPER", "on")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield
    warm.stop()
    shutil.rmtree(runtime, ignore_errors=True)


def test_headless_json_emits_each_sub_agents_events_with_its_id(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path, warm_helper: None) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    both = threading.Barrier(2, timeout=120)  # through the warm helper too, both requests at once

    def respond(request: RecordedRequest) -> Reply | Fault:
        task = sub_task(request)
        if task is None:
            return parent_replies(request)
        if not results(request):
            try:
                both.wait()
            except threading.BrokenBarrierError:
                return Fault(500)
            return Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt" if task == TASK_A else "b.txt"})])
        return Reply(text=f"first word: {results(request)[-1].split()[-1]}")

    fake_llm_env.responder = respond
    result = run_cli("-p", "Find the first words.", "--json", "--yes", timeout=600)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    subs = [line for line in lines if line["type"] == "subagent"]
    calls = {line["id"] for line in lines if line["type"] == "tool_call_started" and line["name"] == "delegate"}
    assert len(calls) == 2 and {line["call_id"] for line in subs} == calls
    assert len({line["session_id"] for line in subs}) == 2
    inner = {(line["call_id"], line["event"]["type"]) for line in subs}
    assert {(c, t) for c in calls for t in ("turn_started", "tool_call_started", "turn_finished")} <= inner
    finished = [line for line in lines if line["type"] == "tool_call_finished" and line["name"] == "delegate"]
    assert sorted(line["result"] for line in finished) == ["first word: alpha", "first word: beta"]
    assert lines[-1]["type"] == "turn_finished" and "alpha" in lines[-1]["text"]
    assert warm.status() is not None  # the helper made the model calls, the sub-agents' included


def test_headless_prints_a_sub_agents_calls_on_stderr(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                      workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")

    def respond(request: RecordedRequest) -> Reply:
        if sub_task(request) is None:
            return Reply(text="Done.") if results(request) else Reply(
                tool_calls=[ToolCall("delegate", {"task": TASK_A})])
        return Reply(text="alpha") if results(request) else Reply(
            tool_calls=[ToolCall("read_file", {"path": "a.txt"})])

    fake_llm_env.responder = respond
    result = cli("-p", "first word of a.txt?", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n"
    assert re.search(r"^  ↳ sub-agent \d+ → read_file \{\"path\": \"a.txt\"\}$", result.stderr, re.M), result.stderr


def test_kill_9_mid_delegation_then_c_continues_the_parent(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    release = threading.Event()
    arrived: list[str] = []

    def respond(request: RecordedRequest) -> Reply:
        task = sub_task(request)
        if task is not None:
            arrived.append(task)
            release.wait(120)  # both sub-agents wait at the server when the process is killed
            return Reply(text="too late")
        resumed = any(m["role"] == "user" and m["content"] == "go on" for m in request.messages)
        return Reply(text="Carried on.") if resumed else parent_replies(request)

    fake_llm_env.responder = respond
    killed = subprocess.Popen([HERMES_TUI, "-p", "Find the first words.", "--yes"], env=dict(os.environ),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: len(arrived) == 2)
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
    finally:
        release.set()
    sent = len(fake_llm_env.requests)

    result = run_cli("-c", "-p", "go on", "--yes", timeout=300)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Carried on.\n"
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    try:
        (parent,) = [s for s in memory.list_sessions() if s.parent_id is None]
        assert f"continuing session {parent.id}" in result.stderr  # the parent, not a sub-agent's
        assert len(memory.subagent_sessions(parent.id)) == 2
    finally:
        memory.close()
    resumed = next(r for r in fake_llm_env.requests[sent:] if sub_task(r) is None and r.body.get("stream"))
    assert_history_valid(resumed.messages)  # both delegate calls have a result: the process stopped them
    assert sum("interrupted" in str(m["content"]) for m in resumed.messages if m["role"] == "tool") == 2


def test_headless_denies_a_sub_agents_write_naming_it(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                      workspace: Path) -> None:
    task = "Write hello to out.txt."

    def respond(request: RecordedRequest) -> Reply:
        if first_user(request).startswith(task):
            return Reply(text="not written") if results(request) else Reply(
                tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "hello"})])
        return Reply(text="Done.") if results(request) else Reply(
            tool_calls=[ToolCall("delegate", {"task": task, "tools": ["write_file"]})])

    fake_llm_env.responder = respond
    result = cli("-p", "delegate a write")  # no --yes: nobody can answer, the write is denied
    assert result.returncode == 0, result.stderr
    assert not (workspace / "out.txt").exists()
    assert f"write_file (sub-agent 1: {task}) denied: rerun with --yes" in result.stderr


def test_cancel_stops_every_sub_agent(stores, fake_llm_env: FakeLLMServer) -> None:
    release = threading.Event()
    arrived: list[str] = []

    def respond(request: RecordedRequest) -> Reply:
        task = sub_task(request)
        if task is None:
            return parent_replies(request)
        arrived.append(task)
        release.wait(60)  # held until the test ends: only a cancel ends the sub-agents before
        return Reply(text="too late")

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    try:
        thread, events = run_in_thread(loop, "Find the first words.")
        assert wait_until(lambda: len(arrived) == 2)
        loop.cancel()
        thread.join(30)
        assert not thread.is_alive()
    finally:
        release.set()
    assert [e for e in events if isinstance(e, TurnFinished)][-1].stopped_reason == "cancelled"
    delegated = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "delegate"]
    assert len(delegated) == 2 and not any(e.ok for e in delegated)
    assert all("Cancelled by the user" in e.result for e in delegated)
    for session_id in children(loop):
        task = loop.memory.get_messages(session_id)[0]
        assert task.status == Status.CANCELLED
    tools = [m for m in loop.memory.get_messages(loop.session_id) if m.role == "tool"]
    assert [m.status for m in tools] == [Status.CANCELLED, Status.CANCELLED]


def test_a_sub_agents_failure_is_the_calls_result(stores, fake_llm_env: FakeLLMServer) -> None:
    def respond(request: RecordedRequest) -> Reply | Fault:
        if sub_task(request) == TASK_A:
            return Fault(400)  # not retried: the sub-agent's turn ends in an error
        if sub_task(request) == TASK_B:
            return Reply(tool_calls=[ToolCall("delegate", {"task": "deeper"})]) if not results(request) else \
                Reply(text="B done")
        return parent_replies(request)

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    events = list(loop.run_turn("go"))
    assert [e for e in events if isinstance(e, TurnFinished)][-1].stopped_reason == "done"
    a, b = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "delegate"]
    assert not a.ok and a.result.startswith("The sub-agent failed:")
    assert b.ok and b.result == "B done"
    # A sub-agent is not offered delegate, and a call to it anyway is refused.
    sub_b = [r for r in fake_llm_env.requests if sub_task(r) == TASK_B]
    assert "delegate" not in sub_b[0].tools
    assert "Unknown tool 'delegate'" in results(sub_b[1])[0]


def test_a_sub_agent_at_its_step_cap_is_the_calls_failure(stores, fake_llm_env: FakeLLMServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if sub_task(request) is not None:  # never answers: lists the folder again and again
            return Reply(text="Still looking.", tool_calls=[ToolCall("list_dir", {})])
        return Reply(text="ok") if results(request) else Reply(tool_calls=[ToolCall("delegate", {"task": TASK_A})])

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    events = list(loop.run_turn("go"))
    (call,) = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "delegate"]
    assert not call.ok and call.result.startswith(f"The sub-agent stopped after {MAX_STEPS} steps")
    assert call.result.endswith("What it said last:\nStill looking.")  # its last words, not every step's
    assert [e for e in events if isinstance(e, TurnFinished)][-1].stopped_reason == "done"
    assert len([r for r in fake_llm_env.requests if sub_task(r)]) == MAX_STEPS


def test_a_sub_agent_that_ends_without_an_answer_says_so(stores, fake_llm_env: FakeLLMServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if sub_task(request) is not None:  # narrates, lists, then ends with nothing to say
            return Reply(text="") if results(request) else Reply(text="Let me look.", tool_calls=[ToolCall("list_dir", {})])
        return Reply(text="ok") if results(request) else Reply(tool_calls=[ToolCall("delegate", {"task": TASK_A})])

    fake_llm_env.responder = respond
    loop = make_loop(stores)
    events = list(loop.run_turn("go"))
    (call,) = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "delegate"]
    assert call.result.startswith("The sub-agent finished without an answer (sub-agent session")
    assert call.result.endswith("What it said last:\nLet me look.")  # not passed off as its answer


def test_named_write_tool_is_approved_by_the_parents_policy_labelled(
        stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    asked: list[PendingCall] = []

    def ask(call: PendingCall) -> str:
        asked.append(call)
        return ONCE

    task = "Write hello to out.txt."

    def respond(request: RecordedRequest) -> Reply:
        if first_user(request).startswith(task):
            if not results(request):
                return Reply(tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "hello"})])
            return Reply(text="written")
        if results(request):
            return Reply(text="ok")
        return Reply(tool_calls=[ToolCall("delegate", {"task": task, "tools": ["write_file"]})])

    fake_llm_env.responder = respond
    loop = make_loop(stores, approver=ApprovalPolicy(ask))
    events = list(loop.run_turn("delegate a write"))
    assert (workspace / "out.txt").read_text() == "hello"
    # The parent's turn took the checkpoint: /undo of it puts back what its sub-agent wrote.
    (changed,) = [e for e in events if isinstance(e, FilesChanged)]
    assert changed.files == [{"path": "out.txt", "status": "added"}]
    assert [(c.name, c.agent) for c in asked] == [("write_file", f"sub-agent 1: {task}")]
    question = [e for e in events if isinstance(e, ApprovalNeeded)]
    assert [(q.name, q.agent) for q in question] == [("write_file", f"sub-agent 1: {task}")]
    sub = next(r for r in fake_llm_env.requests if first_user(r).startswith(task))
    assert set(sub.tools) == default_names() | {"write_file"}


def test_allow_for_the_session_holds_for_every_sub_agent_until_the_session_ends(
        stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    asked: list[PendingCall] = []

    def ask(call: PendingCall) -> str:
        asked.append(call)
        return SESSION

    def respond(request: RecordedRequest) -> Reply:
        task = sub_task(request)
        if task is not None:
            name = "a.out" if task == TASK_A else "b.out"
            return Reply(text="written") if results(request) else Reply(
                tool_calls=[ToolCall("write_file", {"path": name, "content": task})])
        return Reply(text="ok") if request.messages[-1]["role"] == "tool" else Reply(tool_calls=[
            ToolCall("delegate", {"task": t, "tools": ["write_file"]}) for t in (TASK_A, TASK_B)])

    fake_llm_env.responder = respond
    policy = ApprovalPolicy(ask)
    loop = make_loop(stores, approver=policy)
    list(loop.run_turn("write both"))
    assert (workspace / "a.out").exists() and (workspace / "b.out").exists()
    assert len(asked) == 1 and asked[0].agent.startswith("sub-agent ")  # one answer, for both sub-agents
    policy.reset()  # a new session: nobody's "for the session" answer holds any more
    list(loop.run_turn("write both again"))
    assert len(asked) == 2


@pytest.mark.parametrize("named, plan, refused", [
    (["run_bash"], True, "plan mode"),  # plan mode: read-only tools only
    (["nonexistent"], False, "nonexistent"),
    (["delegate"], False, "delegate"),
])
def test_tools_a_sub_agent_cannot_have_are_refused_before_it_starts(
        stores, fake_llm_env: FakeLLMServer, named: list[str], plan: bool, refused: str) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("delegate", {"task": "t", "tools": named})]), Reply(text="ok"))
    loop = make_loop(stores)
    loop.plan = plan
    events = list(loop.run_turn("go"))
    (call,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not call.ok and "not available to a sub-agent" in call.result and refused in call.result
    assert len(fake_llm_env.requests) == 2 and not children(loop)  # no sub-agent ran


def test_a_long_answer_is_capped_and_says_so() -> None:
    assert capped("x" * 10) == "x" * 10
    cut = capped("y" * (ANSWER_CAP + 5))
    assert cut.startswith("y" * ANSWER_CAP) and f"{ANSWER_CAP:,} of {ANSWER_CAP + 5:,} characters" in cut


@pytest.mark.parametrize("named, said", [
    ("run_bash", "'tools' must be a list of strings"),  # not a list
    (["read_file", 7], "'tools' must be a list of strings"),
    # Junk in bulk: each name once, at most ten named, a huge one cut; the result stays short.
    (["x" * 50_000] * 2 + [f"nope{i}" for i in range(5_000)] + ["read_file"] * 3,
     f"{'x' * 60}…, nope0, nope1, nope2, nope3, nope4, nope5, nope6, nope7, nope8 (and 4,991 more)."),
], ids=["not-a-list", "not-strings", "bulk"])
def test_a_junk_tools_list_is_refused_in_one_short_result(
        stores, fake_llm_env: FakeLLMServer, named: object, said: str) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("delegate", {"task": "t", "tools": named})]), Reply(text="ok"))
    loop = make_loop(stores)
    events = list(loop.run_turn("go"))
    (call,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not call.ok and said in call.result and len(call.result) < 2_000
    assert len(fake_llm_env.requests) == 2 and not children(loop)  # no sub-agent ran
    assert [e for e in events if isinstance(e, TurnFinished)][-1].stopped_reason == "done"


def test_one_step_starts_at_most_per_step_sub_agents(stores, fake_llm_env: FakeLLMServer) -> None:
    """A hostile model asking for hundreds of sub-agents in one step gets PER_STEP of them; each
    call past that is answered at once, saying why, and starts nothing (no thread, no request)."""
    from hermes_tui.agent.delegate import PER_STEP

    many = Reply(tool_calls=[ToolCall("delegate", {"task": TASK_A}) for _ in range(PER_STEP + 5)])
    sub_requests: list[str] = []
    answered: list[str] = []

    def respond(request: RecordedRequest) -> Reply:
        if sub_task(request) is None:
            if results(request):  # the parent's step after the calls (the curator's request has none)
                answered[:] = results(request)
                return Reply(text="enough")
            return many
        sub_requests.append(first_user(request))
        return Reply(text="alpha")

    fake_llm_env.responder = respond
    loop = AgentLoop(Config.load(), stores[1], stores[2])
    list(loop.run_turn("go"))

    assert len(sub_requests) == PER_STEP
    assert len(answered) == PER_STEP + 5
    assert answered.count("alpha") == PER_STEP
    assert answered[PER_STEP:] == [f"Not run: one step may start at most {PER_STEP} sub-agents; "
                                   "ask for the rest in the next step."] * 5
