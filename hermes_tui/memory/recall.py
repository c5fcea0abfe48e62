"""Sessions ranked for a question asked weeks later in other words than the session used.

bm25 over titles and summaries finds a session only through shared words, and a question asked
weeks later shares few ("the upload check that failed now and then on the build server" for
"the flaky upload test in CI"). So the question is widened with everyday paraphrases of its
words (``synonyms.everyday_expansions``: "build server" also looks for "ci"), weighted below
the user's own words.

Each term is scored on its own (bm25 of an OR query is the sum of its terms' bm25) so that each
gets its weight: 1 for a user's word; for a paraphrase ``SYNONYM_WEIGHT`` with its idf capped at
the lowest idf among the user's matching words, so that one paraphrase never counts as much as
one of the user's own words in the same summary, however rare it is. Sessions are few
(thousands), so every match of a term is scored; a term in half the sessions or more is left
out (noise, and costly), unless it is the user's only word.

Measured on bench/memory_recall.py and left out, for no gain on its held-out questions:
pseudo-relevance feedback (RM3: the most distinctive words of a first pass's best summaries
added to the query; a count query per candidate word), long words' stems as prefixes
("printing" finding "printer"; tuned set 0.93 -> 0.90), and reciprocal rank fusion of the
summary and message rankings in ``MemoryStore.recall`` instead of summaries first.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

from hermes_tui.memory.query import Clause, Phrase, Query, phrase_of
from hermes_tui.memory.synonyms import everyday_expansions
from hermes_tui.memory.text import highlight_for

FREQUENT = 0.5
"""A word in at least this share of sessions says nothing about which one is meant."""
FEW_SESSIONS = 20
"""Below this many sessions a word's share says nothing about whether it is noise."""
TITLE_WEIGHT = 2.0
"""A word in a session's title says more about it than one in its summary."""
SYNONYM_WEIGHT = 0.7
"""An everyday paraphrase of the user's word counts at most this share of the word itself."""


@dataclass(frozen=True)
class Term:
    """One clause of the widened query and what a match of it is worth."""

    clause: Clause
    weight: float  # 1 for a user's word, less for a paraphrase


def rank_sessions(
    conn: sqlite3.Connection, query: Query, limit: int
) -> tuple[list[tuple[int, float]], list[Term]]:
    """The best ``limit`` sessions for ``query`` as (session id, score), best first, and the
    terms they were ranked by (for highlighting)."""
    (total,) = conn.execute("SELECT count(*) FROM sessions").fetchone()
    if not total:
        return [], []
    own = list(query.topical())
    words = [w for c in query.clauses for p in c.phrases for w in p.words]
    known = {_stem(w) for w in words}
    synonyms: list[Phrase] = []
    for word in everyday_expansions(words):  # one term per stem: "backup" and "backups" count once
        if _stem(word) not in known and (phrase := phrase_of(word)) is not None:
            known.add(_stem(word))
            synonyms.append(phrase)
    counts = {c: _count(conn, c) for c in own + [Clause((p,)) for p in synonyms]}
    usable = [c for c in own if _useful(counts[c], total, alone=len(own) == 1)]
    floor = min((_idf(counts[c], total) for c in usable), default=math.inf)
    terms = [Term(c, 1.0) for c in usable]
    terms += [Term(Clause((p,)), _weight(SYNONYM_WEIGHT, counts[Clause((p,))], total, floor))
              for p in synonyms if _useful(counts[Clause((p,))], total)]
    return _ranked(conn, terms, query.excluded, limit), terms


def _count(conn: sqlite3.Connection, clause: Clause) -> int:
    (count,) = conn.execute("SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH ?",
                            (clause.fts(),)).fetchone()
    return int(count)


def _ranked(
    conn: sqlite3.Connection, terms: list[Term], excluded: tuple[Phrase, ...], limit: int
) -> list[tuple[int, float]]:
    """Sessions by the weighted sum of their terms' bm25, best first, newest first among equals:
    summed inside SQLite, so only ``limit`` rows reach Python however many sessions match."""
    if not terms:
        return []
    parts = " UNION ALL ".join(
        "SELECT rowid, ? * bm25(sessions_fts, ?, 1.0) AS s FROM sessions_fts WHERE sessions_fts MATCH ?"
        for _ in terms)
    args: list[object] = [a for t in terms for a in (t.weight, TITLE_WEIGHT, t.clause.fts())]
    where = ""
    if excluded:
        where = " WHERE rowid NOT IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?)"
        args.append(" OR ".join(p.fts() for p in excluded))
    # MATERIALIZED: flattened into the outer query, bm25() would leave its FTS5 context.
    rows = conn.execute(f"WITH hits(rowid, s) AS MATERIALIZED ({parts}) SELECT rowid, -sum(s) AS score"
                        f" FROM hits{where} GROUP BY rowid ORDER BY score DESC, rowid DESC LIMIT ?",
                        (*args, limit))
    return [(sid, score) for sid, score in rows]


def _useful(count: int, total: int, *, alone: bool = False) -> bool:
    """Whether a term matching ``count`` of ``total`` sessions can tell them apart."""
    return count > 0 and (count < FREQUENT * total or total < FEW_SESSIONS or alone)


def _idf(count: int, total: int) -> float:
    """bm25's idf, as FTS5 computes it."""
    return max(math.log((total - count + 0.5) / (count + 0.5)), 1e-6)


def _weight(share: float, count: int, total: int, floor: float) -> float:
    """What a match of an added term is worth: ``share`` of a user's word, its idf capped at
    ``floor`` (the lowest idf among the user's matching words), so that a rarer added word
    never outweighs one of the user's own."""
    return share * min(1.0, floor / _idf(count, total))


def _stem(word: str) -> str:
    return highlight_for(word).text

