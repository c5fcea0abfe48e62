"""What a write's approval shows and keys: the real target, never a file the tools refuse (#40).

A symlinked folder sent a write approved as "docs/ci.yml" to ``.github/workflows/ci.yml``, and the
dialog read files outside the workspace (HERMES_HOME included) to show their diff. Real files,
real symlinks, the real dialog text and the real policy.
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes_tui.agent.approvals import ALWAYS, EXACT, ApprovalPolicy, PendingCall
from hermes_tui.agent.permissions import LastingRules
from hermes_tui.tui.approval_screen import describe

PRIVATE = "PRIVATE LINE: must never be shown"


def test_the_dialog_never_reads_a_file_the_tools_refuse(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "ws" / "hermes-home"
    home.mkdir(parents=True)
    (home / "USER.md").write_text(PRIVATE)  # HERMES_HOME inside the workspace
    (tmp_path / "outside.txt").write_text(PRIVATE)
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    (workspace / "out").symlink_to(tmp_path)
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "link.txt", "out/outside.txt",
                 "hermes-home/USER.md"):
        shown = describe("write_file", {"path": path, "content": "new\n"}, "ws", str(workspace), home=home)
        assert PRIVATE not in shown.body.plain, path
        assert shown.summary.startswith("(refused") and "\n" not in shown.summary, (path, shown.summary)
        assert shown.body.plain == "new\n"
    outside = describe("write_file", {"path": "../outside.txt", "content": "x"}, "ws", str(workspace), home=home)
    assert "outside the workspace" in outside.summary
    (workspace / "inside.txt").write_text("old\n")  # what the tools may read is still compared
    assert "-old" in describe("write_file", {"path": "inside.txt", "content": "new\n"}, "ws", str(workspace),
                              home=home).body.plain


def test_a_write_through_a_symlinked_folder_names_and_keys_its_real_target(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".github" / "workflows").mkdir(parents=True)
    (workspace / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (workspace / "docs").symlink_to(Path(".github") / "workflows")
    arguments = {"path": "docs/ci.yml", "content": "on: pull_request\n"}
    shown = describe("write_file", arguments, "ws", str(workspace))
    assert shown.question == "Write .github/workflows/ci.yml (via docs/ci.yml) in ws?"
    assert "-on: push" in shown.body.plain  # the diff is against the real target
    assert describe("write_file", {"path": "notes/a.md", "content": "x"}, "ws", str(workspace)).question == (
        "Write notes/a.md in ws?")  # no "via" when nothing is in between

    answers = [ALWAYS, EXACT]
    policy = ApprovalPolicy(lambda _call: answers.pop(0), LastingRules(tmp_path / "home", workspace))
    assert policy.decide(PendingCall("1", "write_file", arguments)) is True
    assert [rule.value for rule in policy.lasting.rules()] == [".github/workflows/ci.yml"]  # keyed by the target
    assert policy.settled("write_file", {"path": ".github/workflows/ci.yml", "content": "x"})
    os.remove(workspace / "docs")
    (workspace / "docs").mkdir()
    assert not policy.settled("write_file", arguments)  # the same name, another file: asked again
    assert policy.decide(PendingCall("2", "edit_file", {"path": "docs/../.github/workflows/ci.yml", "old": "a",
                                                        "new": "b"})) is True
    assert ("edit_file", ".github/workflows/ci.yml") in policy.allowed_calls
