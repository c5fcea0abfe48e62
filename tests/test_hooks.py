"""Hooks in Claude Code's format (hermes_tui/agent/hooks/): real scripts, run as real processes,
in turns against the fake server, so what a hook says is checked where it lands: in the next
request the server received."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


def script(folder: Path, name: str, body: str) -> Path:
    """An executable bash script (a hook as users write them)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def settings(path: Path, hooks: dict[str, list[dict[str, Any]]]) -> Path:
    """A settings file in Claude Code's format holding ``hooks``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}, indent=2))
    return path


def command_hook(command: str, matcher: str = "", **extra: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command, **extra}]}


def tool_results(env: FakeLLMServer, index: int) -> list[str]:
    return [str(m["content"]) for m in env.requests[index].messages if m["role"] == "tool"]


def test_pre_tool_use_exit_2_blocks_run_bash_and_its_stderr_reaches_the_model(
        env: FakeLLMServer, hermes_home: Path, workspace: Path, tmp_path: Path) -> None:
    """A Claude Code hook, unchanged: matcher ``Bash``, reads ``tool_input.command`` with jq-free
    python, exits 2 with its reason on stderr. The call never runs; the reason is its result."""
    seen = tmp_path / "seen.json"
    guard = script(tmp_path / "hooks", "no-touch.sh",
                   f"cat > {seen}\necho 'touch is not allowed here, use write_file' >&2\nexit 2\n")
    settings(hermes_home / "settings.json", {"PreToolUse": [command_hook(str(guard), "Bash")]})
    env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made-it"})]), Reply(text="Understood."))

    result = cli("-p", "make a file", "--yes")

    assert result.returncode == 0, result.stderr
    assert not (workspace / "made-it").exists()
    assert tool_results(env, 1) == ["Blocked by the user's PreToolUse hook: touch is not allowed here, use write_file"]
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "Bash"
    assert payload["tool_input"]["command"] == "touch made-it" and payload["hermes_tool_name"] == "run_bash"
    assert payload["cwd"] == str(workspace.resolve()) and payload["session_id"]
    assert {"transcript_path", "tool_use_id", "permission_mode"} <= set(payload)


@on_wire("anthropic")
def test_a_matcher_for_another_tool_lets_the_call_run(env: FakeLLMServer, hermes_home: Path,
                                                      workspace: Path, tmp_path: Path) -> None:
    guard = script(tmp_path / "hooks", "block.sh", "echo blocked >&2\nexit 2\n")
    settings(hermes_home / "settings.json", {"PreToolUse": [command_hook(str(guard), "Write|Edit")]})
    env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made-it"})]), Reply(text="Done."))

    result = cli("-p", "make a file", "--yes")

    assert result.returncode == 0, result.stderr
    assert (workspace / "made-it").exists()


@on_wire("openai")
def test_user_prompt_submit_stdout_reaches_the_request_framed(env: FakeLLMServer, hermes_home: Path,
                                                             tmp_path: Path) -> None:
    hook = script(tmp_path / "hooks", "context.sh",
                  'python3 -c \'import json,sys; print("branch: main; prompt was " + json.load(sys.stdin)["prompt"])\'\n')
    settings(hermes_home / "settings.json", {"UserPromptSubmit": [command_hook(str(hook))]})
    env.queue(Reply(text="Fine."))

    result = cli("-p", "what branch?", "--yes")

    assert result.returncode == 0, result.stderr
    user = [m["content"] for m in env.requests[0].messages if m["role"] == "user"][-1]
    assert user.startswith("what branch?")
    assert "[Output of the user's UserPromptSubmit hook" in user
    assert "branch: main; prompt was what branch?" in user
