"""Forgetting: a deleted session or purged message leaves no trace in the file, the WAL or the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.memory.store import MemoryStore

SECRET = "sk-live-zq7TOPSECRETkey93xw"
PRIVATE = "marmaladeconfession"


def file_bytes(path: Path) -> bytes:
    """Everything SQLite keeps on disk for this database: the file, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def fill(store: MemoryStore, sid: int, n: int = 200) -> None:
    store.bulk_add_messages(sid, [{"role": "user", "content": f"ordinary note {i} about gardening"}
                                  for i in range(n)])


def test_purge_message_removes_text_from_table_index_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as store:
        sid = store.new_session()
        fill(store, sid)
        keep = store.add_message(sid, "user", "the config lives in settings.toml")
        bad = store.add_message(sid, "user", f"my key is {SECRET} please use it")
        fill(store, sid)
        assert [h.message_id for h in store.search("zq7TOPSECRETkey93xw")] == [bad]
        assert SECRET.encode() in file_bytes(path)

        assert store.purge_message(bad) is True

        assert store.search("zq7TOPSECRETkey93xw") == []
        assert [m.id for m in store.get_messages(sid) if m.id == bad] == []
        assert [h.message_id for h in store.search("settings.toml")] == [keep]
        assert store.purge_message(bad) is False
        raw = file_bytes(path)
        for fragment in (SECRET, "zq7TOPSECRETkey93xw", "topsecretkey93xw"):
            assert fragment.encode() not in raw, fragment
        assert Path(f"{path}-wal").stat().st_size == 0
        assert b"settings" in raw  # the grep would find text that is still there


def test_delete_session_forgets_every_message_and_summary(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as store:
        other = store.new_session()
        fill(store, other, 50)
        sid = store.new_session(title=f"{PRIVATE} title")
        store.add_message(sid, "user", f"a {PRIVATE} only you know")
        store.add_message(sid, "assistant", f"noted: {PRIVATE}")
        store.set_summary(sid, f"summary of the {PRIVATE}")
        assert store.search(PRIVATE)

        assert store.delete_session(sid) == 2

        assert store.get_session(sid) is None and store.get_messages(sid) == []
        assert store.search(PRIVATE) == []
        assert [s.id for s in store.list_sessions()] == [other]
        assert len(store.search("gardening", limit=100)) == 50
        with pytest.raises(KeyError):
            store.delete_session(sid)
        assert PRIVATE.encode() not in file_bytes(path)


def test_delete_session_removes_rows_of_tables_that_refer_to_it(tmp_path: Path) -> None:
    """A table another feature adds later (here: notes on messages) must not block forgetting."""
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as store:
        sid = store.new_session()
        mid = store.add_message(sid, "user", "hello there")
        with store._write() as conn:  # stands in for a later migration step
            conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY,"
                         " message_id INTEGER REFERENCES messages(id), text TEXT)")
            conn.execute("INSERT INTO notes (message_id, text) VALUES (?, ?)", (mid, PRIVATE))
        assert store.delete_session(sid) == 1
        with store._read() as conn:
            assert conn.execute("SELECT count(*) FROM notes").fetchone() == (0,)
        assert PRIVATE.encode() not in file_bytes(path)
