"""Background jobs (``run_bash`` with ``background: true``, ``job_output``, ``job_stop``): real
processes in the real sandbox (and without it), read through the fake server on both wires.

Nothing here waits on time: a job and the test meet at files in the workspace (a foreground
``run_bash`` waits for a job's marker file), or on the job's own ``done`` event.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from hermes_tui.agent.sandbox import Sandbox, unavailable_reason
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import HERMES_TUI, run_cli, wait_until

NO_BWRAP = unavailable_reason()
MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(NO_BWRAP is not None, reason=f"no sandbox here: {NO_BWRAP}")),
         "off"]


def _marker() -> str:
    return f"{3000 + random.random():.6f}"  # a unique sleep duration names our processes


def _with_marker(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line holds ``marker``: sleeps, shells, bwrap, reapers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in argv and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(name: str) -> str:
    """A foreground command that returns once the workspace file ``name`` exists."""
    return f"while [ ! -e {name} ]; do sleep 0.05; done"


def _registry(tmp_path: Path, mode: str) -> ToolRegistry:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "skills"),
                        sandbox=Sandbox(enabled=mode == "bwrap"))


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


@on_wire("openai", "anthropic")
def test_job_output_in_two_steps_then_stop_and_nothing_outlives_the_run(env: FakeLLMServer, workspace: Path) -> None:
    marker = _marker()
    job = f"echo line-one; touch step1; {_wait_for('go')}; echo line-two; touch step2; sleep {marker}"
    env.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": job, "background": True})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": _wait_for("step1")})]),
        Reply(tool_calls=[ToolCall("job_output", {"id": 1})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": f"touch go; {_wait_for('step2')}"})]),
        Reply(tool_calls=[ToolCall("job_output", {"id": 1})]),
        Reply(tool_calls=[ToolCall("job_stop", {"id": 1})]),
        Reply(tool_calls=[ToolCall("job_output", {"id": 7})]),
        # a second job is left running: the end of the run stops it
        Reply(tool_calls=[ToolCall("run_bash", {"command": f"sleep {marker}2", "background": True})]),
        Reply(text="Done."),
    )
    result = run_cli("-p", "start the server and watch it", "--yes")
    assert result.returncode == 0, result.stderr
    assert "stopped 1 background job(s) at the end of the run" in result.stderr
    results = [m["content"] for m in env.requests[-1].messages if m["role"] == "tool"]
    started, _, first, _, second, stopped, unknown, started2 = results
    assert started.startswith("started background job 1;")
    assert first.startswith("job 1 still running\n") and "line-one" in first and "line-two" not in first
    assert second.startswith("job 1 still running\n") and "line-two" in second and "line-one" not in second
    assert stopped.startswith("job 1 stopped (exit code")
    assert unknown.endswith("job_output: there is no job 7 in this session (jobs: 1)")
    assert "\n" not in unknown
    assert started2.startswith("started background job 2;")
    assert _with_marker(marker) == []  # the run has exited: none of its jobs' processes is left


@pytest.mark.parametrize("mode", MODES)
def test_stop_sends_sigterm_first_then_sigkill(tmp_path: Path, mode: str) -> None:
    registry = _registry(tmp_path, mode)
    ws = registry.workspace
    marker = _marker()
    polite = f"trap 'echo bye > got-term; exit 3' TERM; touch ready1; sleep {marker} & wait"
    stubborn = f"trap '' TERM; touch ready2; sleep {marker}1"
    assert registry.execute("run_bash", {"command": polite, "background": True}).ok
    assert registry.execute("run_bash", {"command": stubborn, "background": True}).ok
    assert registry.execute("run_bash", {"command": f"{_wait_for('ready1')}; {_wait_for('ready2')}"}).ok
    first = registry.execute("job_stop", {"id": 1})
    assert first.ok and first.output.startswith("job 1 stopped (exit code"), first.output
    assert (ws / "got-term").read_text() == "bye\n"  # it was asked, and could clean up
    jobs = registry.jobs
    stubborn_job = jobs.get(2)
    assert stubborn_job is not None
    jobs.stop(stubborn_job, grace=0.2)  # SIGTERM is ignored: SIGKILL after the grace
    assert not stubborn_job.running
    assert _with_marker(marker) == []
    again = registry.execute("job_stop", {"id": 2})
    assert again.ok and "had already stopped" in again.output


@pytest.mark.parametrize("mode", MODES)
def test_overflowing_output_keeps_head_and_tail_and_says_what_was_skipped(tmp_path: Path, mode: str) -> None:
    registry = _registry(tmp_path, mode)
    assert registry.execute("run_bash", {"command": "seq 1 100000", "background": True}).ok
    job = registry.jobs.get(1)
    assert job is not None and job.done.wait(60)
    result = registry.execute("job_output", {"id": 1})
    assert result.ok
    assert result.output.startswith("job 1 exited (exit code 0)\n1\n2\n3\n")
    assert result.output.rstrip().endswith("\n99999\n100000")
    assert "bytes cut ...]" in result.output and len(result.output) < 25_000
    assert registry.execute("job_output", {"id": 1}).output == "job 1 exited (exit code 0); no new output"


def test_job_tools_refuse_unknown_ids_in_one_line(tmp_path: Path) -> None:
    registry = _registry(tmp_path, "off")
    for tool in ("job_output", "job_stop"):
        result = registry.execute(tool, {"id": 3})
        assert not result.ok and result.output == f"{tool}: there is no job 3 in this session (jobs: none)"


def test_a_session_that_ended_starts_no_job(tmp_path: Path) -> None:
    registry = _registry(tmp_path, "off")
    registry.jobs.stop_all()
    result = registry.execute("run_bash", {"command": "true", "background": True})
    assert not result.ok and result.output == "run_bash: the session is ending: no new background job"


@pytest.mark.parametrize("mode", MODES)
def test_a_job_outlives_the_thread_that_started_it(tmp_path: Path, mode: str) -> None:
    """A tool runs on its turn's thread, which ends with the turn; bwrap's --die-with-parent follows
    the thread that started it, so the job must not be started from there."""
    registry = _registry(tmp_path, mode)
    starter = threading.Thread(target=registry.execute, args=(
        "run_bash", {"command": f"touch ready; {_wait_for('go')}; echo still-here", "background": True}))
    starter.start()
    starter.join()
    assert registry.execute("run_bash", {"command": _wait_for("ready")}).ok
    (registry.workspace / "go").touch()
    job = registry.jobs.get(1)
    assert job is not None and job.done.wait(60)
    assert registry.execute("job_output", {"id": 1}).output == "job 1 exited (exit code 0)\nstill-here\n"


@on_wire("openai")  # above the wire
def test_no_job_survives_hermes_killed(env: FakeLLMServer, workspace: Path) -> None:
    marker = _marker()
    env.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": f"touch started; sleep {marker}", "background": True})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": _wait_for("never")})]),
    )
    hermes = subprocess.Popen([HERMES_TUI, "-p", "start it", "--yes"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        assert wait_until(lambda: (workspace / "started").exists() and len(env.requests) == 2)
        assert _with_marker(marker)
    finally:
        hermes.send_signal(signal.SIGKILL)
        hermes.wait()
    assert wait_until(lambda: _with_marker(marker) == [])  # the kernel ends them once Hermes is gone

