"""A question is mostly made of words that say how it is asked ("what did we do on ..."): memory's
any-word ranking leaves those out, so the session and message it is about come first."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.memory.query import parse
from hermes_tui.memory.store import MemoryStore

QUESTION = "what did we do on the trip when we went there"


def fill(store: MemoryStore) -> tuple[int, int]:
    """A session about the trip, one made of the question's function words, and ten others."""
    for n in range(10):
        other = store.new_session()
        store.bulk_add_messages(other, [{"role": "user", "content": f"rename column {n} in the report"}])
        store.set_summary(other, f"Renamed column {n} of the sales report.")
    trip = store.new_session()
    store.bulk_add_messages(trip, [{"role": "user", "content": "book the ryokan for the Kyoto trip"}])
    store.set_summary(trip, "Booked a ryokan for the Kyoto trip.")
    chatter = store.new_session()
    store.bulk_add_messages(chatter, [{"role": "user", "content": "what did we do when we were there on the day"}])
    store.set_summary(chatter, "What we did on the day, and when we were there.")
    return trip, chatter


def test_function_words_do_not_rank_sessions_or_messages(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        trip, _ = fill(store)
        assert [s.session_id for s in store.search_sessions(QUESTION)] == [trip]
        assert [h.session_id for h in store.search(QUESTION)] == [trip]


def test_a_question_of_function_words_only_still_finds_them(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        _, chatter = fill(store)
        assert [s.session_id for s in store.search_sessions("what did we do there")] == [chatter]
        assert chatter in [h.session_id for h in store.search("what did we do there")]


def test_the_topical_clauses_of_a_query() -> None:
    assert [c.fts() for c in parse("how did we fix the upload test").topical()] == ['"fix"', '"upload"', '"test"']
    assert [c.fts() for c in parse("how did we").topical()] == ['"how"', '"did"', '"we"']
    assert [c.fts() for c in parse('"the who" how').topical()] == ['"the who"']
