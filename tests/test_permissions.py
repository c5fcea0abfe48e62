"""Everything Hermes creates is 0600 (files) or 0700 (folders), whatever the umask, in a new or an
existing HERMES_HOME: the database with its WAL and SHM, the log, skills, the .env the setup writes."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.config import Config
from hermes_tui.logs import log_folder, setup_logging
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui.envfile import update_env_file
from hermes_tui.web.webdb import WebDB


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("existed", [True, False])
def test_everything_created_is_private(existed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "a" / "b" / "hermes-home"
    if existed:
        home.mkdir(parents=True, mode=0o755)
        (home / "memory.sqlite3-wal").write_bytes(b"")  # left by an older version, world-readable
    monkeypatch.setenv("HERMES_HOME", str(home))
    config = Config.load()
    if not existed:
        assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", home)] == [0o700] * 3

    WebDB(config.db_path)  # the web may be first to create the shared file
    memory = MemoryStore(config.db_path)
    memory.add_message(memory.new_session(), "user", "private words")
    skills = SkillManager(config.skills_dir)
    skills.create("deploy-app", "Deploy the app", ["deploy"], "1. ship")
    skills.refine("deploy-app", body="1. build\n2. ship")  # archives v1 under versions/
    update_env_file(config.env_file, {"OPENAI_API_KEY": "sk-1234567890"})
    log_path = setup_logging(config)
    logging.getLogger("hermes_tui.test").warning("a line")
    try:
        files = [config.db_path, Path(f"{config.db_path}-wal"), Path(f"{config.db_path}-shm"), config.env_file,
                 log_path, *[p for p in config.skills_dir.rglob("*") if p.is_file()]]
        folders = [config.skills_dir, log_folder(), *[p for p in config.skills_dir.rglob("*") if p.is_dir()]]
        assert all(p.exists() for p in files), [p for p in files if not p.exists()]
        assert {str(p): oct(mode(p)) for p in files if mode(p) != 0o600} == {}
        assert {str(p): oct(mode(p)) for p in folders if mode(p) != 0o700} == {}
        assert len(files) >= 7 and len(folders) >= 3
    finally:
        memory.close()
        for handler in [h for h in logging.getLogger().handlers if getattr(h, "_hermes", False)]:
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_an_old_world_readable_database_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite3"
    MemoryStore(db).close()
    os.chmod(db, 0o644)
    MemoryStore(db).close()
    assert mode(db) == 0o600


def test_journal_files_left_readable_by_an_older_run_are_tightened(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite3"
    MemoryStore(db).close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").write_bytes(b"")
        os.chmod(f"{db}{suffix}", 0o644)
    store = MemoryStore(db)
    try:
        assert [mode(Path(f"{db}{s}")) for s in ("", "-wal", "-shm")] == [0o600] * 3
    finally:
        store.close()
