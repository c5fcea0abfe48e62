"""Ranked search over the FTS5 index, bounded to milliseconds at millions of messages.

Ranking is FTS5's bm25, newest (highest id) first among equal scores, within bounds that keep a
search fast whatever the query (bench/memory_search.py):

* Only the newest ``CANDIDATES`` matches are ranked: FTS5 walks postings newest first and stops
  there, whereas ``ORDER BY rank`` scores every match, for "the" every message (over a second
  at 1M). Rarer queries are thus ranked exactly; a common one ranks its recent matches.
* bm25 reads each scored clause's whole posting list once per query, so only the rarest
  clauses, together within ``SCORING_POSTINGS`` postings, are scored; the others still filter.
  Words in half the messages or more weigh ~0 in bm25 anyway (its IDF floor). When no clause
  qualifies, hits are simply newest first, with score 0.
* Snippets are cut in Python from a bounded slice of each hit (see ``text.snippet``).

When no message matches every clause, each clause (near-universal ones and lone function words
such as "how" or "we" left out) is searched in its own newest window and the per-clause bm25 scores are summed, which is what bm25 gives an OR
query.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_tui.memory.query import Clause, Query
from hermes_tui.memory.recall import rank_sessions
from hermes_tui.memory.text import Highlight, has_word, is_cjk, snippet

CANDIDATES = 1000
"""How many of the newest matches a search ranks by relevance."""
EXACT_MATCHES = 5_000
"""Up to this many matches of a rare clause next to a frequent one are all ranked."""
DENSITY_SAMPLE = 4000
"""Newest messages sampled to estimate the share of messages a clause occurs in."""
FREQUENT = 0.5
"""A word in at least this share of messages has an IDF of ~0 in bm25: it cannot rank."""
SCORING_POSTINGS = 100_000
"""bm25 reads each scored word's whole posting list (~15 ns a posting): the budget for that."""


@dataclass(frozen=True)
class SearchHit:
    """One message that matched a search, with its highlighted snippet."""

    session_id: int
    message_id: int
    role: str
    snippet: str
    created: float
    score: float


@dataclass(frozen=True)
class Scope:
    """The rowid range to search, and the session and roles to keep."""

    low: int
    high: int
    session_id: int | None
    roles: tuple[str, ...]

    @classmethod
    def of(cls, conn: sqlite3.Connection, session_id: int | None, roles: tuple[str, ...]) -> Scope | None:
        # Two subqueries: SQLite answers a lone min() or max() from the index, not both at once.
        where, args = ("", ()) if session_id is None else (" WHERE session_id = ?", (session_id,))
        low, high = conn.execute(
            f"SELECT (SELECT min(id) FROM messages{where}), (SELECT max(id) FROM messages{where})",
            args * 2,
        ).fetchone()
        return None if low is None else cls(low, high, session_id, roles)

    def join(self) -> tuple[str, tuple[Any, ...]]:
        """SQL (joined to ``messages m``) and arguments for the session and role filters."""
        sql = ""
        args: tuple[Any, ...] = ()
        if self.session_id is not None:
            sql, args = " AND m.session_id = ?", (self.session_id,)
        if self.roles:
            sql += f" AND m.role IN ({','.join('?' * len(self.roles))})"
            args += self.roles
        return sql, args


@dataclass(frozen=True)
class Density:
    """Each clause's share of messages, estimated cheaply from the newest rows."""

    share: dict[Clause, float]
    indexed: int  # messages in the index (the largest rowid)

    @classmethod
    def of(cls, conn: sqlite3.Connection, query: Query) -> Density:
        (indexed,) = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
        # Counting in the newest rows costs at most DENSITY_SAMPLE postings whatever the clause,
        # and FTS5 applies the same stemming as in the real query.
        sample = max(1, min(DENSITY_SAMPLE, indexed))
        share = {}
        for clause in query.clauses:
            (count,) = conn.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ?",
                (clause.fts(), indexed - sample),
            ).fetchone()
            share[clause] = count / sample
        return cls(share, indexed)

    def common(self, clause: Clause) -> bool:
        return self.share[clause] >= FREQUENT

    def scoring(self, clauses: tuple[Clause, ...]) -> list[Clause]:
        """The rarest of ``clauses`` whose posting lists bm25 can read within the budget."""
        chosen: list[Clause] = []
        postings = 0.0
        for clause in sorted(clauses, key=self.share.__getitem__):
            postings += self.share[clause] * self.indexed
            if self.common(clause) or postings > SCORING_POSTINGS:
                break
            chosen.append(clause)
        return chosen


def search(
    conn: sqlite3.Connection,
    query: Query,
    scope: Scope,
    limit: int,
    want_best: Callable[[str], None] | None = None,
) -> list[SearchHit]:
    """Messages matching every clause of ``query``, else any clause; best first (see module).

    ``want_best`` is told about a word too frequent to rank now, so that the upkeep thread
    keeps bm25's best messages for it (``frequent_top``), mixed in from then on.
    """
    density = Density.of(conn, query)
    ranked = _rank_all(conn, query, density, scope, limit)
    if ranked and _frequent_alone(query, density):
        term = query.clauses[0].fts()
        if want_best is not None:
            want_best(term)
        ranked = _with_best(conn, term, ranked, scope)
    if not ranked and len(query.clauses) > 1:
        ranked = _rank_any(conn, query, density, scope, limit)
    return _hits(conn, ranked[:limit], query.highlights())


def _frequent_alone(query: Query, density: Density) -> bool:
    """One plain word, too frequent for bm25 to be read while searching."""
    if len(query.clauses) != 1 or query.excluded or query.tools:
        return False
    (phrase,) = query.clauses[0].phrases if len(query.clauses[0].phrases) == 1 else (None,)
    return phrase is not None and len(phrase.tokens) == 1 and not phrase.prefix and not (
        density.scoring(query.clauses)
    )


def _with_best(
    conn: sqlite3.Connection, term: str, newest: list[tuple[int, float]], scope: Scope
) -> list[tuple[int, float]]:
    """Newest matches and bm25's best (as last computed by the upkeep thread), alternating:
    recent messages lead, and half of the first places go to the most relevant ones."""
    extra, extra_args = scope.join()
    best = conn.execute(
        "SELECT t.rowid_, t.score FROM frequent_top t JOIN messages m ON m.id = t.rowid_"
        f" WHERE t.term = ? AND t.rowid_ BETWEEN ? AND ?{extra} ORDER BY t.score, t.rowid_ DESC",
        (term, scope.low, scope.high, *extra_args),
    ).fetchall()
    if not best:
        return newest
    scores = dict(best)
    merged: dict[int, float] = {}
    for pair in itertools.chain.from_iterable(itertools.zip_longest(newest, best)):
        if pair is not None and pair[0] not in merged:
            merged[pair[0]] = scores.get(pair[0], pair[1])
    return list(merged.items())


def _newest(conn: sqlite3.Connection, expr: str, scope: Scope, limit: int) -> list[int]:
    """Rowids matching ``expr`` in scope, newest first; FTS5 stops after ``limit``."""
    extra, extra_args = scope.join()
    if not extra:
        sql = (
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
            " AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?"
        )
        return [r[0] for r in conn.execute(sql, (expr, scope.low, scope.high, limit))]
    sql = (
        "SELECT f.rowid FROM messages_fts f JOIN messages m ON m.id = f.rowid"
        f" WHERE messages_fts MATCH ? AND f.rowid BETWEEN ? AND ?{extra}"
        " ORDER BY f.rowid DESC LIMIT ?"
    )
    return [r[0] for r in conn.execute(sql, (expr, scope.low, scope.high, *extra_args, limit))]


def _bm25(conn: sqlite3.Connection, clauses: list[Clause], rowids: list[int]) -> dict[int, float]:
    """bm25 of ``clauses`` (all required) for ``rowids``, in one pass over their rowid range.

    "+rowid" keeps the IN list a plain filter (one index lookup per value would recount the
    words' postings each time); as a WHERE filter it also spares bm25 for rows not wanted.
    """
    marks = ",".join("?" * len(rowids))
    return dict(
        conn.execute(
            "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?"
            f" AND rowid BETWEEN ? AND ? AND +rowid IN ({marks})",
            (" AND ".join(c.fts() for c in clauses), min(rowids), max(rowids), *rowids),
        )
    )


def _ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    """Best bm25 (most negative) first, newest first among equals."""
    return sorted(scores.items(), key=lambda item: (item[1], -item[0]))


def _rank_all(
    conn: sqlite3.Connection, query: Query, density: Density, scope: Scope, limit: int
) -> list[tuple[int, float]]:
    """AND: the newest candidates matching everything, ranked by bm25 of the scoring clauses.

    A rare clause beside frequent ones ("the zorblax") is ranked differently: every match of
    the rare clauses is a candidate (the frequent word must not hide the rare word's best,
    older match), and only the best are then checked for the frequent clauses, a seek each;
    FTS5's own AND would step through the frequent word's whole list (30 ms at 1M).
    """
    scoring = density.scoring(query.clauses)
    rarest = min((density.share[c] for c in query.clauses), default=1.0) * density.indexed
    others = [c for c in query.clauses if c not in scoring]
    if scoring and others and all(map(density.common, others)) and rarest <= EXACT_MATCHES // 2:
        candidates = _newest(conn, query.expression(scoring), scope, EXACT_MATCHES)
        scores = dict.fromkeys(candidates, 0.0)
        if candidates:
            scores.update(_bm25(conn, scoring, candidates))
        return _verified(conn, query, others, _ranked(scores), limit)
    candidates = _newest(conn, query.expression(), scope, CANDIDATES)
    scores = dict.fromkeys(candidates, 0.0)
    if candidates and scoring:
        scores.update(_bm25(conn, scoring, candidates))
    return _ranked(scores)


def _verified(
    conn: sqlite3.Connection, query: Query, others: list[Clause], ranked: list[tuple[int, float]],
    limit: int,
) -> list[tuple[int, float]]:
    """The first ``limit`` of ``ranked`` that also hold the frequent clauses ``others``.

    A plain frequent word is looked for in the indexed text itself (``text.has_word``): FTS5
    would seek through its list of hundreds of thousands of messages for each row (~0.7 ms).
    Anything else (a phrase, CJK) is checked by FTS5, one row at a time.
    """
    plain = all(len(c.phrases) == 1 and len(c.phrases[0].tokens) == 1 and not c.phrases[0].prefix
                and not is_cjk(c.phrases[0].tokens[0]) for c in others)
    kept: list[tuple[int, float]] = []
    for start in range(0, len(ranked), 2 * limit):
        batch = ranked[start : start + 2 * limit]
        if plain:
            texts = _indexed_texts(conn, [rowid for rowid, _ in batch])
            matching = {rowid for rowid, text in texts.items()
                        if all(has_word(text, c.phrases[0].words[0]) for c in others)}
        else:
            matching = {rowid for rowid, _ in batch if conn.execute(
                "SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?",
                (query.expression(), rowid)).fetchone()}
        kept.extend(pair for pair in batch if pair[0] in matching)
        if len(kept) >= limit:
            break
    return kept[:limit]


def _indexed_texts(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    """Each message's text as far as the index sees it (head and tail of long ones); not
    cleaned, which costs more than it changes for a plain word."""
    marks = ",".join("?" * len(rowids))
    texts = {r[0]: r[1] + "\n" + r[2] for r in conn.execute(
        f"SELECT id, head, tail FROM long_messages WHERE id IN ({marks})", rowids)}
    rest = [rowid for rowid in rowids if rowid not in texts]
    if rest:
        texts.update((r[0], r[1] or "") for r in conn.execute(
            f"SELECT id, content FROM messages WHERE id IN ({','.join('?' * len(rest))})", rest))
    return texts


def _rank_any(
    conn: sqlite3.Connection, query: Query, density: Density, scope: Scope, limit: int
) -> list[tuple[int, float]]:
    """OR: each clause's newest candidates, scored clause by clause and summed.

    bm25 of an OR query is the sum of its parts' bm25, so this is exact for rows inside every
    clause's window; giving each its own window keeps a rare word's older hits from being
    crowded out by a common word's recent ones. A hit on a near-universal word alone is noise,
    so those are left out.
    """
    pool = [c for c in query.topical() if not density.common(c)] or list(query.topical())
    scoring = set(density.scoring(tuple(pool)))
    per_clause = max(limit, CANDIDATES // len(pool))
    scores: dict[int, float] = {}
    for clause in pool:
        candidates = _newest(conn, query.expression([clause]), scope, per_clause)
        part = _bm25(conn, [clause], candidates) if candidates and clause in scoring else {}
        for rowid in candidates:
            scores[rowid] = scores.get(rowid, 0.0) + part.get(rowid, 0.0)
    return _ranked(scores)


def _hits(
    conn: sqlite3.Connection, ranked: list[tuple[int, float]], highlights: list[Highlight]
) -> list[SearchHit]:
    """The final hits: metadata by primary key, snippets from a bounded head and tail."""
    if not ranked:
        return []
    rowids = [rowid for rowid, _ in ranked]
    marks = ",".join("?" * len(rowids))
    # (session_id, role, created, head, tail or None, tool names) for each hit
    rows = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT id, session_id, role, created, head, tail, tool_names FROM long_messages"
            f" WHERE id IN ({marks})",
            rowids,
        )
    }
    short = [rowid for rowid in rowids if rowid not in rows]
    if short:
        rows.update(
            (row[0], row[1:])
            for row in conn.execute(
                "SELECT id, session_id, role, created, content, NULL,"
                " (SELECT trim(tool_names || ' ' || coalesce(tool_args, '')) FROM messages_fts_source s"
                " WHERE s.id = m.id)"
                f" FROM messages m WHERE id IN ({','.join('?' * len(short))})",
                short,
            )
        )
    return [
        SearchHit(
            session_id=rows[rowid][0],
            message_id=rowid,
            role=rows[rowid][1],
            snippet=snippet(rows[rowid][3], highlights, tail=rows[rowid][4], extra=rows[rowid][5]),
            created=rows[rowid][2],
            score=-score or 0.0,
        )
        for rowid, score in ranked
        if rowid in rows
    ]


# --------------------------------------------------------------------------- sessions


@dataclass(frozen=True)
class SessionHit:
    """One session that matched a search: its best snippet and its score."""

    session_id: int
    title: str | None
    summary: str | None
    snippet: str
    last_activity: float
    score: float


def search_sessions(conn: sqlite3.Connection, query: Query, limit: int) -> list[SessionHit]:
    """Sessions whose title or summary has any of the query's words, or a paraphrase of them,
    best first (ranking: ``recall.py``).

    Any rather than all: a summary is a few sentences, so a topical question ("how did we fix
    the flaky upload test") rarely shares every word with it; bm25 ranks those sharing more
    and rarer words first.
    """
    ranked, terms = rank_sessions(conn, query, limit)
    if not ranked:
        return []
    rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT id, title, summary, last_activity FROM sessions"
        f" WHERE id IN ({','.join('?' * len(ranked))})", [sid for sid, _ in ranked])}
    highlights = [h for t in terms for p in t.clause.phrases for h in p.highlights()]
    return [
        SessionHit(
            session_id=sid, title=rows[sid][0], summary=rows[sid][1],
            snippet=snippet(rows[sid][1] or rows[sid][0] or "", highlights, extra=rows[sid][0] or ""),
            last_activity=rows[sid][2], score=score,
        )
        for sid, score in ranked
    ]

