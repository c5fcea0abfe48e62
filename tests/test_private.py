"""write_private: the one way Hermes replaces a file it owns (history, .env, permissions, memory
facts, MCP approvals, instruction approvals, skills). Real files, real processes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from hermes_tui.private import write_private


def test_it_writes_owner_only_files_whatever_the_umask(tmp_path):
    target = tmp_path / "new" / "folder" / "file.json"
    old = os.umask(0)
    try:
        write_private(target, "héllo\n")
    finally:
        os.umask(old)
    assert target.read_bytes() == "héllo\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert os.listdir(target.parent) == ["file.json"]


def test_a_symlink_at_the_target_is_replaced_never_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's own file\n")
    target = tmp_path / "home" / "permissions.json"
    target.parent.mkdir()
    target.symlink_to(outside)
    write_private(target, b"{}\n")
    assert outside.read_text() == "the user's own file\n"
    assert not target.is_symlink() and target.read_bytes() == b"{}\n"


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path):
    folder = tmp_path / "home"
    target = folder / "taken"
    target.mkdir(parents=True)  # replacing a folder with a file fails, after the temporary file was written
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_private(target, b"x" * 100_000)
    assert os.listdir(folder) == ["taken"]
    assert (target / "inside").read_text() == "kept"


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hermes_tui.private import write_private
    target, letter = Path(sys.argv[1]), sys.argv[2]
    for _ in range(150):
        write_private(target, letter * 200_000)
""")


def test_two_processes_replacing_one_file_never_leave_it_torn(tmp_path):
    """Each writer has its own temporary file: a reader sees one writer's whole text at every moment."""
    target = tmp_path / "skills" / "shared.md"
    write_private(target, "a" * 200_000)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(target), letter]) for letter in "bc"]
    while any(w.poll() is None for w in writers):
        text = target.read_text()
        assert len(text) == 200_000 and len(set(text)) == 1, "a reader saw a torn file"
    assert [w.wait() for w in writers] == [0, 0]
    assert target.read_text() in {"b" * 200_000, "c" * 200_000}
    assert os.listdir(target.parent) == ["shared.md"]
