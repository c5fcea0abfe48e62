"""Damaged storage: corrupt, truncated, read-only and full-disk stores give one clear line;
``hermes-tui doctor`` checks and rebuilds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.memory.doctor import repair
from hermes_tui.memory.store import MemoryStore, StoreError
from tests.memory_harness import MESSAGES, pages_of, seeded, smash  # fixtures among them


def one_line(error: BaseException, path: Path) -> str:
    text = str(error)
    assert "\n" not in text and str(path) in text, text
    return text


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    path.write_bytes(b"this is a text file, not a database\n" * 100)
    with pytest.raises(StoreError) as caught:
        MemoryStore(path)
    assert "doctor" in one_line(caught.value, path)


def test_a_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    seeded(path)
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)
    with pytest.raises(StoreError) as caught:
        MemoryStore(path)
    assert "truncated" in one_line(caught.value, path)


def test_damage_found_by_a_query_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    seeded(path)
    for page in pages_of(path, "messages", "leaf")[1:4]:
        smash(path, page)
    with MemoryStore(path) as store, pytest.raises(StoreError) as caught:
        for sid in (1, 2, 3):
            store.get_messages(sid)
    assert "damaged" in one_line(caught.value, path) and "doctor" in str(caught.value)


def test_doctor_on_a_healthy_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    seeded(path)
    report = repair(path)
    assert report.healthy and report.backup is None
    assert report.lines() == [f"memory database {path}: ok (3 sessions, {MESSAGES} messages)"]


def test_doctor_rebuilds_from_every_readable_row(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    sids = seeded(path)
    leaves = pages_of(path, "messages", "leaf")
    with MemoryStore(path) as store, store._write() as conn:  # a later feature's table pointing at messages
        conn.execute("CREATE TABLE marks (id INTEGER PRIMARY KEY,"
                     " message_id INTEGER NOT NULL REFERENCES messages (id))")
        conn.execute("INSERT INTO marks (message_id) SELECT id FROM messages")
    smash(path, leaves[len(leaves) // 2])  # one page of messages lost
    for page in pages_of(path, "messages_fts_data", "leaf")[:2]:  # and part of the index
        smash(path, page)

    report = repair(path)

    assert not report.healthy and report.backup is not None and report.backup.exists()
    assert report.saved_sessions == 3
    assert MESSAGES - 40 < report.saved_messages < MESSAGES  # all but one page's worth
    with MemoryStore(path) as store:
        assert sum(len(store.get_messages(s)) for s in sids) == report.saved_messages
        assert len(store.search("quokkas", limit=1000)) == report.saved_messages  # index rebuilt
        assert [h.session_id for h in store.search_sessions("quokkas")] == [sids[0]]
        with store._read() as conn:  # marks of lost messages went with them
            assert conn.execute("SELECT count(*) FROM marks").fetchone() == (report.saved_messages,)
    assert repair(path).healthy
    text = "\n".join(report.lines())
    assert str(report.backup) in text and f"saved 3 sessions and {report.saved_messages} messages" in text


def test_doctor_keeps_messages_whose_session_row_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    seeded(path)
    (root,) = pages_of(path, "sessions", "leaf")
    smash(path, root)
    report = repair(path)
    assert report.saved_messages == MESSAGES
    with MemoryStore(path) as store:
        assert sorted(s.message_count for s in store.list_sessions()) == [MESSAGES // 3] * 3


def test_doctor_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "memory.sqlite3"
    seeded(path)
    smash(path, pages_of(path, "messages", "leaf")[2])
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(Path(__file__).parents[1])}
    hermes = shutil.which("hermes-tui", path=str(Path(sys.executable).parent)) or "hermes-tui"
    done = subprocess.run([hermes, "doctor"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert f"memory database {path} is damaged" in done.stdout
    assert "rebuilt a new store: saved 3 sessions" in done.stdout and "Traceback" not in done.stderr


def test_headless_prints_one_line_for_a_damaged_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "memory.sqlite3").write_bytes(b"garbage" * 100)
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(Path(__file__).parents[1]),
           "HERMES_PROVIDER": "openai", "OPENAI_API_KEY": "sk-test", "HERMES_WORKSPACE": str(tmp_path)}
    hermes = shutil.which("hermes-tui", path=str(Path(sys.executable).parent)) or "hermes-tui"
    done = subprocess.run([hermes, "-p", "hello"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "memory.sqlite3" in lines[0] and "doctor" in lines[0], done.stderr


# --------------------------------------------------------------------------- read-only, full disk


def _run(*cmd: str) -> bool:
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    """A store whose file and folder even root cannot write (chattr +i), or a skip saying why."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "memory.sqlite3"
    seeded(path)
    if not (shutil.which("chattr") and _run("chattr", "+i", str(path))):
        pytest.skip("needs chattr +i (root on a filesystem with immutable files) to make a read-only store")
    _run("chattr", "+i", str(folder))
    try:
        yield path
    finally:
        _run("chattr", "-i", str(folder))
        _run("chattr", "-i", str(path))


def test_a_read_only_store_opens_for_browsing_with_a_notice(immutable: Path) -> None:
    with MemoryStore(immutable) as store:
        assert store.read_only and store.notice and "read-only" in store.notice
        assert str(immutable) in store.notice
        assert len(store.list_sessions()) == 3
        assert len(store.search("quokkas", limit=5)) == 5
        assert [h.session_id for h in store.search_sessions("quokkas")] == [1]
        with pytest.raises(StoreError) as caught:
            store.add_message(1, "user", "new")
        assert "read-only" in one_line(caught.value, immutable)
        with pytest.raises(StoreError):
            store.delete_session(1)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs, or a skip saying why (mounting needs root and CAP_SYS_ADMIN)."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    if not _run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)):
        pytest.skip("cannot mount a 1 MB tmpfs here (needs root with CAP_SYS_ADMIN) to fill a disk")
    try:
        yield mount_point
    finally:
        _run("umount", "-l", str(mount_point))


def test_a_full_disk_gives_one_line_and_keeps_what_was_stored(tiny_disk: Path) -> None:
    path = tiny_disk / "memory.sqlite3"
    with MemoryStore(path) as store:
        sid = store.new_session()
        kept = store.add_message(sid, "user", "stored before the disk filled")
        with pytest.raises(StoreError) as caught:
            for i in range(10_000):
                store.add_message(sid, "tool", f"log line {i} " + os.urandom(2000).hex())
        assert "disk is full" in one_line(caught.value, path)
        assert kept in [h.message_id for h in store.search("filled")]


def test_opening_a_new_store_on_a_full_disk(tiny_disk: Path) -> None:
    filler = tiny_disk / "filler"
    with filler.open("wb") as f, pytest.raises(OSError):
        while True:
            f.write(b"x" * 65536)
            f.flush()
    with pytest.raises(StoreError) as caught:
        MemoryStore(tiny_disk / "memory.sqlite3")
    assert "full" in one_line(caught.value, tiny_disk / "memory.sqlite3")
