"""Undo never destroys the user's work (issue 40, part 3): a restore deletes no file a changed
.gitignore brought into view, snapshots follow a folder the model swapped for a link (and a failed
one is said at once), and changes made by MCP tools get a checkpoint like run_bash's."""

from __future__ import annotations

import os
from pathlib import Path

from hermes_tui.agent.checkpoints import CheckpointStore, TurnCheckpoints, describe_plan
from hermes_tui.events import Notice
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli
from tests.mcp_harness import declare, stdio_entry


def test_a_restore_never_deletes_files_a_changed_gitignore_brought_in(hermes_home: Path, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("data/\nlocal.db\nprivate-notes/\n")
    (workspace / "app.py").write_text("print('v1')\n")
    mine = {"data/cache/model.bin": "downloaded long ago\n", "local.db": "the user's data\n",
            "private-notes/diary.txt": "years of notes\n"}
    for path, text in mine.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text)
    store = CheckpointStore(hermes_home, workspace)
    turn = store.begin("turn", 1, 1, "stop ignoring things")
    (workspace / ".gitignore").write_text("# nothing ignored any more\n")
    (workspace / "app.py").write_text("print('v2')\n")
    (workspace / "made-by-the-turn.txt").write_text("new\n")
    done = store.finish(turn)
    assert {c.path for c in done.files} >= set(mine)  # the snapshot now sees them, as "added"

    plan = store.plan(done.number)
    assert sorted(plan.ignored_then) == sorted(mine)
    assert "Kept: ignored by .gitignore before checkpoint" in "\n".join(describe_plan(plan))
    result = store.restore(plan, overwrite=False)
    for path, text in mine.items():
        assert (workspace / path).read_text() == text, path
    assert set(mine) <= set(result.kept)
    assert not (workspace / "made-by-the-turn.txt").exists()  # what the turn created still goes
    assert (workspace / "app.py").read_text() == "print('v1')\n"
    assert (workspace / ".gitignore").read_text().startswith("data/")


def test_snapshots_follow_a_folder_swapped_for_a_link(hermes_home: Path, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("original\n")
    store = CheckpointStore(hermes_home, workspace)
    turn = store.begin("turn", 1, 1, "switch undo off")
    os.rename(workspace / "src", workspace / ".src_old")
    (workspace / ".src_new").mkdir()
    (workspace / ".src_new" / "main.py").write_text("the model's\n")
    (workspace / "src").symlink_to(".src_new")
    done = store.finish(turn)  # raised "Unable to process path src/main.py" before
    assert {(c.path, c.status) for c in done.files} >= {("src/main.py", "deleted"), ("src", "added")}
    later = store.begin("turn", 1, 2, "a later turn")  # and every later snapshot failed too
    store.finish(later)
    store.restore(store.plan(done.number), overwrite=True)
    assert not (workspace / "src").is_symlink() and (workspace / "src" / "main.py").read_text() == "original\n"


def test_a_failed_snapshot_at_the_end_of_a_turn_is_said_at_once(hermes_home: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    hooks = TurnCheckpoints(hermes_home, workspace)
    hooks.start_turn(1, 1, "break the store")
    assert hooks.before_change() is None
    store = hooks.store
    assert store is not None
    (store.folder / "git" / "index").write_bytes(b"not an index")  # git cannot read the snapshot's index
    (workspace / "a.txt").write_text("changed\n")
    said = hooks.end_turn()  # before: logged only, and the user never knew
    assert isinstance(said, Notice) and "Could not snapshot the workspace" in said.message
    assert "/undo can still restore" in said.message


@on_wire("anthropic")
def test_files_an_mcp_tool_writes_get_a_checkpoint(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                   workspace: Path) -> None:
    declare(hermes_home / "mcp.json", {"fake": stdio_entry(trust=True)})
    target = workspace / "by-mcp.txt"
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("mcp__fake__write", {"path": str(target), "text": "hello"})]),
                       Reply(text="Written."),
                       Reply(tool_calls=[ToolCall("mcp__fake__add", {"a": 1, "b": 2})]), Reply(text="3."))
    assert cli("-p", "write it", "--yes").returncode == 0
    assert target.read_text() == "hello"
    store = CheckpointStore(hermes_home, workspace)
    (checkpoint,) = store.list()
    assert [(c.path, c.status) for c in checkpoint.files] == [("by-mcp.txt", "added")]
    assert cli("-p", "add", "--yes").returncode == 0  # a read-only tool takes no snapshot
    assert len(store.list()) == 1
    store.restore(store.plan(checkpoint.number), overwrite=False)
    assert not target.exists()
