"""The agent loop through the real LiteLLM path against the fake server, in both wire formats."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from hermes_tui.agent.loop import MAX_STEPS, AgentLoop
from hermes_tui.agent.toolkit import CANCELLED
from hermes_tui.config import Config
from hermes_tui.conversation import Status
from hermes_tui.events import (
    ApprovalNeeded,
    Error,
    Notice,
    SkillLearned,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)
from hermes_tui.llm import LLMClient, litellm_model
from tests.engine_harness import SKILL_ANSWER, make_loop, stores, three_tool_script  # noqa: F401 - fixtures among them
from tests.fakes.server import EmptyStream, FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import JumpingClock, assert_history_valid, says_http_500, types


def test_three_tool_task_learns_a_skill(stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    three_tool_script(fake_llm_env)
    loop = make_loop(stores, approver=lambda name, args: True)
    events = list(loop.run_turn("How many lines are in data.txt?"))

    finished = next(e for e in events if isinstance(e, TurnFinished))
    assert finished.stopped_reason == "done" and finished.tool_calls == 3
    assert "3 lines" in finished.text
    assert finished.text.startswith("Let me look.\n\n")  # each call's text kept apart, on this wire
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [r.name for r in results] == ["list_dir", "run_bash", "read_file"]
    assert all(r.ok for r in results), [r.result for r in results]
    assert "3 data.txt" in results[1].result
    assert "gamma" in results[2].result
    learned = [e for e in events if isinstance(e, SkillLearned)]
    assert learned == [SkillLearned("count-file-lines", 1, created=True)]
    assert events.index(learned[0]) > events.index(finished)  # learning happens after the turn

    # What the model saw on the 2nd call: the first tool result, in this wire's own format.
    second = fake_llm_env.requests[1]
    assert any("data.txt" in str(m) for m in second.messages)

    _, memory, skills = stores
    stored = [m.to_llm() for m in memory.get_messages(loop.session_id)]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                                           "assistant"]
    assert stored[0]["content"] == "How many lines are in data.txt?"  # raw text, no skills note
    assert_history_valid(stored)
    skill = skills.get("count-file-lines")
    assert skill is not None and "wc -l" in skill.body

    from skills_ref.validator import validate

    assert validate(skill.path.parent) == []

    fake_llm_env.queue(Reply(text="I counted the lines of data.txt for the user: 3."))
    assert loop.close() == "I counted the lines of data.txt for the user: 3."
    assert memory.get_session(loop.session_id).summary.startswith("I counted")


def test_learned_skill_reaches_a_later_paraphrase(stores, fake_llm_env: FakeLLMServer) -> None:
    _config, _memory, skills = stores
    skills.create("count-file-lines", "Count the lines of a text file in the workspace",
                  ["count", "lines", "file", "wc"], "1. wc -l")
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("use_skill", {"name": "count-file-lines"})]),
        Reply(text="Following the skill."),
    )
    loop = make_loop(stores)
    events = list(loop.run_turn("what's the line count of notes.md?"))
    first = fake_llm_env.requests[0]
    user_text = str(first.messages[-1])
    assert "count-file-lines" in user_text  # "possibly relevant skills" for this turn
    assert "count-file-lines" in (first.system or str(first.messages[0]))  # skills index
    assert any(isinstance(e, ToolCallFinished) and e.ok and "wc -l" in e.result for e in events)
    assert skills.get("count-file-lines").use_count == 1
    assert not any(isinstance(e, SkillLearned) for e in events)  # fewer than 3 tool calls


def test_plain_conversation_creates_no_skill(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="Hello! How can I help?"))
    events = list(make_loop(stores).run_turn("hi"))
    assert types(events)[-1] == "turn_finished"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello! How can I help?"
    assert len(fake_llm_env.requests) == 1  # no curator call
    assert stores[2].list() == []


def test_system_prompt_is_stable_for_the_session(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    list(loop.run_turn("first"))
    stores[2].create("new-skill", "Created mid-session", ["x"], "body")
    list(loop.run_turn("second"))
    first, second = fake_llm_env.requests
    assert first.system == second.system if first.system else first.messages[0] == second.messages[0]
    assert "new-skill" not in str(second.system or second.messages[0])


def test_parallel_tool_calls_run_in_order(stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    (workspace / "a.txt").write_text("A")
    (workspace / "b.txt").write_text("B")
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"}), ToolCall("read_file", {"path": "b.txt"})]),
        Reply(text="A and B."),
    )
    loop = make_loop(stores)
    events = list(loop.run_turn("read both"))
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.result for e in finished] == ["    1\tA", "    1\tB"]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [e.id for e in started] == [e.id for e in finished] and len({e.id for e in started}) == 2
    assert_history_valid([m.to_llm() for m in loop.history])


def test_usage_and_cost(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="hi", usage=(100, 20)))
    loop = make_loop(stores)
    usage = [e for e in loop.run_turn("hi") if isinstance(e, Usage)]
    assert usage and usage[0].prompt_tokens == 100 and usage[0].completion_tokens == 20
    if fake_llm_env.wire_under_test == "anthropic":
        assert usage[0].cost_usd is not None and usage[0].cost_usd > 0  # claude-sonnet-4-5 is priced
    else:
        assert usage[0].cost_usd is None  # "test-model" is not priced: unknown, never 0


def test_rate_limit_then_success(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Fault(429, retry_after=0.2), Reply(text="made it"))
    events = list(make_loop(stores).run_turn("hi"))
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and "429" in notices[0].message and "Retrying in 0.2 s" in notices[0].message
    assert next(e for e in events if isinstance(e, TurnFinished)).text == "made it"
    assert len(fake_llm_env.requests) == 2


def test_server_errors_give_up_after_three_tries(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Fault(500), Fault(503), Fault(500))
    # The backoff (0.5 s, 1 s, with jitter) is counted on a clock that jumps: no real waiting.
    events = list(make_loop(stores, llm=LLMClient(stores[0], clock=JumpingClock())).run_turn("hi"))
    errors = [e for e in events if isinstance(e, Error)]
    assert len(errors) == 1 and "server error" in errors[0].message
    assert len(fake_llm_env.requests) == 3
    assert types(events)[-1] == "turn_finished"


def test_bad_key_names_the_variable(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Fault(401))
    events = list(make_loop(stores).run_turn("hi"))
    error = next(e for e in events if isinstance(e, Error))
    variable = "ANTHROPIC_API_KEY" if fake_llm_env.wire_under_test == "anthropic" else "OPENAI_API_KEY"
    assert variable in error.message and "\n" not in error.message
    assert len(fake_llm_env.requests) == 1  # never retried


def test_cut_stream_keeps_partial_text_and_valid_history(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="This answer will be cut off somewhere in the middle of it.", chunk_size=4,
                             cut_after=6))
    loop = make_loop(stores)
    events = list(loop.run_turn("tell me"))
    error = next(e for e in events if isinstance(e, Error))
    assert "cut off" in error.message
    partial = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert partial and "This answer".startswith(partial[:4])
    stored = [m.to_llm() for m in stores[1].get_messages(loop.session_id)]
    assert stored[-1] == {"role": "assistant", "content": partial}
    assert_history_valid(stored)
    # The conversation goes on after the failure.
    fake_llm_env.queue(Reply(text="again"))
    assert next(e for e in loop.run_turn("again?") if isinstance(e, TurnFinished)).text == "again"


def _run_in_thread(loop: AgentLoop, text: str) -> tuple[list, threading.Thread]:
    events: list = []
    thread = threading.Thread(target=lambda: events.extend(loop.run_turn(text)), daemon=True)
    thread.start()
    return events, thread


def test_cancel_mid_stream(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="word " * 200, chunk_size=5, chunk_delay=0.05))
    loop = make_loop(stores)
    events, thread = _run_in_thread(loop, "talk slowly")
    deadline = time.monotonic() + 20
    while not any(isinstance(e, TextDelta) for e in events) and time.monotonic() < deadline:
        time.sleep(0.01)
    cancelled_at = time.monotonic()
    loop.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert time.monotonic() - cancelled_at < 0.5 + 0.5  # 0.5 s budget, slack for a loaded CI box
    finished = next(e for e in events if isinstance(e, TurnFinished))
    assert finished.stopped_reason == "cancelled"
    assert len(finished.text) < len("word " * 200)
    assert_history_valid([m.to_llm() for m in stores[1].get_messages(loop.session_id)])


def test_cancel_kills_running_bash_and_keeps_history_valid(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "sleep 30"}),
                                         ToolCall("list_dir", {"path": "."})]))
    loop = make_loop(stores, approver=lambda name, args: True)
    events, thread = _run_in_thread(loop, "sleep")
    deadline = time.monotonic() + 20
    while not any(isinstance(e, ToolCallStarted) for e in events) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    loop.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive()
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [r.name for r in results] == ["run_bash", "list_dir"]
    assert "Cancelled" in results[0].result and results[0].seconds < 5
    assert "Cancelled" in results[1].result  # not run, but answered
    stored = [m.to_llm() for m in stores[1].get_messages(loop.session_id)]
    assert_history_valid(stored)
    fake_llm_env.queue(Reply(text="ok then"))
    assert next(e for e in loop.run_turn("next") if isinstance(e, TurnFinished)).stopped_reason == "done"


def test_step_cap(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.responder = lambda request: Reply(tool_calls=[ToolCall("list_skills", {})])
    events = list(make_loop(stores).run_turn("loop forever"))
    finished = next(e for e in events if isinstance(e, TurnFinished))
    assert finished.stopped_reason == "max_steps"
    assert any(isinstance(e, Notice) and f"{MAX_STEPS} steps" in e.message for e in events)
    # 25 model calls for the turn; no curator after a capped turn.
    assert len(fake_llm_env.requests) == MAX_STEPS


def test_approval_denied_is_a_result(stores, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
                       Reply(text="I could not write it."))
    asked: list[str] = []
    loop = make_loop(stores, approver=lambda name, args: asked.append(name) or False)
    events = list(loop.run_turn("write x"))
    assert asked == ["write_file"]
    assert any(isinstance(e, ApprovalNeeded) for e in events)
    result = next(e for e in events if isinstance(e, ToolCallFinished))
    assert not result.ok and "denied" in result.result
    assert not (workspace / "x.txt").exists()
    # Stored with how it ended, so a resumed view and an export say so without reading its text.
    memory = stores[1]
    assert [(m.role, m.status) for m in memory.get_messages(loop.session_id)][2] == ("tool", Status.DENIED)


def test_a_call_the_user_cancels_is_stored_cancelled(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
                       Reply(text="unused"))
    loop = make_loop(stores, approver=lambda name, args: loop.cancel() or CANCELLED)  # the user stops the turn
    events = list(loop.run_turn("write x"))
    assert next(e for e in events if isinstance(e, TurnFinished)).stopped_reason == "cancelled"
    stored = {m.role: m.status for m in stores[1].get_messages(loop.session_id)}
    assert stored == {"user": Status.CANCELLED, "assistant": Status.OK, "tool": Status.CANCELLED}


def test_resume_continues_with_history(stores, fake_llm_env: FakeLLMServer) -> None:
    first = make_loop(stores)
    list(first.run_turn("remember the word pelican"))
    resumed = make_loop(stores, session_id=first.session_id)
    list(resumed.run_turn("what was the word?"))
    last = fake_llm_env.requests[-1]
    texts = [str(m) for m in last.messages]
    assert any("pelican" in t for t in texts)
    with pytest.raises(ValueError, match="no session 9999"):
        make_loop(stores, session_id=9999)


def test_learn_now_and_unparsable_proposal(stores, fake_llm_env: FakeLLMServer, caplog) -> None:
    loop = make_loop(stores)
    assert isinstance(next(iter(loop.learn_now())), Notice)
    fake_llm_env.queue(Reply(text="done"), Reply(text="Sure! Here is a skill: deploy stuff"))
    list(loop.run_turn("do it"))
    assert isinstance(next(iter(loop.learn_now())), Notice)
    assert "unparsable" in caplog.text
    assert stores[2].list() == []


def test_existing_name_refines(stores, fake_llm_env: FakeLLMServer) -> None:
    stores[2].create("count-file-lines", "Old description", ["count"], "old body")
    loop = make_loop(stores)
    fake_llm_env.queue(Reply(text="done"), Reply(text=f"```\n{SKILL_ANSWER}\n```"))
    list(loop.run_turn("count"))
    learned = next(iter(loop.learn_now()))
    assert learned == SkillLearned("count-file-lines", 2, created=False)
    assert "wc -l" in stores[2].get("count-file-lines").body


def test_summary_failure_is_logged_not_raised(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    assert loop.close() is None  # empty session: no call at all
    assert fake_llm_env.requests == []
    list(loop.run_turn("hi"))
    fake_llm_env.queue(Fault(401))
    assert loop.close() is None
    assert stores[1].get_session(loop.session_id).summary is None


def test_model_strings_per_provider(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = {
        ("anthropic", "claude-sonnet-5"): "anthropic/claude-sonnet-5",
        ("openai", "gpt-5.5"): "openai/gpt-5.5",
        ("openrouter", "anthropic/claude-sonnet-5"): "openrouter/anthropic/claude-sonnet-5",
        ("ollama", "llama3.2"): "ollama_chat/llama3.2",
        ("openai-compatible", "qwen3"): "openai/qwen3",
        ("openai", "gemini/gemini-2.5-pro"): "gemini/gemini-2.5-pro",
    }
    monkeypatch.setenv("HERMES_API_BASE", "http://127.0.0.1:9/v1")
    for (provider, model), expected in cases.items():
        config = Config.load().with_overrides(provider=provider, model=model)
        assert litellm_model(config) == expected


def test_core_modules_do_not_import_litellm_and_its_log_lines_never_reach_the_terminal(hermes_home: Path) -> None:
    """One new interpreter for both (each ``import litellm`` costs seconds): the core imports
    without litellm; once it is loaded, litellm's own loggers print nothing."""
    code = (
        "import sys\n"
        "import hermes_tui.cli, hermes_tui.headless, hermes_tui.agent.loop, hermes_tui.learning.curator, hermes_tui.llm\n"
        "import hermes_tui.memory.store, hermes_tui.skills.manager, hermes_tui.agent.tools\n"
        "assert 'litellm' not in sys.modules, 'litellm imported eagerly'\n"
        "import hermes_tui.llm as llm\n"
        "import gc\n"
        "llm.warm().join()\n"
        "assert 'litellm' in sys.modules and gc.isenabled(), 'the import left the cyclic collector off'\n"
        "import logging\n"
        "for name in ('LiteLLM', 'LiteLLM Router', 'LiteLLM Proxy'):\n"
        "    logging.getLogger(name).warning('litellm says %s', name)\n"
        "    logging.getLogger(name).error('litellm fails %s', name)\n"
        "import litellm._logging as L\n"
        "L.verbose_logger.warning('direct')\n"
        "print('done')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n" and result.stderr == ""  # nothing printed on import, warm-up or by litellm


def test_malformed_event_ends_turn_with_error(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="Some text before a broken event arrives.", chunk_size=5, malformed_at=4))
    loop = make_loop(stores)
    events = list(loop.run_turn("hi"))
    assert len([e for e in events if isinstance(e, Error)]) == 1
    assert next(e for e in events if isinstance(e, TurnFinished)).stopped_reason == "error"
    assert_history_valid([m.to_llm() for m in stores[1].get_messages(loop.session_id)])


def test_many_identical_chunks_are_not_cut(stores, fake_llm_env: FakeLLMServer) -> None:
    rule = "-" * 4 * 300  # 300 identical 4-character chunks: a long markdown rule
    fake_llm_env.queue(Reply(text=rule, chunk_size=4))
    events = list(make_loop(stores).run_turn("draw a line"))
    assert not any(isinstance(e, Error) for e in events)
    assert next(e for e in events if isinstance(e, TurnFinished)).text == rule


def test_close_respects_its_timeout_with_retries(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    list(loop.run_turn("hi"))
    fake_llm_env.queue(Fault(429, retry_after=5), Reply(text="too late"))
    started = time.monotonic()
    assert loop.close(timeout=1.0) is None  # the 5 s Retry-After would overrun the deadline
    assert time.monotonic() - started < 3
    assert stores[1].get_session(loop.session_id).summary is None


# ------------------------------------------------------------------ honest errors (issue 8, §4)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_empty_200_stream_says_what_happened_once(stores, fake_llm_env: FakeLLMServer) -> None:
    """llama.cpp answers a template or context error with HTTP 200 and no data: retrying the same
    request meets the same error, so it is not retried; the line names the causes and the window."""
    fake_llm_env.queue(EmptyStream(), Reply(text="never asked for"))
    events = list(make_loop(stores).run_turn("hi"))
    errors = [e for e in events if isinstance(e, Error)]
    assert len(errors) == 1 and not [e for e in events if isinstance(e, Notice)]
    message = errors[0].message
    assert "closed the response without sending any data" in message and "server's log" in message
    assert "template" in message and "HERMES_CONTEXT_TOKENS" in message and "\n" not in message
    assert next(e for e in events if isinstance(e, TurnFinished)).stopped_reason == "error"
    assert len(fake_llm_env.requests) == 1


def test_local_server_overflow_compacts_and_retries_once(stores, fake_llm_env: FakeLLMServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt over a local server's window: an empty 200 stream (llama.cpp), or its 400 (Anthropic's
    wire here), to a request near the window leads to a compaction and one retry."""
    config, memory, skills = stores
    loop = AgentLoop(replace(config, context_tokens=6_000), memory, skills)
    for n in range(6):  # ~2,400 tokens of conversation + ~2,000 fixed: below the compaction threshold (4,800)
        fake_llm_env.queue(Reply(text=f"answer {n} " + "word " * 300))
        list(loop.run_turn(f"question {n}"))
    sent = len(json.dumps(fake_llm_env.requests[-1].body))
    fake_llm_env.max_request_bytes = sent  # the next request, one turn longer, does not fit
    fake_llm_env.queue(Reply(text="- summary: six questions were answered"), Reply(text="fits now"))
    events = list(loop.run_turn("question 6"))
    assert not [e for e in events if isinstance(e, Error)], [e for e in events if isinstance(e, Error)]
    assert any(isinstance(e, Notice) and "Compacted" in e.message for e in events)
    assert next(e for e in events if isinstance(e, TurnFinished)).text == "fits now"
    assert len(fake_llm_env.refused) == 1


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "no-such-host.invalid"])
def test_unreachable_server_is_named(stores, fake_llm_env: FakeLLMServer, host: str) -> None:
    config, memory, skills = stores
    base = "http://" + host.format(port=_closed_port())
    if fake_llm_env.wire_under_test == "openai":
        base += "/v1"
    config = replace(config, api_base=base)
    loop = AgentLoop(config, memory, skills, llm=LLMClient(config, clock=JumpingClock()))  # backoff: no real wait
    events = list(loop.run_turn("hi"))
    error = next(e for e in events if isinstance(e, Error))
    assert error.message.startswith(f"Cannot reach {base} (")
    assert "HERMES_API_BASE" in error.message and "HERMES_PROVIDER" in error.message
    assert not says_http_500(error.message) and error.retryable
    assert len([e for e in events if isinstance(e, Notice) and "Retrying" in e.message]) == 2


def test_cut_stream_says_after_how_much_text(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Reply(text="abcdefghijklmnopqrstuvwxyz", chunk_size=4, cut_after=5))
    events = list(make_loop(stores).run_turn("hi"))
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    error = next(e for e in events if isinstance(e, Error))
    assert shown and f"cut off after {len(shown)} characters" in error.message
    assert "connection closed mid-stream" in error.message and not says_http_500(error.message)
    assert len(fake_llm_env.requests) == 1  # text was shown: never repeated


def test_413_reads_cleanly(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.responder = lambda request: Fault(413)
    error = next(e for e in make_loop(stores).run_turn("hi") if isinstance(e, Error))
    assert "too large (413)" in error.message and "fake 413 error" in error.message
    assert "APIError" not in error.message and "Exception" not in error.message and "{" not in error.message


def test_413_compacts_and_retries_once(stores, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(Fault(413))
    events = list(make_loop(stores).run_turn("hi"))
    assert not [e for e in events if isinstance(e, Error)]
    assert next(e for e in events if isinstance(e, TurnFinished)).stopped_reason == "done"


# ------------------------------------------------------------------ prompt caching (issue 8, §5)


def test_anthropic_requests_mark_system_tools_and_latest_messages(stores, fake_llm_env: FakeLLMServer,
                                                                  workspace: Path) -> None:
    (workspace / "a.txt").write_text("A")
    fake_llm_env.queue(Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "a.txt"}, id="toolu_01abc")]),
                       Reply(text="It says A.", usage=(40, 5), cache_read=2000, cache_write=60))
    loop = make_loop(stores)
    events = list(loop.run_turn("what is in a.txt?"))
    first, second = fake_llm_env.requests
    if fake_llm_env.wire_under_test == "openai":  # OpenAI caches by itself: nothing is marked
        assert first.cache_marks == [] and second.cache_marks == []
        assert "cache_control" not in json.dumps(first.body)
    else:
        last_tool = loop.tools.names[-1]
        assert first.cache_marks == [("tool", last_tool), ("system", loop.system_prompt),
                                     ("user", first.messages[-1]["content"])]
        # mid-turn, the tool result is marked too, so the next step reads what this one wrote
        assert second.cache_marks[:3] == first.cache_marks
        assert second.cache_marks[3] == ("tool", "toolu_01abc")
    usage = [e for e in events if isinstance(e, Usage)][-1]
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (2000, 60)
    assert usage.prompt_tokens == 2100
    assert usage.to_dict()["cache_read_tokens"] == 2000


def test_cost_prices_cache_reads_and_writes(stores, fake_llm_env: FakeLLMServer) -> None:
    config, memory, skills = stores
    openai = fake_llm_env.wire_under_test == "openai"
    loop = AgentLoop(replace(config, model="gpt-4o") if openai else config, memory, skills)  # priced models
    fake_llm_env.queue(Reply(text="a", usage=(1000, 0)), Reply(text="b", usage=(100, 0), cache_read=900),
                       Reply(text="c", usage=(100, 0), cache_write=900))
    plain, read, written = (next(e for e in list(loop.run_turn(t)) if isinstance(e, Usage)) for t in ("1", "2", "3"))
    assert plain.prompt_tokens == read.prompt_tokens == written.prompt_tokens == 1000
    assert plain.cost_usd and read.cost_usd and written.cost_usd
    assert read.cost_usd < plain.cost_usd * 0.6  # cache hits cost a fraction
    if openai:
        assert written.cost_usd == pytest.approx(plain.cost_usd)  # OpenAI does not bill writes
    else:
        assert written.cost_usd > plain.cost_usd  # Anthropic bills writes at a premium


def test_openrouter_anthropic_models_are_marked(stores, fake_llm: FakeLLMServer) -> None:
    config, memory, skills = stores
    for model, marked in (("anthropic/claude-sonnet-4.5", True), ("openai/gpt-4o", False)):
        fake_llm.reset()
        openrouter = replace(config, provider="openrouter", model=model, api_base=fake_llm.openai_base,
                             api_keys={"OPENROUTER_API_KEY": "sk-or-test"})
        loop = AgentLoop(openrouter, memory, skills)
        list(loop.run_turn("hi"))
        marks = fake_llm.requests[0].cache_marks
        # OpenRouter's OpenAI-style tools take no mark: the system block's breakpoint covers them
        # (Anthropic caches in the order tools, system, messages).
        assert marks == ([("system", loop.system_prompt), ("user", fake_llm.requests[0].messages[-1]["content"])]
                         if marked else [])


def test_a_cancel_that_lands_before_the_turns_thread_runs_is_kept(stores, fake_llm_env: FakeLLMServer) -> None:
    """A browser that leaves at once, Esc right after Enter: the turn is cancelled before its
    thread ran a line of it. That cancel must stop the turn, not be wiped when it starts, and no
    request is sent for it: a provider would bill it, a one-at-a-time local server would work on
    it, and under load it could reach the server after the next turn's own and take its answer."""
    fake_llm_env.queue(Reply(text="next"))
    loop = make_loop(stores)
    turn = loop.run_turn("talk slowly")  # what start_turn hands the thread
    loop.cancel()
    events = list(turn)
    assert next(e for e in events if isinstance(e, TurnFinished)).stopped_reason == "cancelled"
    user = next(m for m in stores[1].get_messages(loop.session_id) if m.role == "user")
    assert user.content == "talk slowly" and user.status is Status.CANCELLED  # kept, marked
    again = list(loop.run_turn("are you there?"))
    assert next(e for e in again if isinstance(e, TurnFinished)).text == "next"
    assert len(fake_llm_env.requests) == 1  # the next turn's only
