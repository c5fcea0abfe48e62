"""Recall of a session asked about in other words than it used (memory/recall.py, synonyms.py)."""

from __future__ import annotations

import random
from pathlib import Path

from hermes_tui.memory.store import MemoryStore

# Words the questions below use, spread over the distractors so that no question is answered
# by its plain words alone.
COMMON = """database page server report schedule customer invoice dashboard query export staging
proxy night weekly team settings migration template cluster budget""".split()
VERBS = "fixed checked moved reviewed updated cleaned wrote tuned".split()

# (summary, what the user said, the question asked weeks later: it shares no word with the
# session but words of the same everyday meaning, and some words with the distractors)
PARAPHRASED = [
    ("Nightly Postgres backup now goes to the NAS via cron.", "backups should land on the NAS",
     "where do the database dumps go"),
    ("Renewed the expired TLS certificate with certbot and a renewal timer.", "the site certificate expired",
     "how did we stop the cert on the server from lapsing"),
    ("Added rate limiting to the login endpoint after a brute-force attempt.", "someone is hammering /login",
     "how did we throttle the sign-in page"),
]


def _distractor(rng: random.Random) -> tuple[str, str]:
    a, b, c = rng.sample(COMMON, 3)
    return (f"{rng.choice(VERBS).capitalize()} the {a} {b} and the {c}.",
            f"can you look at the {a} {c}?")


def _ranked_sessions(store: MemoryStore, question: str) -> list[int]:
    """Sessions in the order recall() lists them."""
    order: list[int] = []
    for hit in store.recall(question):
        if hit.session_id not in order:
            order.append(hit.session_id)
    return order


def test_a_paraphrased_question_finds_its_session_among_hundreds(tmp_path: Path) -> None:
    rng = random.Random(3)
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        slots = dict(zip(rng.sample(range(400), len(PARAPHRASED)), PARAPHRASED, strict=True))
        targets = {}
        for i in range(400):
            summary, said = slots[i][:2] if i in slots else _distractor(rng)
            sid = store.new_session()
            store.bulk_add_messages(sid, [{"role": "user", "content": said},
                                          {"role": "assistant", "content": "Let me look."}])
            store.set_summary(sid, summary)
            if i in slots:
                targets[slots[i][2]] = sid
        for question, sid in targets.items():
            assert sid in _ranked_sessions(store, question)[:5], question


def test_a_paraphrase_never_outranks_the_users_own_word(tmp_path: Path) -> None:
    """"cert" also finds "certificate", but a summary holding the user's own word "proxy" ranks
    above one holding only the paraphrase, although "certificate" is far the rarer word."""
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        for i in range(40):
            store.set_summary(store.new_session(), f"Moved the proxy of host {i} to the new rack.")
        for i in range(200):
            store.set_summary(store.new_session(), f"Planned the garden beds, round {i}.")
        own = store.new_session()
        store.set_summary(own, "Looked at the proxy settings.")
        paraphrase = store.new_session()
        store.set_summary(paraphrase, "Looked at the certificate settings.")
        ranked = [hit.session_id for hit in store.search_sessions("cert proxy", limit=100)]
        assert paraphrase in ranked  # found by the paraphrase alone
        assert ranked.index(own) < ranked.index(paraphrase)
