"""A hand edit in the Skills pane (F6, a real ``$EDITOR`` under a real pty) is a version: F9 brings
back the file from before it, and F8 merges a later proposal into the edited file, keeping the
step the user added (#23 item 11)."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import pytest

from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer
from tests.helpers import HERMES_TUI, wait_until
from tests.pty_harness import Terminal, terminal_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
__all__ = ["terminal_env"]

BODY = "1. Build.\n2. Test.\n3. Ship."
HAND_STEP = "4. Tag the release (added by hand)."
F6, F8, F9 = "\x1b[17~", "\x1b[19~", "\x1b[20~"


def body_of(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("---\n", 2)[2].strip()


@pytest.mark.parametrize("size", [(24, 80), (45, 140)])
def test_a_hand_edit_is_a_version_and_accepting_a_proposal_keeps_it(
        terminal_env: tuple[FakeLLMServer, dict[str, str]], hermes_home: Path, tmp_path: Path,
        size: tuple[int, int]) -> None:
    _, env = terminal_env
    skills_dir = hermes_home / "skills"
    shutil.rmtree(skills_dir / "canary-skill")  # the fixture's; this test's skill is the only one
    SkillManager(skills_dir).create("deploy-app", "Deploy the app.", ["deploy"], BODY)
    editor = tmp_path / "append-step"
    editor.write_text(f"#!/bin/sh\nprintf '%s\\n' '{HAND_STEP}' >> \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    env = {**env, "EDITOR": str(editor)}
    env.pop("VISUAL", None)
    skill = skills_dir / "deploy-app" / "SKILL.md"
    versions = skill.parent / "versions"
    term = Terminal([HERMES_TUI], env, size)
    try:
        term.wait_for(lambda out: b"Message Hermes" in out)
        term.type("\x1bOR")  # F3: the Skills pane
        term.wait_for(lambda out: b"deploy-app" in out)
        term.type(F6)
        assert wait_until(lambda: (versions / "v1.md").is_file(), 30)  # booked as a version
        assert body_of(skill) == f"{BODY}\n{HAND_STEP}"
        assert body_of(versions / "v1.md") == BODY
        seen = len(term.seen())
        term.type(F9)
        term.wait_for(lambda out: b"Restore v1" in out[seen:])  # the question, not the footer
        term.type("y")
        assert wait_until(lambda: body_of(skill) == BODY, 30)  # the version before the hand edit

        term.type(F6)  # the step again, then a proposal from the curator (another process)
        assert wait_until(lambda: body_of(skill) == f"{BODY}\n{HAND_STEP}" and (versions / "v3.md").is_file(), 30)
        outcome = SkillManager(skills_dir).propose("deploy-app", "Deploy the app.", ["deploy"],
                                                   "1. Build with make.\n2. Test.\n3. Ship.")
        assert outcome.kind == "pending"
        term.type(F8)
        assert wait_until(lambda: not list(versions.glob("pending-*")), 30)  # accepted
        assert body_of(skill) == f"1. Build with make.\n2. Test.\n3. Ship.\n{HAND_STEP}"  # the user's step stays
    finally:
        term.close()
