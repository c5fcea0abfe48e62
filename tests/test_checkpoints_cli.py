"""Checkpoints through the installed CLI: a headless turn whose write_file and run_bash calls (driven
by the fake server, both wire formats) change real files, then ``hermes-tui checkpoints list|restore``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fixtures import on_wire, wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


def changing_turn(server: FakeLLMServer) -> None:
    """One turn: write_file edits notes.txt, run_bash creates made.txt and deletes old.txt."""
    server.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "rewritten by the agent\n"})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "echo made > made.txt && rm old.txt"})]),
        Reply(text="Done."),
    )


@on_wire("anthropic")
def test_a_headless_turn_is_checkpointed_and_restored(env: FakeLLMServer, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("my notes\n")
    (workspace / "old.txt").write_text("keep me\n")
    changing_turn(env)
    result = cli("-p", "tidy up", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    changed = next(e for e in events if e["type"] == "files_changed")
    assert sorted((f["path"], f["status"]) for f in changed["files"]) == [
        ("made.txt", "added"), ("notes.txt", "modified"), ("old.txt", "deleted")]
    assert [e["type"] for e in events].index("files_changed") < [e["type"] for e in events].index("turn_finished")
    assert not (workspace / "old.txt").exists()

    listing = cli("checkpoints", "list")
    assert listing.returncode == 0, listing.stderr
    assert f"#{changed['checkpoint']}" in listing.stdout and "tidy up" in listing.stdout
    assert "made.txt" in listing.stdout and "3 files" in listing.stdout

    (workspace / "made.txt").write_text("the user edited this afterwards\n")  # a change after the turn
    number = str(changed["checkpoint"])
    refused = cli("checkpoints", "restore", number)  # no terminal to ask on, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert (workspace / "notes.txt").read_text() == "rewritten by the agent\n"

    restored = cli("checkpoints", "restore", number, "--yes")
    assert restored.returncode == 0, restored.stderr
    assert "made.txt" in restored.stdout and "Changed since" in restored.stdout  # the conflict is named
    assert (workspace / "notes.txt").read_text() == "my notes\n"
    assert (workspace / "old.txt").read_text() == "keep me\n"
    assert (workspace / "made.txt").read_text() == "the user edited this afterwards\n"  # kept, not deleted

    overwrite = cli("checkpoints", "restore", number, "--yes", "--overwrite")
    assert overwrite.returncode == 0, overwrite.stderr
    assert not (workspace / "made.txt").exists()


def test_headless_text_output_names_the_changed_files(fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in wire_env(fake_llm, "openai").items():  # the wires are covered above
        monkeypatch.setenv(name, value)
    env = fake_llm
    (workspace / "notes.txt").write_text("my notes\n")
    (workspace / "old.txt").write_text("x\n")
    changing_turn(env)
    result = cli("-p", "tidy up", "--yes")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("changed 3 file(s)"))
    assert "notes.txt (modified)" in line and "checkpoints restore 1" in line


def test_restore_of_an_unknown_checkpoint_is_one_line(hermes_home: Path, workspace: Path) -> None:
    result = cli("checkpoints", "restore", "7", "--yes")
    assert result.returncode == 1
    assert result.stderr.strip() == "hermes: There is no checkpoint 7; 'hermes-tui checkpoints list' shows them."
