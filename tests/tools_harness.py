"""A tool registry on a tmp workspace, and the hostile paths every file tool must refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace holding a secret the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP-SECRET")
    return folder


@pytest.fixture
def registry(tmp_path: Path, outside: Path) -> ToolRegistry:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello notes\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "inner.txt").write_text("inner")
    # Hostile links planted inside the workspace.
    (ws / "link_out").symlink_to(outside / "secret.txt")
    (ws / "dir_link_out").symlink_to(outside)
    (ws / "dangling_out").symlink_to(outside / "does-not-exist")
    (ws / "sub" / "up_link").symlink_to("../../outside")
    (ws / "root_link").symlink_to("/")
    (ws / "ok_link").symlink_to(ws / "notes.txt")
    memory = MemoryStore(tmp_path / "memory.sqlite3")
    skills = SkillManager(tmp_path / "skills")
    return ToolRegistry(ws, memory, skills)


HOSTILE_PATHS = [
    "..",
    "../",
    "../outside/secret.txt",
    "../../etc/passwd",
    "sub/../../outside/secret.txt",
    "sub/../../../etc/hostname",
    "./../outside",
    "/etc/passwd",
    "/etc",
    "/",
    "//etc/passwd",
    "/tmp",
    "~",
    "~/secret",
    "~root/.bashrc",
    "notes.txt\x00.png",
    "\x00",
    "link_out",
    "dir_link_out",
    "dir_link_out/secret.txt",
    "dangling_out",
    "sub/up_link",
    "sub/up_link/secret.txt",
    "root_link",
    "root_link/etc/passwd",
    "sub/../dir_link_out/../outside/secret.txt",
    "../ws_sibling",
    "/proc/self/environ",
]
