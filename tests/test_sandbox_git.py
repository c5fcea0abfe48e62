"""The sandbox against a hostile model (issue 40, part 1): no git repository in the workspace can be
armed to run a program when the user runs git later, and the host's runtime folders (the warm
helper's key and socket among them) are out of reach wherever they are. Real bwrap, real git."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent.sandbox import Sandbox, unavailable_reason
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager

NO_BWRAP = unavailable_reason()
pytestmark = pytest.mark.skipif(NO_BWRAP is not None, reason=f"the sandbox cannot run here: {NO_BWRAP}")


def _git(cwd: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "skills"),
                        sandbox=Sandbox(enabled=True))


def test_no_repository_in_the_workspace_can_be_armed_to_run_a_program(registry: ToolRegistry,
                                                                      tmp_path: Path) -> None:
    ws, marker = registry.workspace, tmp_path / "git-ran-the-models-program"
    for repo in (ws, ws / "sub"):
        repo.mkdir(exist_ok=True)
        assert _git(repo, "init", "-q", home=tmp_path).returncode == 0
    sub_config = (ws / "sub" / ".git" / "config").read_text()
    command = (
        # A nested repository: replaced, or configured in place.
        f"rm -rf sub/.git; git init -q sub; git -C sub config core.fsmonitor 'touch {marker}'; "
        # A new one, a bare one and one kept elsewhere through a .git file, each armed.
        f"git init -q fresh && git -C fresh remote add origin https://example.com/fresh.git && "
        f"git -C fresh config core.fsmonitor 'touch {marker}' && "
        f"git -C fresh config alias.st '!touch {marker}' && "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > fresh/.git/hooks/post-checkout && "
        f"chmod +x fresh/.git/hooks/post-checkout; "
        f"git init -q --bare store && git -C store config core.hooksPath /tmp; "
        f"mkdir .stores; git init -q --separate-git-dir=.stores/other other && git -C other config core.pager 'touch {marker}'; "
        "echo end"
    )
    result = registry.execute("run_bash", {"command": command})
    assert "end" in result.output
    assert (ws / "sub" / ".git" / "config").read_text() == sub_config  # read-only in the sandbox
    assert "Hermes removed from a git repository" in result.output
    for what in ("fresh/.git: config core.fsmonitor", "fresh/.git: config alias.st", "fresh/.git: hooks/post-checkout",
                 "store: config core.hookspath", ".stores/other: config core.pager"):
        assert what in result.output, what
    assert _git(ws / "fresh", "config", "remote.origin.url", home=tmp_path).stdout.strip() == \
        "https://example.com/fresh.git"  # what runs nothing is kept
    for repo in (ws / "sub", ws / "fresh", ws / "other"):
        assert _git(repo, "status", home=tmp_path).returncode == 0
    assert _git(ws / "fresh", "st", home=tmp_path).returncode != 0  # the alias is gone
    assert _git(ws / "fresh", "checkout", "-q", "-b", "x", home=tmp_path).returncode == 0
    assert _git(ws / "store", "--git-dir", str(ws / "store"), "config", "--get", "core.hooksPath",
                home=tmp_path).stdout == ""
    assert not marker.exists()


@pytest.fixture
def runtime_outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """An XDG runtime folder and a TMPDIR outside /run/user and /tmp (WSLg; a TMPDIR of one's own)."""
    base = Path(tempfile.mkdtemp(prefix="hermes-runtime-", dir="/var/tmp"))
    runtime, temp = base / "runtime", base / "temp"
    for folder, name in ((runtime / "hermes", "key"), (temp / "hermes-llm-x", "socket-key")):
        folder.mkdir(parents=True)
        (folder / name).write_text("PLANTED-HELPER-KEY")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    try:
        yield runtime, temp
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_helpers_folders_are_masked_wherever_they_are(registry: ToolRegistry,
                                                          runtime_outside_tmp: tuple[Path, Path]) -> None:
    runtime, temp = runtime_outside_tmp
    command = f"cat {runtime}/hermes/key {temp}/hermes-llm-x/socket-key 2>&1; ls -a {runtime} {temp}; echo end"
    result = registry.execute("run_bash", {"command": command})
    assert "end" in result.output and "PLANTED-HELPER-KEY" not in result.output


def test_the_walk_lists_again_only_what_changed_and_misses_no_new_repository(tmp_path: Path) -> None:
    from hermes_tui.agent import gitguard

    ws = tmp_path / "ws"
    for folder in ("a/b/c", "d/e", "f"):
        (ws / folder).mkdir(parents=True)
    (ws / "a" / "b" / ".git").mkdir()
    old = 1_000_000_000  # 2001: every listing is old enough to keep
    for folder in sorted({p for p in ws.rglob("*") if p.is_dir()} | {ws}, reverse=True):
        os.utime(folder, (old, old))
    assert gitguard.repositories(ws) == {str(ws / "a" / "b" / ".git")}
    assert gitguard.repositories(ws) == {str(ws / "a" / "b" / ".git")}  # from the kept listings
    (ws / "d" / "e" / "new").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "d" / "e" / "new")], check=True, timeout=60)
    (ws / "f" / ".git").write_text("gitdir: ../d/e/new\n")
    assert gitguard.repositories(ws) == {str(ws / "a" / "b" / ".git"), str(ws / "d" / "e" / "new"),
                                         str(ws / "f" / ".git")}


def test_a_command_that_hides_a_repository_among_too_many_folders_is_told(
        registry: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the walk's bound a new repository may go unseen: the result says so instead of nothing."""
    from hermes_tui.agent import gitguard

    monkeypatch.setattr(gitguard, "MAX_ENTRIES", 50)  # the bound, scaled down from 200,000 folders
    marker = tmp_path / "git-ran-the-models-program"
    command = (f"mkdir -p $(seq -f 'pad/d%g' 1 80) && git init -q zz/hidden && "
               f"git -C zz/hidden config core.fsmonitor 'touch {marker}'; echo end")
    result = registry.execute("run_bash", {"command": command})
    assert "end" in result.output
    assert "could not check every git repository" in result.output
