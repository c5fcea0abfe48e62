"""Checkpoints with real git and real files: what a snapshot holds and leaves out, that the user's
own repository and git configuration are never used, how a restore finds the files changed by
someone else, and the agent loop's hook (both wires), with git and without."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from hermes_tui.agent.checkpoints import NO_GIT, CheckpointError, CheckpointStore
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.agent.shadow_git import MAX_FILE_BYTES
from hermes_tui.config import Config
from hermes_tui.events import FilesChanged, Notice
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply, ToolCall


def tree_of(store: CheckpointStore, commit: str) -> set[str]:
    out = subprocess.run(["git", "--git-dir", str(store.folder / "git"), "ls-tree", "-r", "--name-only", commit],
                         capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]})
    return set(out.stdout.split())


def fingerprint(folder: Path) -> str:
    """Every file's path, bytes and mtime under ``folder``: any write shows."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(f"{path}:{path.stat().st_mtime_ns}:".encode() + path.read_bytes())
    return digest.hexdigest()


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_a_snapshot_keeps_out_ignored_big_and_secret_files(hermes_home: Path, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_bytes(b"\0")
    (workspace / "run.log").write_text("noise")
    (workspace / "big.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (workspace / "ok.bin").write_bytes(b"x" * MAX_FILE_BYTES)
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (workspace / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (workspace / "link-to-env").symlink_to(workspace / ".env")
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (workspace / ".gitattributes").write_text("* text=auto eol=lf\n")  # must not change the bytes kept
    store = CheckpointStore(hermes_home, workspace)
    checkpoint = store.begin("turn", 1, 1, "look")
    assert tree_of(store, checkpoint.before) == {".gitignore", ".gitattributes", "src/app.py", "ok.bin", "crlf.txt"}

    (workspace / "crlf.txt").write_bytes(b"changed\r\n")
    (workspace / "src" / "app.py").write_bytes(b"x" * (MAX_FILE_BYTES + 1))  # grew too big: left out now
    done = store.finish(checkpoint)
    assert {(c.path, c.status) for c in done.files} == {("crlf.txt", "modified"), ("src/app.py", "deleted")}
    plan = store.plan(done.number)
    store.restore(plan, overwrite=True)
    assert (workspace / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n"  # byte for byte
    assert (workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert (workspace / ".env").read_text() == "OPENAI_API_KEY=sk-secret\n" and (workspace / "big.bin").exists()


def test_the_users_repository_and_git_configuration_are_never_used(hermes_home: Path, workspace: Path,
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    git(workspace, "init", "-q")
    (workspace / "tracked.txt").write_text("v1\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")
    marker = tmp_path / "a-hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    hook.chmod(0o755)
    for name in ("pre-commit", "post-checkout", "post-index-change", "fsmonitor-watchman"):
        (workspace / ".git" / "hooks" / name).write_text(hook.read_text())
        (workspace / ".git" / "hooks" / name).chmod(0o755)
    git(workspace, "config", "core.fsmonitor", str(hook))  # the repository's own configuration
    (Path.home() / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {hook}\n\texcludesFile = {tmp_path / 'ig'}\n")
    (tmp_path / "ig").write_text("*.txt\n")  # the user's global excludes would drop every .txt
    monkeypatch.setenv("GIT_DIR", str(workspace / ".git"))  # a caller's environment pointing at it
    monkeypatch.setenv("GIT_INDEX_FILE", str(workspace / ".git" / "index"))
    before = fingerprint(workspace / ".git")

    store = CheckpointStore(hermes_home, workspace)
    checkpoint = store.begin("turn", 1, 1, "edit")
    (workspace / "tracked.txt").write_text("v2\n")
    done = store.finish(checkpoint)
    store.restore(store.plan(done.number), overwrite=False)

    assert (workspace / "tracked.txt").read_text() == "v1\n"
    assert tree_of(store, checkpoint.before) == {"tracked.txt"}  # .git left out, global excludes not read
    assert fingerprint(workspace / ".git") == before
    assert not marker.exists()
    assert store.folder.is_relative_to(hermes_home)


def test_a_restore_names_what_the_user_changed_between_turns(hermes_home: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a0\n")
    store = CheckpointStore(hermes_home, workspace)
    first = store.begin("turn", 1, 1, "turn one")
    (workspace / "a.txt").write_text("a1 by the agent\n")
    first = store.finish(first)
    (workspace / "a.txt").write_text("a1 edited by the user\n")  # between the turns
    (workspace / "free.txt").write_text("the user's own new file\n")
    second = store.begin("turn", 1, 2, "turn two")
    (workspace / "b.txt").write_text("b by the agent\n")
    store.finish(second)

    plan = store.plan(first.number)  # rewind both turns
    assert [c.number for c in plan.covered] == [first.number, second.number]
    assert {(a.path, a.status) for a in plan.actions} == {("a.txt", "modified"), ("b.txt", "deleted")}
    assert plan.conflicts == {"a.txt"}  # free.txt was never Hermes': not even in the plan
    result = store.restore(plan, overwrite=False)
    assert result.kept == ("a.txt",)
    assert (workspace / "a.txt").read_text() == "a1 edited by the user\n"
    assert not (workspace / "b.txt").exists() and (workspace / "free.txt").exists()

    (workspace / "late.txt").write_text("x")
    with pytest.raises(CheckpointError, match="changed while you were deciding"):
        store.restore(plan, overwrite=True)  # a plan made before the workspace changed again


def changing_turn(server: FakeLLMServer) -> None:
    server.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "w.txt", "content": "written\n"})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "echo shell > s.txt"})]),
        Reply(text="Done."),
    )


@pytest.fixture
def loop_parts(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path):
    config = Config.load()
    memory = MemoryStore(config.db_path)
    yield config, memory, SkillManager(config.skills_dir)
    memory.close()


def test_the_loop_checkpoints_writes_and_shell_commands(loop_parts, fake_llm_env: FakeLLMServer,
                                                        workspace: Path) -> None:
    changing_turn(fake_llm_env)
    loop = AgentLoop(*loop_parts)
    events = list(loop.run_turn("make two files"))
    changed = [e for e in events if isinstance(e, FilesChanged)]
    assert len(changed) == 1
    assert sorted(f["path"] for f in changed[0].files) == ["s.txt", "w.txt"]
    store = CheckpointStore(loop_parts[0].home, workspace)
    checkpoint = store.get(changed[0].checkpoint)
    assert checkpoint is not None and checkpoint.session_id == loop.session_id
    assert checkpoint.message_id == loop.history[0].id and checkpoint.prompt == "make two files"

    fake_llm_env.queue(Reply(tool_calls=[ToolCall("read_file", {"path": "w.txt"})]), Reply(text="Read."))
    events = list(loop.run_turn("just read"))  # a turn without a file-changing call takes no snapshot
    assert not any(isinstance(e, FilesChanged) for e in events)
    assert len(store.list()) == 1


def test_without_git_one_notice_and_no_checkpoints(loop_parts, fake_llm_env: FakeLLMServer, workspace: Path,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every program on PATH but git: run_bash (and its sandbox) work. Inside the workspace, because
    # the sandbox gives commands a private /tmp (a PATH folder under the test's /tmp would vanish).
    bin_dir = workspace / ".bin-without-git"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else ():
            if program.name != "git" and not (bin_dir / program.name).exists():
                (bin_dir / program.name).symlink_to(program)
    monkeypatch.setenv("PATH", str(bin_dir))
    changing_turn(fake_llm_env)
    loop = AgentLoop(*loop_parts)
    events = list(loop.run_turn("make two files"))
    assert [e.message for e in events if isinstance(e, Notice)] == [NO_GIT]
    assert not any(isinstance(e, FilesChanged) for e in events)
    assert (workspace / "s.txt").exists() and (workspace / "w.txt").exists()
    changing_turn(fake_llm_env)
    again = list(loop.run_turn("again"))
    assert not any(isinstance(e, Notice) for e in again)  # said once
    assert not (loop_parts[0].home / "checkpoints").exists()


def test_a_restore_keeps_a_folder_that_holds_someone_elses_files(hermes_home: Path, workspace: Path) -> None:
    (workspace / "thing").write_text("a file\n")
    store = CheckpointStore(hermes_home, workspace)
    checkpoint = store.begin("turn", 1, 1, "make it a folder")
    (workspace / "thing").unlink()
    (workspace / "thing").mkdir()
    (workspace / "thing" / "by-agent.txt").write_text("x")
    done = store.finish(checkpoint)
    (workspace / "thing" / "mine.txt").write_text("the user's")  # never Hermes': not in any plan
    result = store.restore(store.plan(done.number), overwrite=True)
    assert result.kept == ("thing",)
    assert sorted(p.name for p in (workspace / "thing").iterdir()) == ["mine.txt"]


PASTED = "sk-ant-api03-pasted0123456789abcdefXYZ"


def _shadow_objects(store: CheckpointStore) -> bytes:
    """Every object of the shadow repository, reachable or not, as git stores it (uncompressed)."""
    return subprocess.run(["git", "--git-dir", str(store.folder / "git"), "cat-file", "--batch-all-objects",
                           "--batch"], capture_output=True, check=True, env={"PATH": os.environ["PATH"]}).stdout


def test_forgetting_a_session_takes_its_prompts_out_of_the_checkpoints(loop_parts, fake_llm_env: FakeLLMServer,
                                                                       workspace: Path) -> None:
    """A forgotten session's prompt (a pasted key) stayed in checkpoints.jsonl and in the shadow
    repository's commit messages; forgetting takes it out of both, and /undo still restores files."""
    from hermes_tui.memory.forget import forget_session

    config, memory, _skills = loop_parts
    changing_turn(fake_llm_env)
    loop = AgentLoop(*loop_parts)
    changed = [e for e in loop.run_turn(f"use {PASTED} and make two files") if isinstance(e, FilesChanged)]
    store = CheckpointStore(config.home, workspace)
    (workspace / "later.txt").write_text("x")
    store.repo.snapshot(f"before: {PASTED} again")  # a commit message as an older Hermes wrote it
    assert PASTED.encode() in _shadow_objects(store)

    forgotten = forget_session(memory, loop.session_id)
    assert PASTED not in store._records.read_text()
    assert PASTED.encode() not in _shadow_objects(store)
    assert forgotten.checkpoint_records == 1
    checkpoint = store.get(changed[0].checkpoint)
    assert checkpoint is not None and checkpoint.prompt == "(from a forgotten session)"
    result = store.restore(store.plan(checkpoint.number), overwrite=False)
    assert {c.path for c in result.restored} == {"w.txt", "s.txt"}
    assert not (workspace / "w.txt").exists() and (workspace / "later.txt").exists()


def test_a_user_edit_between_two_tool_calls_is_a_conflict_not_the_turns(
        loop_parts, fake_llm_env: FakeLLMServer, workspace: Path) -> None:
    """The user saves two files while the model thinks between its calls: neither is the turn's.
    The file the model wrote and the user then edited is a conflict (kept unless overwrite); the
    user's own file is not touched by a restore at all."""
    from hermes_tui.events import ToolCallFinished

    (workspace / "notes.txt").write_text("mine v1\n")
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "model\n"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "b.txt", "content": "model too\n"})]),
        Reply(text="Done."),
    )
    loop = AgentLoop(*loop_parts)
    events = []
    for event in loop.run_turn("write a and b"):
        events.append(event)
        if isinstance(event, ToolCallFinished) and sum(isinstance(e, ToolCallFinished) for e in events) == 1:
            (workspace / "a.txt").write_text("the user's edit\n")  # between the two calls
            (workspace / "notes.txt").write_text("mine v2\n")
    (changed,) = [e for e in events if isinstance(e, FilesChanged)]
    assert sorted(f["path"] for f in changed.files) == ["a.txt", "b.txt"]

    store = CheckpointStore(loop_parts[0].home, workspace)
    plan = store.plan(changed.checkpoint)
    assert {a.path for a in plan.actions} == {"a.txt", "b.txt"} and plan.conflicts == {"a.txt"}
    result = store.restore(plan, overwrite=False)
    assert result.kept == ("a.txt",) and {c.path for c in result.restored} == {"b.txt"}
    assert (workspace / "a.txt").read_text() == "the user's edit\n" and not (workspace / "b.txt").exists()
    assert (workspace / "notes.txt").read_text() == "mine v2\n"
