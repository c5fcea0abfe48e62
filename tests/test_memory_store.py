"""MemoryStore against real SQLite files: round trips, sessions, search, schema, concurrency."""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from hermes_tui.conversation import Status, ToolCall
from hermes_tui.db import Migrations
from hermes_tui.memory import search as search_module
from hermes_tui.memory import store as store_module
from hermes_tui.memory.schema import MIGRATIONS
from hermes_tui.memory.search import SearchHit
from hermes_tui.memory.store import HIT_END, HIT_START, MemoryStore

FILLER = [
    f"filler note {i}: weather report, lunch plans and a shopping list item {i}" for i in range(30)
]


@pytest.fixture
def store(tmp_path: Path):
    with MemoryStore(tmp_path / "memory.sqlite3") as s:
        yield s


def add_all(store: MemoryStore, session_id: int, texts: list[str], role: str = "user") -> list[int]:
    return [store.add_message(session_id, role, text) for text in texts]


def ids(hits: list[SearchHit]) -> list[int]:
    return [h.message_id for h in hits]


# --------------------------------------------------------------------------- messages


def test_messages_round_trip_with_tool_calls(store: MemoryStore) -> None:
    sid = store.new_session(source="tui", title="files")
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
        }
    ]
    m1 = store.add_message(sid, "system", "You are Hermes.")
    m2 = store.add_message(sid, "user", "Show me a.txt")
    m3 = store.add_message(sid, "assistant", None, tool_calls=calls)
    m4 = store.add_message(sid, "tool", "hello world", tool_call_id="call_1", name="read_file")
    m5 = store.add_message(sid, "assistant", "It says hello world.")

    messages = store.get_messages(sid)

    assert [m.id for m in messages] == [m1, m2, m3, m4, m5]
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2].calls == (ToolCall("call_1", "read_file", {"path": "a.txt"}, '{"path": "a.txt"}'),)
    assert [m.status for m in messages] == [Status.OK] * 5
    assert messages[2].content is None
    assert messages[3].tool_call_id == "call_1" and messages[3].name == "read_file"
    assert all(m.session_id == sid and isinstance(m.created, float) for m in messages)
    assert [m.created for m in messages] == sorted(m.created for m in messages)
    assert [m.to_llm() for m in messages] == [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "Show me a.txt"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "content": "hello world", "tool_call_id": "call_1", "name": "read_file"},
        {"role": "assistant", "content": "It says hello world."},
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        messages[0].content = "changed"


def test_add_message_rejects_bad_role_and_unknown_session(store: MemoryStore) -> None:
    sid = store.new_session()
    with pytest.raises(ValueError):
        store.add_message(sid, "robot", "hi")
    with pytest.raises(KeyError):
        store.add_message(sid + 99, "user", "hi")
    assert store.get_messages(sid) == []


def test_bulk_add_messages(store: MemoryStore) -> None:
    sid = store.new_session(source="import")
    rows = [
        {"role": "user", "content": "import the zebra records", "created": 1000.0},
        {"role": "assistant", "content": None, "created": 1001.0,
         "tool_calls": [{"id": "c", "type": "function",
                         "function": {"name": "run_bash", "arguments": "{}"}}]},
        {"role": "tool", "content": "done", "tool_call_id": "c", "name": "run_bash",
         "created": 1002.0},
    ]
    assert store.bulk_add_messages(sid, rows) == 3
    assert store.bulk_add_messages(sid, []) == 0

    messages = store.get_messages(sid)
    assert [(m.role, m.created) for m in messages] == [
        ("user", 1000.0), ("assistant", 1001.0), ("tool", 1002.0)
    ]
    assert messages[1].calls[0].name == "run_bash"
    assert ids(store.search("zebra")) == [messages[0].id]
    assert store.get_session(sid).message_count == 3


# --------------------------------------------------------------------------- sessions


def test_list_sessions_fields_and_order(store: MemoryStore) -> None:
    s1 = store.new_session(source="tui", title="first")
    store.add_message(s1, "system", "system prompt, not a user line")
    store.add_message(s1, "user", "  \n   Hello there, Hermes  \nsecond line")
    store.add_message(s1, "assistant", "hi")
    s2 = store.new_session(source="web")
    store.add_message(s2, "user", "x" * 300)
    s3 = store.new_session(source="headless")
    last = store.add_message(s1, "user", "one more")  # s1 becomes the most recent again

    sessions = store.list_sessions()

    assert [s.id for s in sessions] == [s1, s3, s2]
    one, three, two = sessions
    assert (one.source, one.title, one.message_count) == ("tui", "first", 4)
    assert one.first_user_line == "Hello there, Hermes"
    assert two.message_count == 1 and two.source == "web"
    assert len(two.first_user_line) <= 120 and two.first_user_line.endswith("…")
    assert three.message_count == 0 and three.first_user_line is None
    last_created = store.get_messages(s1)[-1].created
    assert store.get_messages(s1)[-1].id == last
    assert one.started <= one.last_activity == last_created
    assert two.started <= two.last_activity < one.last_activity
    assert [s.id for s in store.list_sessions(limit=1, offset=1)] == [s3]
    assert store.list_sessions(limit=5, offset=3) == []


def test_sub_agents_sessions_follow_their_parents_and_never_crowd_the_list(store: MemoryStore) -> None:
    older = store.new_session()
    store.add_message(older, "user", "an older conversation")
    parent = store.new_session()
    store.add_message(parent, "user", "delegate the reading")
    subs = [store.new_session(source="subagent", parent_id=parent) for _ in range(4)]
    for sub in subs:  # the sub-agents' activity is the newest: alone it would fill the list
        store.add_message(sub, "user", "read a file")
    orphan = store.new_session(source="subagent", parent_id=10_000)  # its parent is gone

    assert [s.id for s in store.list_sessions(limit=3)] == [orphan, parent, *subs, older]
    assert [s.id for s in store.list_sessions(limit=1, offset=1)] == [parent, *subs]
    assert [s.id for s in store.list_sessions(limit=1, offset=2)] == [older]


def test_set_summary_and_title(store: MemoryStore) -> None:
    sid = store.new_session()
    assert store.get_session(sid).summary is None

    store.set_summary(sid, "Fixed the flaky deploy script.")
    store.set_title(sid, "Deploy fix")

    info = store.get_session(sid)
    assert info.summary == "Fixed the flaky deploy script."
    assert info.title == "Deploy fix"
    assert store.list_sessions()[0].summary == "Fixed the flaky deploy script."
    assert store.get_session(sid + 1) is None
    with pytest.raises(KeyError):
        store.set_summary(sid + 1, "nope")


# --------------------------------------------------------------------------- search


def test_search_finds_message_and_marks_term_in_snippet(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    target = store.add_message(sid, "assistant", "The deployment failed with a timeout again.")

    hits = store.search("timeout")

    assert ids(hits) == [target]
    hit = hits[0]
    assert (hit.session_id, hit.role) == (sid, "assistant")
    assert f"{HIT_START}timeout{HIT_END}" in hit.snippet
    assert hit.snippet.replace(HIT_START, "").replace(HIT_END, "") in (
        "The deployment failed with a timeout again."
    )
    assert hit.score > 0 and isinstance(hit.created, float)
    assert store.search("nonexistentword") == []


def test_snippet_is_short_and_uses_ellipsis(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    long_text = " ".join(f"word{i}" for i in range(200)) + " needle " + " ".join(
        f"tail{i}" for i in range(200)
    )
    store.add_message(sid, "user", long_text)

    (hit,) = store.search("needle")

    assert f"{HIT_START}needle{HIT_END}" in hit.snippet
    assert "…" in hit.snippet
    assert len(hit.snippet.split()) <= 20


def test_snippet_markers_cannot_come_from_message_text(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    text = f"binary {HIT_START}junk{HIT_END} next to the needle"
    mid = store.add_message(sid, "tool", text, name="run_bash")

    (hit,) = store.search("needle")

    assert hit.snippet.count(HIT_START) == 1 and hit.snippet.count(HIT_END) == 1
    assert f"{HIT_START}needle{HIT_END}" in hit.snippet
    assert store.get_messages(sid)[-1].content == text  # stored untouched
    assert ids(store.search("junk")) == [mid]


def test_porter_stemming(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    runs = store.add_message(sid, "user", "She runs every morning")

    assert ids(store.search("running")) == [runs]
    assert ids(store.search("RUN")) == [runs]


def test_all_words_first_then_any_word(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    both = store.add_message(sid, "user", "alpha and beta together")
    alpha = store.add_message(sid, "user", "only alpha here")
    gamma = store.add_message(sid, "user", "gamma stands alone")

    assert ids(store.search("alpha beta")) == [both]  # AND: the alpha-only row is excluded
    assert set(ids(store.search("alpha gamma"))) == {both, alpha, gamma}  # nothing has both: OR
    assert set(ids(store.search("alpha unknownword"))) == {both, alpha}


def test_ranking_by_relevance_then_recency(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    older = store.add_message(sid, "user", "one kernel mention in a longer sentence about things")
    dense = store.add_message(sid, "user", "kernel panic, kernel oops, kernel")
    newer = store.add_message(sid, "user", "one kernel mention in a longer sentence about things")

    hits = store.search("kernel")

    assert ids(hits) == [dense, newer, older]
    assert hits[0].score > hits[1].score == hits[2].score


def test_common_words_rank_newest_first(store: MemoryStore) -> None:
    sid = store.new_session()
    texts = [f"the report number {i} of the day" for i in range(12)]
    written = add_all(store, sid, texts)

    hits = store.search("the", limit=5)

    assert ids(hits) == written[::-1][:5]  # in every message: bm25 cannot rank it
    assert all(h.score == 0.0 for h in hits)


def test_only_the_newest_candidates_are_ranked(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    dense = store.add_message(sid, "user", "kernel kernel kernel")
    plain = add_all(store, sid, [f"a kernel mention number {i} in a sentence" for i in range(4)])

    assert ids(store.search("kernel"))[0] == dense  # few matches: ranked exactly
    monkeypatch.setattr(search_module, "CANDIDATES", 3)
    assert set(ids(store.search("kernel"))) == set(plain[-3:])  # the documented trade-off


def test_words_beyond_the_scoring_budget_only_filter(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    dense = store.add_message(sid, "user", "kernel kernel kernel")
    plain = store.add_message(sid, "user", "a kernel mention in a sentence")

    assert ids(store.search("kernel")) == [dense, plain]
    monkeypatch.setattr(search_module, "SCORING_POSTINGS", 0)
    hits = store.search("kernel")
    assert ids(hits) == [plain, dense] and {h.score for h in hits} == {0.0}  # newest first


def test_any_word_snippets(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    alpha = store.add_message(sid, "user", "only alpha here")
    add_all(store, sid, FILLER)
    gamma = store.add_message(sid, "user", "gamma stands alone")

    hits = {h.message_id: h.snippet for h in store.search("alpha gamma")}

    assert hits == {
        alpha: f"only {HIT_START}alpha{HIT_END} here",
        gamma: f"{HIT_START}gamma{HIT_END} stands alone",
    }


def test_limit(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    add_all(store, sid, [f"deploy attempt {i}" for i in range(8)])

    assert len(store.search("deploy", limit=3)) == 3
    assert len(store.search("deploy")) == 8
    assert store.search("deploy", limit=0) == []


def test_search_within_one_session(store: MemoryStore) -> None:
    s1 = store.new_session()
    s2 = store.new_session()
    add_all(store, s1, FILLER[:15])
    add_all(store, s2, FILLER[15:])
    a = store.add_message(s1, "user", "postgres migration plan")
    b = store.add_message(s2, "user", "postgres backup plan")
    c = store.add_message(s1, "assistant", "postgres needs a vacuum")
    empty = store.new_session()

    assert set(ids(store.search("postgres"))) == {a, b, c}
    assert set(ids(store.search("postgres", session_id=s1))) == {a, c}
    assert ids(store.search("postgres", session_id=s2)) == [b]
    # No s1 message has both words: the OR fallback also stays inside s1.
    assert set(ids(store.search("postgres backup", session_id=s1))) == {a, c}
    assert store.search("postgres", session_id=empty) == []
    assert store.search("postgres", session_id=9999) == []


def test_tool_results_and_tool_names_are_searchable(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "run_bash", "arguments": '{"command": "ls"}'}}]
    call = store.add_message(sid, "assistant", None, tool_calls=calls)
    result = store.add_message(
        sid, "tool", "total 42\nREADME.md pyproject.toml", tool_call_id="c1", name="run_bash"
    )

    by_name = store.search("run_bash")
    assert set(ids(by_name)) == {call, result}
    assert all(f"{HIT_START}run{HIT_END}" in h.snippet for h in by_name)
    by_output = store.search("pyproject")
    assert ids(by_output) == [result] and by_output[0].role == "tool"


def test_updates_and_deletes_keep_the_index_in_step(store: MemoryStore) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER)
    mid = store.add_message(sid, "user", "original wording")
    with store._write() as conn:  # the index function lives on store connections
        conn.execute("UPDATE messages SET content = 'revised wording' WHERE id = ?", (mid,))
    assert store.search("original") == []
    assert ids(store.search("revised")) == [mid]
    with store._write() as conn:
        conn.execute("DELETE FROM messages WHERE id = ?", (mid,))
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        conn.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('integrity-check')")
    assert store.search("revised") == []
    plain = sqlite3.connect(store.path)  # a client without Hermes' functions deletes cleanly too
    with plain:
        plain.execute("DELETE FROM messages")
        plain.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    plain.close()
    assert store.search("wording") == [] and store.search("filler") == []


HOSTILE_QUERIES = [
    "", " ", "\t\n  ", '"', '""', "'", "'alpha'", '"unbalanced alpha', "(", ")", "((alpha",
    "alpha)", "[x", "{}", "-", "--", "-alpha", "alpha - beta", ":", "content:alpha",
    "tool_names:alpha", "*", "alph*", "alpha*", "^", "^alpha", "NEAR", "NEAR(alpha beta)",
    "alpha NEAR/2 beta", "AND", "OR", "NOT", "alpha AND", "OR alpha", "NOT NOT",
    "alpha NOT beta", "alpha AND OR NOT NEAR", "🎉", "alpha 🎉 beta", "🎉🎉🎉 alpha",
    "\x00",
    "alpha\x00beta", "\x00\x00\x00", f"{HIT_START}alpha{HIT_END}", "+", "@#$%&", "%", "_",
    "\\", "\\alpha", "alpha;", "Robert'); DROP TABLE messages;--", "é́", "中文 搜索",
    "a" * 300,
    "x" * 10_000, "alpha beta gamma " * 700, '"(-:*^)" ' * 600, "\u202e\u200b alpha",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_raise(store: MemoryStore, query: str) -> None:
    sid = store.new_session()
    add_all(store, sid, FILLER[:10])
    target = store.add_message(sid, "user", "alpha beta gamma near and or not content")

    hits = store.search(query)

    assert isinstance(hits, list) and all(isinstance(h, SearchHit) for h in hits)
    if re.search(r"(?<![^\W_])alpha(?![^\W_])", query.lower()):
        assert target in ids(hits)
    if not re.search(r"[^\W_]", query):
        assert hits == []
    assert len(store.get_messages(sid)) == 11  # nothing was executed as SQL


# --------------------------------------------------------------------------- schema


def test_schema_is_versioned_and_reopening_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as first:
        sid = first.new_session(title="kept")
        mid = first.add_message(sid, "user", "persistent quokka")

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) >= 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()

    with MemoryStore(path) as again:
        assert again.get_session(sid).title == "kept"
        assert ids(again.search("quokka")) == [mid]
        again.add_message(sid, "assistant", "still here")
        assert len(again.get_messages(sid)) == 2


def test_a_new_migration_step_is_applied_once_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as s:
        sid = s.new_session()
        s.add_message(sid, "user", "before the upgrade")
    applied: list[int] = []

    def add_web_table(db) -> None:
        applied.append(1)
        db["web_tokens"].create({"id": int, "token": str}, pk="id")

    monkeypatch.setattr(store_module, "SCHEMA", Migrations("memory", [*MIGRATIONS, add_web_table]))
    with MemoryStore(path) as s:
        assert len(s.get_messages(sid)) == 1
    with MemoryStore(path):
        pass

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    assert conn.execute("SELECT count(*) FROM web_tokens").fetchone()[0] == 0
    conn.close()
    assert applied == [1]


# --------------------------------------------------------------------------- concurrency


def _write_300(path: str, tag: str, barrier) -> None:
    """Child process: open the (possibly not yet created) DB with the others, then append."""
    barrier.wait(timeout=60)
    with MemoryStore(path) as s:
        sid = s.new_session(source=tag)
        for i in range(300):
            s.add_message(sid, "user" if i % 2 else "assistant", f"{tag} writes line {i}")


def test_three_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    procs = [
        ctx.Process(target=_write_300, args=(str(path), f"proc{i}", barrier)) for i in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=90)

    assert [p.exitcode for p in procs] == [0, 0, 0]  # a "database is locked" would exit 1
    with MemoryStore(path) as s:
        sessions = s.list_sessions()
        assert sorted(x.source for x in sessions) == ["proc0", "proc1", "proc2"]
        assert [x.message_count for x in sessions] == [300, 300, 300]
        assert sum(len(s.get_messages(x.id)) for x in sessions) == 900
        proc1 = next(x.id for x in sessions if x.source == "proc1")
        hits = s.search("proc1 line 299")
        assert hits and hits[0].session_id == proc1


def test_threads_share_one_store(store: MemoryStore) -> None:
    sid = store.new_session()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                store.add_message(sid, "user", f"thread{n} item {i}")
                store.search(f"thread{n}")
        except BaseException as exc:  # noqa: BLE001 - reported below  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(store.get_messages(sid)) == 160
    assert len(store.search("thread2", limit=100)) == 40


def test_close_and_context_manager(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.sqlite3") as s:
        s.new_session()
    with pytest.raises(RuntimeError):
        s.new_session()
