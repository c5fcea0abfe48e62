"""The skill index: one SQLite file beside the skills folder, shared by every Hermes process.

It holds what the files cannot: use counts and last-used times (using a skill never writes its
file), the hash and body of what Hermes last wrote (a file that changed since is the user's; the
body is the base F8 merges a pending proposal from), guard approvals bound to a file's hash, the
reasons files were skipped, and an FTS5 index of the skills (name, triggers, description and the
body's first ``LEAD_CHARS``; ``porter unicode61``) ranked by bm25 with field weights, the request
widened by the paraphrase table in ``synonyms.py`` — the only ranker, used by search, paging, the per-turn hint and the Skills pane. The rest of a long body sits
in a second FTS5 table that is read only when a page is not full, so a word deep in a body is still
found without every search paying for it. Rows are refreshed from the files by (mtime, size), so a
lookup never rescans the library; the files and search tables are a cache of the files
(``index_schema._rebuild_search``), the rest is bookkeeping.

It also keeps what each use of a skill led to (``uses``: the turn finished, ended in an error, or
the user corrected it with /retry or /undo), which skills are pinned, and which were archived.
The ranker multiplies bm25 by a usefulness factor drawn from those outcomes (``usefulness_sql``),
so one ranker serves search, hints and the prompt index alike.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from hermes_tui.db import connect, enable_wal, immediate, prepare
from hermes_tui.memory.text import STOP_WORDS, WORD
from hermes_tui.skills.index_schema import INDEX_SCHEMA, ROW_SQL, Entry, Row, row_of
from hermes_tui.skills.lifecycle import FAILING_USES, REVIEW_FLAG, Provenance, TurnCost
from hermes_tui.skills.synonyms import expansions

# bm25 weights, in column order: name, triggers (with tags), description, the body's lead.
# Measured on the 1,301 published skills (bench/router_recall.py): ranking the lead in the same
# pass as the description, at a fifth of its weight, is what finds a skill whose "when to use"
# section says what the request says; the whole body costs too much per search and its length
# drowns a short description's match (FTS5's bm25 normalises by the whole row's length).
WEIGHTS = (3.0, 4.0, 2.0, 0.4)
LEAD_CHARS = 4000
MAX_QUERY_TERMS = 32
# The request's own words count this many times the words ``synonyms.py`` adds for them (bm25
# sums over the phrases of an OR query, so a phrase written twice weighs twice).
OWN_WEIGHT = 2
# A word that this share of the skills use to say what they are for tells the hint nothing
# (measured on the published corpus); below FEW_SKILLS skills a share says nothing either.
COMMON_SHARE = 0.05
FEW_SKILLS = 40
MAX_QUERY_CHARS = 2000

# The outcomes a use can end with, and which of them count against a skill ("cancelled" and an
# unfinished turn count neither way).
OUTCOMES = ("done", "error", "corrected", "cancelled")
FAILED = ("error", "corrected")
# An outcome's weight halves once it is USEFUL_HALF_LIFE old (1 / (1 + age / half-life)), so recent
# uses move a skill most.
USEFUL_HALF_LIFE = 30 * 86400.0


def usefulness_sql(now: float) -> str:
    """A subquery of (rel, factor): 2·(1 + successes) / (2 + successes + failures), each outcome
    weighted by its age. 1.0 is neutral (never used, or as many failures as successes); it tends
    to 2 for a skill that keeps working and to 0 for one that keeps failing. ``now`` is a float
    from the manager's clock, formatted into the SQL (never user text)."""
    weight = f"1.0 / (1.0 + max(0.0, {float(now)!r} - at) / {USEFUL_HALF_LIFE!r})"
    failed = ", ".join(f"'{o}'" for o in FAILED)
    return (f"(SELECT rel, 2.0 * (1.0 + total(CASE WHEN outcome = 'done' THEN {weight} END)) / "
            f"(2.0 + total(CASE WHEN outcome = 'done' OR outcome IN ({failed}) THEN {weight} END)) AS factor "
            "FROM uses GROUP BY rel)")


class Ranked(NamedTuple):
    """A search result: the skill, its score (bm25 times usefulness) and its bm25 alone; lower is better."""

    row: Row
    score: float
    match: float


USABLE = "f.name IS NOT NULL AND f.skipped = '' AND f.flag = ''"
_FAILED_SQL = ", ".join(f"'{o}'" for o in FAILED)
# Skills whose judged uses (at least FAILING_USES) failed more often than they succeeded, unless
# pinned: they leave the prompt index and the hints, and are flagged for review.
FAILING = (f"SELECT rel FROM uses WHERE rel NOT IN (SELECT rel FROM pinned) GROUP BY rel "
           f"HAVING count(CASE WHEN outcome = 'done' OR outcome IN ({_FAILED_SQL}) THEN 1 END) >= {FAILING_USES} "
           f"AND count(CASE WHEN outcome IN ({_FAILED_SQL}) THEN 1 END) > count(CASE WHEN outcome = 'done' THEN 1 END)")
# Which skills age (only those Hermes wrote, and never a pinned one), and when one was last touched.
_AGES = "f.learned = 1 AND f.rel NOT IN (SELECT rel FROM pinned)"
_ACTIVITY = "max(coalesce(u.last_used, 0), f.created, f.updated)"


def query_words(query: str) -> list[str]:
    """The searchable words of a request: lowercased, stop words dropped, de-duplicated, capped."""
    words = dict.fromkeys(w for w in WORD.findall(query[:MAX_QUERY_CHARS].lower()) if w not in STOP_WORDS)
    return list(words)[:MAX_QUERY_TERMS]


def match_expression(query: str) -> str:
    """A MATCH string of quoted terms joined by OR: the request's words (``OWN_WEIGHT`` times),
    then what ``synonyms.py`` says skills call the same things; '' when the query has no
    searchable word."""
    words = query_words(query)
    if not words:
        return ""
    added = [w for w in dict.fromkeys(expansions(WORD.findall(query[:MAX_QUERY_CHARS].lower())))
             if w not in STOP_WORDS and w not in words]
    return " OR ".join(f'"{w}"' for w in words * OWN_WEIGHT + added[:MAX_QUERY_TERMS])


_SEARCH, _REST = "skills_search", "skills_rest"


def _split_body(body: str) -> tuple[str, str]:
    """The body's first ``LEAD_CHARS`` (cut at a space, so no word is split) and the rest."""
    if len(body) <= LEAD_CHARS:
        return body, ""
    cut = body.rfind(" ", LEAD_CHARS // 2, LEAD_CHARS) + 1 or LEAD_CHARS
    return body[:cut], body[cut:]


def _matches(table: str) -> str:
    """The FROM/WHERE of ``table``'s matches of parameter ?1; a match deep in a body that the lead
    already found is left out. ``table`` is one of the two constants, never user text."""
    where = f"{table} MATCH ?1"
    if table == _REST:
        where += f" AND rowid NOT IN (SELECT rowid FROM {_SEARCH} WHERE {_SEARCH} MATCH ?1)"
    return f"FROM {table} WHERE {where}"


def _unindex(conn: sqlite3.Connection, row_id: int) -> None:
    conn.execute(f"DELETE FROM {_SEARCH} WHERE rowid = ?", (row_id,))
    conn.execute(f"DELETE FROM {_REST} WHERE rowid = ?", (row_id,))


class SkillIndex:
    """The database side of the library. Not thread-safe by itself: the manager serialises calls."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        prepare(self.path)  # SQLite gives the WAL and SHM files the same mode
        self.conn = connect(self.path, check_same_thread=False)
        enable_wal(self.conn)
        self.conn.execute("PRAGMA synchronous = NORMAL")
        with immediate(self.conn):
            INDEX_SCHEMA.apply(self.conn)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with immediate(self.conn):
            yield self.conn

    # -- refresh

    def stats(self) -> dict[str, tuple[int, int]]:
        """rel -> (mtime_ns, size) for every indexed file."""
        return {rel: (m, s) for rel, m, s in self.conn.execute("SELECT rel, mtime_ns, size FROM files")}

    def upsert(self, conn: sqlite3.Connection, entry: Entry) -> None:
        old = conn.execute("SELECT id FROM files WHERE rel = ?", (entry.rel,)).fetchone()
        if old is not None:
            _unindex(conn, old[0])
        approved = conn.execute("SELECT sha FROM approved WHERE rel = ?", (entry.rel,)).fetchone()
        flag = "" if approved is not None and approved[0] == entry.sha else entry.flag
        if not flag and conn.execute("SELECT 1 FROM inbox WHERE rel = ?", (entry.rel,)).fetchone():
            flag = REVIEW_FLAG
        values = (
            entry.mtime_ns, entry.size, entry.depth, entry.sha, entry.base, entry.skipped, flag, entry.notice,
            entry.description, json.dumps(list(entry.triggers)), json.dumps(list(entry.keywords)),
            json.dumps(list(entry.platforms)), entry.version, entry.created, entry.updated, int(entry.learned),
        )
        columns = ("mtime_ns, size, depth, sha, base, skipped, flag, notice, description, triggers, keywords, "
                   "platforms, version, created, updated, learned")
        if old is None:
            cur = conn.execute(
                f"INSERT INTO files (rel, {columns}) VALUES (?, {', '.join('?' * len(values))})",
                (entry.rel, *values),
            )
            row_id = cur.lastrowid
        else:
            sets = ", ".join(f"{c.strip()} = ?" for c in columns.split(","))
            conn.execute(f"UPDATE files SET {sets} WHERE id = ?", (*values, old[0]))
            row_id = old[0]
        if entry.base is not None and not entry.skipped:
            lead, rest = _split_body(entry.body)
            conn.execute(
                "INSERT INTO skills_search (rowid, name, triggers, description, lead) VALUES (?, ?, ?, ?, ?)",
                (row_id, entry.base.replace("-", " "), " ".join((*entry.triggers, *entry.keywords)),
                 entry.description, lead),
            )
            if rest:
                conn.execute("INSERT INTO skills_rest (rowid, rest) VALUES (?, ?)", (row_id, rest))
        if entry.legacy_uses > 0:  # migrate metadata.use_count once; the file is never written for it
            conn.execute("INSERT OR IGNORE INTO usage (rel, use_count, last_used) VALUES (?, ?, 0)",
                         (entry.rel, entry.legacy_uses))

    def remove(self, conn: sqlite3.Connection, rels: Iterable[str]) -> None:
        for rel in rels:
            row = conn.execute("SELECT id FROM files WHERE rel = ?", (rel,)).fetchone()
            if row is not None:
                _unindex(conn, row[0])
                conn.execute("DELETE FROM files WHERE id = ?", row)

    def assign_names(self, conn: sqlite3.Connection, namespace: Callable[[str, int], str]) -> None:
        """Give every usable file its lookup name: the plain name, or ``source/name`` on a clash.

        The shallowest file (then the first by path) keeps the plain name; none is dropped.
        """
        rows = conn.execute(
            "SELECT id, rel, base, name, depth FROM files WHERE base IS NOT NULL AND skipped = '' "
            "ORDER BY base, depth = 0, depth, rel"
        ).fetchall()
        taken: set[str] = set()
        wanted: dict[int, str] = {}
        for row_id, rel, base, _name, depth in rows:
            name = base if base not in taken else f"{namespace(rel, depth)}/{base}"
            while name in taken:
                name = f"{name}-2"
            taken.add(name)
            wanted[row_id] = name
        for row_id, _rel, _base, name, _depth in rows:
            if wanted[row_id] != name:
                conn.execute("UPDATE files SET name = ? WHERE id = ?", (wanted[row_id], row_id))
        conn.execute("UPDATE files SET name = NULL WHERE (base IS NULL OR skipped != '') AND name IS NOT NULL")

    # -- queries

    def by_name(self, name: str) -> Row | None:
        found = self.conn.execute(f"{ROW_SQL} WHERE f.name = ?", (name,)).fetchone()
        return row_of(found) if found else None

    def by_rel(self, rel: str) -> Row | None:
        found = self.conn.execute(f"{ROW_SQL} WHERE f.rel = ?", (rel,)).fetchone()
        return row_of(found) if found else None

    def usable(self, limit: int = -1, offset: int = 0) -> list[Row]:
        """Most used first, then most recently updated, then by name."""
        rows = self.conn.execute(
            f"{ROW_SQL} WHERE {USABLE} ORDER BY coalesce(u.use_count, 0) DESC, f.updated DESC, f.name "
            "LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [row_of(r) for r in rows]

    def count_usable(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM files f WHERE {USABLE}").fetchone()[0]

    def for_prompt(self, limit: int, now: float, stale_before: float) -> list[Row]:
        """The system-prompt index: the most useful (see ``usefulness_sql``), then the most used, then
        the newest learned. Stale skills (learned, unpinned, untouched since ``stale_before``) are left out."""
        rows = self.conn.execute(
            f"{ROW_SQL} LEFT JOIN {usefulness_sql(now)} q ON q.rel = f.rel "
            f"WHERE {USABLE} AND NOT ({_AGES} AND {_ACTIVITY} < ?) AND f.rel NOT IN ({FAILING}) "
            "ORDER BY coalesce(q.factor, 1.0) DESC, coalesce(u.use_count, 0) DESC, f.learned DESC, f.created DESC, "
            "f.name LIMIT ?",
            (stale_before, limit),
        )
        return [row_of(r) for r in rows]

    def aged(self, before: float) -> list[Row]:
        """Usable skills that age (learned, not pinned) and were last touched before ``before``."""
        rows = self.conn.execute(f"{ROW_SQL} WHERE {USABLE} AND {_AGES} AND {_ACTIVITY} < ? ORDER BY f.rel",
                                 (before,))
        return [row_of(r) for r in rows]

    def held_back(self) -> list[Row]:
        """Quarantined skills and skipped files, for the Skills pane and the web."""
        rows = self.conn.execute(f"{ROW_SQL} WHERE f.skipped != '' OR (f.flag != '' AND f.name IS NOT NULL) "
                                 "ORDER BY f.rel")
        return [row_of(r) for r in rows]

    def search(self, query: str, limit: int, offset: int = 0, *, now: float | None = None) -> list[Ranked]:
        """Usable skills ranked by weighted bm25 times usefulness (best first) with their scores
        (lower is better; ``now`` dates the outcomes, default the wall clock).

        One pass ranks name, triggers, description and the body's lead together; skills that
        match only further down their body follow, ranked only when a page reaches them.
        """
        now = time.time() if now is None else now
        expression = match_expression(query)
        if not expression or limit <= 0:
            return []
        found = self._ranked(_SEARCH, expression, limit, offset, now)
        if len(found) == limit:
            return found
        rest = self._ranked(_REST, expression, limit - len(found), max(0, offset - self._count(_SEARCH, expression)),
                            now)
        return found + rest

    def _count(self, table: str, expression: str) -> int:
        return self.conn.execute(
            f"SELECT count(*) FROM (SELECT rowid {_matches(table)}) m JOIN files f ON f.id = m.rowid "
            f"WHERE {USABLE}",
            (expression,),
        ).fetchone()[0]

    def _ranked(self, table: str, expression: str, limit: int, offset: int, now: float) -> list[Ranked]:
        # Rank inside FTS5 first and join only the best few (quarantined rows are rare, so a
        # small overfetch covers them); fall back to ranking every match when it does not.
        wanted = limit + offset
        weights = ", ".join(map(str, WEIGHTS if table == _SEARCH else (1.0,)))
        for cap in (2 * wanted + 20, -1):
            rows = self.conn.execute(
                f"""SELECT r.*, m.score, m.score * coalesce(q.factor, 1.0) AS ranked FROM (
                        SELECT rowid, bm25({table}, {weights}) AS score {_matches(table)}
                         ORDER BY score LIMIT ?2) m
                      JOIN ({ROW_SQL} WHERE {USABLE}) r ON r.id = m.rowid
                      LEFT JOIN {usefulness_sql(now)} q ON q.rel = r.rel
                     ORDER BY ranked, r.name LIMIT ?3 OFFSET ?4""",
                (expression, cap, limit, offset),
            ).fetchall()
            if len(rows) == limit or cap == -1:
                break
            if self.conn.execute(f"SELECT count(*) {_matches(table)}",
                                 (expression,)).fetchone()[0] <= cap:
                break
        return [Ranked(row_of(r[:-2]), r[-1], r[-2]) for r in rows]

    def described_terms(self, query: str, rowids: list[int]) -> dict[int, int]:
        """For each skill in ``rowids``: how many distinct words of ``query`` its name, triggers or
        description contain (after stemming), leaving out words that many skills describe
        themselves with ("best", "learn": ``COMMON_SHARE`` of a library of at least ``FEW_SKILLS``).
        A relevance measure that, unlike bm25, does not depend on how many skills the library holds."""
        counts = dict.fromkeys(rowids, 0)
        if not rowids:
            return counts
        marks = ", ".join("?" * len(rowids))
        total = self.count_usable()
        for word in query_words(query):
            column = '{name triggers description} : "' + word + '"'
            if total >= FEW_SKILLS:
                (many,) = self.conn.execute(f"SELECT count(*) FROM {_SEARCH} WHERE {_SEARCH} MATCH ?",
                                            (column,)).fetchone()
                if many >= COMMON_SHARE * total:
                    continue
            found = self.conn.execute(
                f"SELECT rowid FROM {_SEARCH} WHERE {_SEARCH} MATCH ? AND rowid IN ({marks})", (column, *rowids))
            for (rowid,) in found:
                counts[rowid] += 1
        return counts

    def count_matches(self, query: str) -> int:
        expression = match_expression(query)
        return self._count(_SEARCH, expression) + self._count(_REST, expression) if expression else 0

    # -- bookkeeping

    def record_use(self, rel: str, now: float | None = None, turn: int | None = None) -> None:
        """Count a use; with ``turn`` (the user message's id) also open an outcome row for it."""
        now = time.time() if now is None else now
        with self.write() as conn:
            conn.execute(
                "INSERT INTO usage (rel, use_count, last_used) VALUES (?, 1, ?) "
                "ON CONFLICT(rel) DO UPDATE SET use_count = use_count + 1, last_used = excluded.last_used",
                (rel, now),
            )
            if turn is not None:
                conn.execute("INSERT INTO uses (rel, turn, at) VALUES (?, ?, ?)", (rel, turn, now))

    def touch(self, rel: str, now: float) -> None:
        """Restart a skill's age without counting a use."""
        with self.write() as conn:
            conn.execute("INSERT INTO usage (rel, use_count, last_used) VALUES (?, 0, ?) "
                         "ON CONFLICT(rel) DO UPDATE SET last_used = excluded.last_used", (rel, now))

    def finish_turn(self, turn: int, outcome: str, cost: TurnCost | None = None) -> int:
        """Give this turn's open uses their outcome and the turn's cost; how many there were."""
        cost = cost or TurnCost()
        with self.write() as conn:
            return conn.execute("UPDATE uses SET outcome = ?, model_calls = ?, tool_calls = ?, tokens = ? "
                                "WHERE turn = ? AND outcome = ''",
                                (outcome, cost.model_calls, cost.tool_calls, cost.tokens, turn)).rowcount

    def correct_turn(self, turn: int, now: float) -> int:
        """The user retried, undid or corrected this turn: each of its uses counts as corrected, and
        a skill learned from it gets a corrected use (the procedure it keeps did not work)."""
        with self.write() as conn:
            count = conn.execute("UPDATE uses SET outcome = 'corrected' WHERE turn = ?", (turn,)).rowcount
            learned = conn.execute("SELECT DISTINCT rel FROM learned WHERE turn = ? AND rel NOT IN "
                                   "(SELECT rel FROM uses WHERE turn = ?)", (turn, turn)).fetchall()
            for (rel,) in learned:  # one failure per turn: a skill the turn also used is demoted above
                conn.execute("INSERT INTO uses (rel, turn, at, outcome) VALUES (?, ?, ?, 'corrected')",
                             (rel, turn, now))
            return count + len(learned)

    def record_learned(self, rel: str, version: int, provenance: Provenance, now: float) -> None:
        """Remember the turn (and its cost) a version of ``rel`` was learned from."""
        cost = provenance.cost
        with self.write() as conn:
            conn.execute("INSERT INTO learned (rel, version, turn, session, model, model_calls, tool_calls, tokens, at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (rel, version, provenance.turn, provenance.session, provenance.model, cost.model_calls,
                          cost.tool_calls, cost.tokens, now))

    def failing(self) -> set[str]:
        """The rels of skills that failed more often than they worked (``FAILING``)."""
        return {rel for (rel,) in self.conn.execute(FAILING)}

    def cost_stats(self) -> dict[str, tuple[float | None, float | None, int | None, int | None]]:
        """rel -> (mean tool calls, mean tokens of its judged uses, tool calls and tokens of the turn
        its first version was learned from)."""
        found: dict[str, tuple[float | None, float | None, int | None, int | None]] = {}
        for rel, calls, tokens in self.conn.execute(
                "SELECT rel, avg(tool_calls), avg(tokens) FROM uses WHERE tool_calls IS NOT NULL GROUP BY rel"):
            found[rel] = (calls, tokens, None, None)
        for rel, calls, tokens in self.conn.execute(
                "SELECT rel, tool_calls, tokens FROM learned WHERE id IN (SELECT min(id) FROM learned GROUP BY rel)"):
            mean_calls, mean_tokens, _, _ = found.get(rel, (None, None, None, None))
            found[rel] = (mean_calls, mean_tokens, calls, tokens)
        return found

    def put_in_inbox(self, conn: sqlite3.Connection, rel: str, now: float) -> None:
        conn.execute("INSERT OR REPLACE INTO inbox (rel, at) VALUES (?, ?)", (rel, now))

    def inbox(self) -> list[str]:
        """The rels waiting for review, oldest first."""
        return [rel for (rel,) in self.conn.execute("SELECT rel FROM inbox ORDER BY at, rel")]

    def take_from_inbox(self, rel: str) -> None:
        """Accepted: the skill is offered (unless the guard flags it)."""
        with self.write() as conn:
            conn.execute("DELETE FROM inbox WHERE rel = ?", (rel,))
            conn.execute("UPDATE files SET flag = '' WHERE rel = ? AND flag = ?", (rel, REVIEW_FLAG))

    def outcomes(self) -> dict[str, dict[str, int]]:
        """rel -> {outcome: count} over every recorded use."""
        found: dict[str, dict[str, int]] = {}
        for rel, outcome, count in self.conn.execute("SELECT rel, outcome, count(*) FROM uses GROUP BY rel, outcome"):
            found.setdefault(rel, {})[outcome] = count
        return found

    def usefulness(self, now: float) -> dict[str, float]:
        return dict(self.conn.execute(f"SELECT rel, factor FROM {usefulness_sql(now)}").fetchall())

    def pinned(self) -> set[str]:
        return {rel for (rel,) in self.conn.execute("SELECT rel FROM pinned")}

    def pin(self, rel: str, pinned: bool = True) -> None:
        with self.write() as conn:
            if pinned:
                conn.execute("INSERT OR IGNORE INTO pinned (rel) VALUES (?)", (rel,))
            else:
                conn.execute("DELETE FROM pinned WHERE rel = ?", (rel,))

    def archived(self) -> list[tuple[str, str, str]]:
        """(name, rel in the library, path in the archive folder) of every archived skill, by name."""
        return list(self.conn.execute("SELECT name, rel, folder FROM archived ORDER BY name"))

    def archived_entry(self, name: str) -> tuple[str, str] | None:
        """(rel in the library, path in the archive folder) of the archived skill ``name``."""
        row = self.conn.execute("SELECT rel, folder FROM archived WHERE name = ?", (name,)).fetchone()
        return (row[0], row[1]) if row else None

    def set_archived(self, conn: sqlite3.Connection, name: str, rel: str, folder: str, at: float) -> None:
        conn.execute("INSERT OR REPLACE INTO archived (name, rel, folder, at) VALUES (?, ?, ?, ?)",
                     (name, rel, folder, at))

    def unset_archived(self, conn: sqlite3.Connection, name: str) -> None:
        conn.execute("DELETE FROM archived WHERE name = ?", (name,))

    def written_sha(self, rel: str) -> str | None:
        row = self.conn.execute("SELECT sha FROM written WHERE rel = ?", (rel,)).fetchone()
        return row[0] if row else None

    def written_body(self, rel: str) -> str | None:
        """The body Hermes last wrote to ``rel`` (a pending proposal's merge base), if known."""
        row = self.conn.execute("SELECT body FROM written WHERE rel = ?", (rel,)).fetchone()
        return row[0] if row else None

    def set_written(self, conn: sqlite3.Connection, rel: str, sha: str, body: str) -> None:
        conn.execute("INSERT OR REPLACE INTO written (rel, sha, body) VALUES (?, ?, ?)", (rel, sha, body))

    def approve(self, rel: str, sha: str) -> None:
        with self.write() as conn:
            conn.execute("INSERT OR REPLACE INTO approved (rel, sha) VALUES (?, ?)", (rel, sha))
            conn.execute("DELETE FROM inbox WHERE rel = ?", (rel,))  # approving in the pane accepts it too
            conn.execute("UPDATE files SET flag = '' WHERE rel = ? AND sha = ?", (rel, sha))

    def forget(self, conn: sqlite3.Connection, rel: str, *, keep_usage: bool = False) -> None:
        """Drop everything known about ``rel`` (the skill was deleted or moved)."""
        self.remove(conn, [rel])
        tables = ("written", "approved") if keep_usage else (
            "written", "approved", "usage", "uses", "pinned", "inbox", "learned")
        for table in tables:
            conn.execute(f"DELETE FROM {table} WHERE rel = ?", (rel,))

    def move_usage(self, conn: sqlite3.Connection, old: str, new: str) -> None:
        conn.execute("UPDATE OR IGNORE usage SET rel = ? WHERE rel = ?", (new, old))
        conn.execute("UPDATE uses SET rel = ? WHERE rel = ?", (new, old))
        conn.execute("UPDATE learned SET rel = ? WHERE rel = ?", (new, old))
        conn.execute("UPDATE OR IGNORE pinned SET rel = ? WHERE rel = ?", (new, old))
