"""``hermes-tui -p`` against the fake server: in this process (``cli``) where the turn is the point, as
the installed entry point in a subprocess (``run_cli``) where the process is: its signals, its end, a
pipe for a terminal, and one whole task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from hermes_tui.agent.loop import MAX_STEPS
from hermes_tui.headless import EXIT_MAX_STEPS, session_line
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.engine_harness import three_tool_script
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import HERMES_TUI, assert_history_valid, cli, run_cli


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


@on_wire("anthropic")  # the CLI above the wire; the same task runs on both in test_engine
# (test_three_tool_task_learns_a_skill)
def test_three_tool_task_end_to_end(env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    three_tool_script(env)
    result = run_cli("-p", "How many lines are in data.txt?", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Let me look.\n\n**data.txt** has 3 lines: alpha, beta, gamma.\n"  # calls apart
    assert "→ list_dir" in result.stderr and "✓ run_bash" in result.stderr
    assert "learned skill count-file-lines (v1)" in result.stderr
    assert len(env.requests) == 5  # 4 turn calls + curator, all before exit; no summary for one shot

    memory = MemoryStore(hermes_home / "memory.sqlite3")
    session = memory.list_sessions()[0]
    assert session.source == "headless" and session.message_count == 8
    assert session.summary is None
    assert_history_valid([m.to_llm() for m in memory.get_messages(session.id)])
    skill = SkillManager(hermes_home / "skills").get("count-file-lines")
    assert skill is not None

    validator = Path(HERMES_TUI).with_name("agentskills")  # skills-ref's CLI
    check = subprocess.run([str(validator), "validate", str(skill.path.parent)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


@on_wire("openai")  # the events and --session are above the wire; a resumed history is sent on both in
# test_engine (test_resume_continues_with_history)
def test_json_events_and_session_continue(env: FakeLLMServer, hermes_home: Path) -> None:
    env.queue(Reply(text="First answer."))
    result = cli("-p", "remember kiwi", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "turn_started"
    assert [e["text"] for e in events if e["type"] == "text_delta"]
    assert {"type": "turn_finished", "text": "First answer.", "tool_calls": 0, "stopped_reason": "done"} in events
    session_id = events[0]["session_id"]

    env.queue(Reply(text="It was kiwi."), Reply(text="summary two"))
    again = cli("-p", "-", "--session", str(session_id), stdin="which fruit?")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "It was kiwi."
    sent = [str(m) for m in env.requests[1].messages]
    assert any("remember kiwi" in m for m in sent) and any("which fruit?" in m for m in sent)
    # The continued session is summarized at exit, as a whole; then the memory curator reads what
    # the user wrote (and keeps nothing from the fake's plain answer).
    assert len(env.requests) == 4 and "What the user wrote" in str(env.requests[3].messages)
    assert MemoryStore(hermes_home / "memory.sqlite3").get_session(session_id).summary == "summary two"


@on_wire("openai")
def test_headless_denies_shell_without_yes(env: FakeLLMServer, workspace: Path) -> None:
    env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made-it"})]), Reply(text="Denied."))
    result = cli("-p", "make a file")
    assert result.returncode == 0, result.stderr
    assert "rerun with --yes" in result.stderr
    assert not (workspace / "made-it").exists()
    tool_result = [m for m in env.requests[1].messages if "--yes" in str(m)]
    assert tool_result, "the model is told to ask for --yes"


def test_provider_error_is_one_line_exit_1(env: FakeLLMServer) -> None:
    env.queue(Fault(401))
    result = cli("-p", "hi")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hermes: ")]
    assert len(lines) == 1 and "API_KEY" in lines[0] and lines == result.stderr.splitlines()


def test_cut_stream_exit_1(env: FakeLLMServer, hermes_home: Path) -> None:
    env.queue(Reply(text="partial partial partial partial", chunk_size=4, cut_after=4))
    result = cli("-p", "hi")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "cut off" in line]  # one clean line
    assert line.startswith("hermes: The answer from ") and "characters of text: the connection closed" in line
    assert "MidStreamFallbackError" not in result.stderr and "Original exception" not in result.stderr
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    session = memory.list_sessions()[0]
    assert_history_valid([m.to_llm() for m in memory.get_messages(session.id)])


@on_wire("anthropic")
def test_ctrl_c_exits_130(env: FakeLLMServer, hermes_home: Path) -> None:
    env.queue(Reply(text="slow " * 400, chunk_size=5, chunk_delay=0.05))
    proc = subprocess.Popen([HERMES_TUI, "-p", "talk"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=dict(os.environ))
    assert proc.stdout is not None
    proc.stdout.read(5)  # streaming has begun
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 130
    assert "Traceback" not in err
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    messages = memory.get_messages(memory.list_sessions()[0].id)
    assert messages[0].content == "talk"


@pytest.mark.parametrize(
    ("args", "env_vars", "fragment"),
    [
        (["-p", "hi"], {"ANTHROPIC_API_KEY": "", "HERMES_PROVIDER": "anthropic"}, "ANTHROPIC_API_KEY is not set"),
        (["-p", "hi"], {"HERMES_PROVIDER": "gpt"}, "HERMES_PROVIDER"),
        (["-p", "   "], {}, "prompt is empty"),
        (["-p", "hi", "--session", "424242"], {}, "no session 424242"),
        (["-p", "hi", "--provider", "nope"], {}, "HERMES_PROVIDER"),
    ],
)
def test_bad_input_is_one_readable_line(env: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
                                        args: list[str], env_vars: dict[str, str], fragment: str) -> None:
    for name, value in env_vars.items():
        monkeypatch.setenv(name, value)
    result = cli(*args)
    assert result.returncode == 1
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("hermes-tui ")



@on_wire("openai")
def test_step_cap_exits_with_its_own_code(env: FakeLLMServer) -> None:
    env.responder = lambda request: Reply(text="Looking.", tool_calls=[ToolCall("list_dir", {"path": "."})])
    result = cli("-p", "loop forever")
    assert result.returncode == EXIT_MAX_STEPS == 3
    assert f"Stopped after {MAX_STEPS} steps" in result.stderr
    session_id = MemoryStore(Path(os.environ["HERMES_HOME"]) / "memory.sqlite3").list_sessions()[0].id
    assert result.stderr.splitlines()[-1] == session_line(session_id)  # the id to continue with
    assert result.stdout.count("Looking.\n\n") == MAX_STEPS - 1  # every call's text is its own paragraph


@on_wire("anthropic")
def test_headless_skips_interpreter_teardown(env: FakeLLMServer, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Tearing down litellm's modules took over a second after the last event (bench/headless_turn.py):
    # a headless run ends with os._exit once its output is flushed, so atexit handlers never run.
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "teardown-ran"
    (site / "sitecustomize.py").write_text(
        f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').close())\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    env.queue(Reply(text="Quick answer."))
    result = run_cli("-p", "hi")
    assert result.returncode == 0 and result.stdout == "Quick answer.\n"
    assert not marker.exists()
    assert run_cli("--version").returncode == 0 and marker.exists()  # the marker works


@on_wire("anthropic")
def test_an_old_store_says_it_is_upgrading_before_the_turn(env: FakeLLMServer, hermes_home: Path) -> None:
    """Bringing a stored file to this schema reindexes every message (minutes at a million):
    headless mode says so on stderr first, then answers as usual."""
    from tests.memory_harness import write_version_1_store

    hermes_home.mkdir(parents=True, exist_ok=True)
    write_version_1_store(hermes_home / "memory.sqlite3")
    env.queue(Reply(text="Fine."))
    result = cli("-p", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fine.\n"
    (line,) = [line for line in result.stderr.splitlines() if "Upgrading the memory store" in line]
    assert line.startswith("hermes: Upgrading") and "reindexing 1 message," in line
    result = cli("-p", "again")  # upgraded once: not again
    assert "Upgrading" not in result.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    (["--json"], "--json only work with -p"),
    (["--yes", "--session", "3"], "--yes only work with -p"),
    (["--json", "--yes"], "--json and --yes only work with -p"),
    ([], "the full-screen app needs a terminal"),
])
def test_no_full_screen_app_without_p_or_terminal(hermes_home: Path, args: list[str], fragment: str) -> None:
    """On a pipe the full-screen app once spun unseen for minutes: headless-only flags need -p,
    and without a terminal the app refuses at once, in one line (stdin and stdout are pipes here)."""
    result = run_cli(*args, timeout=30)
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("hermes: ") and fragment in line
    assert not (hermes_home / "memory.sqlite3").exists()  # nothing was started


@on_wire("openai")  # above the wire; the calls' texts are kept apart on both in test_engine's three-tool task
def test_json_turn_text_keeps_model_calls_apart_and_denial_follows_its_call(env: FakeLLMServer) -> None:
    env.queue(Reply(text="Let me look first.", tool_calls=[ToolCall("run_bash", {"command": "touch x"})]),
              Reply(text="There are none."))
    result = cli("-p", "count", "--json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    (finished,) = [e for e in events if e["type"] == "turn_finished"]
    assert finished["text"] == "Let me look first.\n\nThere are none."  # not "first.There"
    kinds = [e["type"] for e in events]
    denial = next(i for i, e in enumerate(events) if e["type"] == "notice" and "denied" in e["message"])
    assert kinds.index("tool_call_started") < denial < kinds.index("tool_call_finished")


@on_wire("anthropic")  # the lines are drawn above the wire; the events above ran on both
def test_text_output_shows_the_denial_after_its_call(env: FakeLLMServer) -> None:
    env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch y"})]), Reply(text="ok"))
    lines = cli("-p", "count").stderr.splitlines()
    started = next(i for i, line in enumerate(lines) if line.startswith("→ run_bash"))
    denied = next(i for i, line in enumerate(lines) if "denied: rerun with --yes" in line)
    assert started < denied


def test_help_lists_the_subcommands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for usage in ("hermes-tui doctor", "hermes-tui skills import DIR", "hermes-tui context"):
        assert usage in result.stdout


def test_every_subcommand_the_help_lists_runs_through_one_table() -> None:
    """``hermes-tui NAME`` is dispatched through ``cli.COMMANDS``, not a function name built from
    NAME: every command --help lists has its entry, and nothing else does."""
    from hermes_tui import cli as hermes_cli

    listed = {usage.split()[0] for usage, _ in hermes_cli.SUBCOMMANDS}
    assert listed and set(hermes_cli.COMMANDS) == listed, listed.symmetric_difference(hermes_cli.COMMANDS)


def test_lone_surrogates_from_the_model_are_stored_and_the_session_resumes(env: FakeLLMServer, hermes_home: Path,
                                                                         workspace: Path) -> None:
    """JSON's "\\ud800" decodes to a str that UTF-8 cannot hold: in a tool call's arguments and
    in the answer it once ended the turn in the store. It is kept as U+FFFD, and the session goes on."""
    env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "echo 'a \ud800 b' > out.txt"})]),
              Reply(text="Wrote it \udfff."), Reply(text="Still here."))

    first = cli("-p", "write out.txt", "--yes")
    again = cli("-c", "-p", "and now?")

    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        (session,) = memory.list_sessions()
        stored = memory.get_messages(session.id)
    assert stored[1].calls[0].arguments["command"] == "echo 'a \ufffd b' > out.txt"
    assert stored[3].content == "Wrote it \ufffd."
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
