"""Benchmark MemoryStore search and append at scale, next to a naive FTS5 baseline.

    python bench/memory_search.py [--n 1000000] [--db PATH] [--rebuild]

Builds (once, cached under bench/.data/ keyed by N) a database of N synthetic messages with
Zipf-distributed English-like words, plus the cases that once made search explode: fifty tool
outputs of 1-10 MB, and messages in which a query word repeats 10,000 times. Then it prints the
insert rate, DB size, single-append latency (paced as a live session writes, and back to back)
and search latency percentiles for the store and, over the same queries, for the naive query
``MATCH ... ORDER BY rank LIMIT 20`` (what sqlite-utils' ``Table.search`` runs; sent through
``Database.query`` because the index's content is a view, which ``Table.search`` cannot find).
Prints figures; never asserts a time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlite_utils import Database

from hermes_tui.memory.records import INSERT_MESSAGE_SQL, message_row
from hermes_tui.memory.store import MemoryStore
from hermes_tui.memory.text import index_text

DATA_DIR = Path(__file__).resolve().parent / ".data"
SEED = 20240611
APPEND_PACE = 0.02
"""Seconds between timed appends: faster than any agent writes (a turn stores a few messages
and re-saves a streaming answer once a second), and time for the upkeep thread to run."""

# The head of the distribution: common English words, most frequent first.
COMMON = """
the of and to a in is it that for you was with on as have be at not this but by from are or
i they we an his her can will all would there their what so if about which when one do no
more out up my other some time into could them than then only its like just also use how our
two first new because any these may way even most after over should well where much before
through back good need make see here those such each many very still work get both file code
error run test data function value list system user change line set name call output return
""".split()

TOPICAL = """
python server config database query index table column session message memory search result
install package version module import class method object string number array json yaml path
directory folder script command shell terminal process thread worker request response header
token model prompt agent skill tool bash git commit branch merge diff patch build deploy docker
container image network port socket timeout retry cache buffer stream event queue lock mutex
schema migration backup restore log debug trace warning exception stack frame memory leak
compile linker library binary release tag issue review ticket feature bug fix refactor rename
parser lexer grammar syntax regex pattern match replace split join sort filter reduce map
""".split()

SYLLABLES = (
    "ka lo mi ne ru ta ve so pi da gre mon tar sil ber con dex fal gor hin jul kes lum nor pel "
    "quin ras sen tol umb vor wel xan yor zel bra cro dri fle glo pra stri tru"
).split()


def build_vocabulary(rng: random.Random, size: int = 40_000) -> list[str]:
    """Common words first, then topical, then invented words for a long, rare tail."""
    vocab = list(dict.fromkeys(COMMON + TOPICAL))
    seen = set(vocab)
    while len(vocab) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    return vocab


class TextGenerator:
    """Seeded English-like text: Zipf word frequencies (s = 1), sentences, punctuation."""

    def __init__(self, seed: int = SEED) -> None:
        self.vocab = build_vocabulary(random.Random(SEED))  # one vocabulary whatever the seed
        self.rng = random.Random(seed)
        ranks = range(1, len(self.vocab) + 1)
        self.cum_weights = list(itertools.accumulate(1.0 / rank for rank in ranks))

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum_weights, k=k)

    def text(self, n_words: int) -> str:
        words = self.words(n_words)
        out: list[str] = []
        i = 0
        while i < len(words):
            n = self.rng.randint(5, 18)
            sentence = words[i : i + n]
            i += n
            sentence[0] = sentence[0].capitalize()
            if len(sentence) > 8 and self.rng.random() < 0.4:
                sentence[4] += ","
            out.append(" ".join(sentence) + self.rng.choice(".....?!"))
        return " ".join(out)

    def message_length(self) -> int:
        """20..400 words, log-uniform: mostly short chat turns, some long answers."""
        return round(20 * 20 ** self.rng.random())

    def session(self, start: float) -> list[dict]:
        rows: list[dict] = []
        created = start
        for i in range(self.rng.randint(20, 200)):
            created += self.rng.uniform(1, 120)
            role = "user" if i % 2 == 0 else "assistant"
            row = {"role": role, "content": self.text(self.message_length()), "created": created}
            if role == "assistant" and self.rng.random() < 0.15:
                tool = self.rng.choice(("run_bash", "read_file", "write_file", "search_memory"))
                call_id = f"call_{self.rng.getrandbits(40):x}"
                row["tool_calls"] = [
                    {"id": call_id, "type": "function",
                     "function": {"name": tool, "arguments": '{"path": "notes.md"}'}}
                ]
                rows.append(row)
                rows.append({"role": "tool", "content": self.text(self.message_length()),
                             "tool_call_id": call_id, "name": tool, "created": created + 0.5})
                continue
            rows.append(row)
        return rows


HUGE_MESSAGES = 50
HUGE_MB = (1, 10)
REPEATED = ("compile", "failed", "timeout", "error", "the")
"""Words that fill the repeat messages, 10,000 times each; all are queried."""
REPEAT_MESSAGES = 20
REPEATS = 10_000


def hostile_rows(gen: TextGenerator, created: float) -> list[dict]:
    """Huge tool outputs (pieces of generated text, repeated) and word-repeat messages."""
    rng = random.Random(SEED + 3)
    pieces = [gen.text(6000) for _ in range(16)]  # ~40 KB each
    rows: list[dict] = []
    for i in range(HUGE_MESSAGES):
        size = int(rng.uniform(*HUGE_MB) * 1_000_000)
        parts: list[str] = []
        total = 0
        while total < size:
            parts.append(rng.choice(pieces))
            total += len(parts[-1])
        rows.append({"role": "tool", "name": "read_file", "tool_call_id": f"huge{i}",
                     "content": "\n".join(parts)[:size], "created": created + i})
    for i in range(REPEAT_MESSAGES):
        word = REPEATED[i % len(REPEATED)]
        text = " ".join([word, "compile failed"][i % 2] for _ in range(REPEATS))
        rows.append({"role": "tool", "name": "run_bash", "tool_call_id": f"rep{i}",
                     "content": gen.text(50) + " " + text, "created": created + 100 + i})
    return rows


BUILD_BATCH = 20_000
"""Messages per build transaction: the FTS index takes big batches far faster."""


def _insert_sessions(store: MemoryStore, sessions: list[list[dict]]) -> int:
    """Many sessions in one transaction, through the store's own row format and triggers."""
    with store._write() as conn:  # bench-only batching across sessions
        for rows in sessions:
            cur = conn.execute(
                "INSERT INTO sessions (source, started, last_activity) VALUES ('bench', ?, ?)",
                (rows[0]["created"], rows[-1]["created"]),
            )
            conn.executemany(INSERT_MESSAGE_SQL,
                             [message_row(cur.lastrowid, r, r["created"]) for r in rows])
    return sum(map(len, sessions))


def build(path: Path, n: int) -> None:
    """Fill a fresh DB with n messages (the hostile ones spread through the history) in
    batched transactions; record the insert rate."""
    tmp = path.with_name(path.name + ".building")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    gen = TextGenerator()
    start_epoch = time.time() - 2 * 365 * 86400
    done = 0
    insert_seconds = 0.0
    last_report = time.perf_counter()
    hostile = hostile_rows(gen, start_epoch)
    every = max(1, n // (len(hostile) + 1))
    placed = 0
    with MemoryStore(tmp) as store:
        while done < n:
            batch: list[list[dict]] = []
            while done + sum(map(len, batch)) < n and sum(map(len, batch)) < BUILD_BATCH:
                at = done + sum(map(len, batch))
                rows = gen.session(start_epoch + at * 60.0)[: n - at]
                while hostile and at + len(rows) >= every * (placed + 1):
                    rows.append({**hostile.pop(), "created": rows[-1]["created"] + 1})
                    placed += 1
                batch.append(rows)
            t0 = time.perf_counter()
            done += _insert_sessions(store, batch)
            insert_seconds += time.perf_counter() - t0
            if time.perf_counter() - last_report > 15:
                last_report = time.perf_counter()
                print(f"  built {done:,}/{n:,} messages ({done / insert_seconds:,.0f} msgs/s)",
                      flush=True)
        print("  merging the index into one segment ...", flush=True)
        with store._write() as conn:  # a long-lived store is mostly merged
            conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    tmp.rename(path)
    stats = {"n": n, "insert_rate": n / insert_seconds, "built": time.time()}
    stats_path(path).write_text(json.dumps(stats))


def stats_path(db_path: Path) -> Path:
    return db_path.with_suffix(".json")


def percentiles(samples: list[float]) -> tuple[float, float, float, float]:
    """p50, p90, p99, max in milliseconds (nearest rank)."""
    ordered = sorted(samples)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))] * 1e3

    return rank(0.50), rank(0.90), rank(0.99), ordered[-1] * 1e3


def make_queries(vocab: list[str], count: int, seed: int = SEED + 1) -> list[str]:
    """1-3 words each; a word is common (top 100) 20%, mid-frequency 40%, rare 40% of the time."""
    rng = random.Random(seed)
    bands = ((0.2, vocab[:100]), (0.6, vocab[100:2000]), (1.0, vocab[2000:]))
    queries = []
    for _ in range(count):
        words = []
        for _ in range(rng.choice((1, 2, 2, 3))):
            r = rng.random()
            words.append(rng.choice(next(band for edge, band in bands if r < edge)))
        queries.append(" ".join(words))
    return queries


def time_each(fn: Callable[[str], list], queries: list[str]) -> tuple[list[float], list[list]]:
    seconds, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        results.append(fn(q))
        seconds.append(time.perf_counter() - t0)
    return seconds, results


def naive_search(db: Database) -> Callable[[str], list[int]]:
    """The obvious query: every match ranked by bm25, top 20, same quoted words as the store.

    Without snippet(): on the word-repeat and multi-megabyte messages FTS5's snippet() takes
    seconds to minutes, so the baseline measures ranking alone (a lower bound for it)."""
    sql = (
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH :q ORDER BY rank LIMIT 20"
    )

    def search(query: str) -> list[int]:
        words = re.findall(r"[^\W_]+", query.lower())
        expr = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [row["rowid"] for row in db.query(sql, {"q": expr})]

    return search


def append_latency(store: MemoryStore, gen: TextGenerator, count: int, pace: float = 0.0) -> list[float]:
    """Time single add_message calls ``pace`` seconds apart (0: back to back), then delete them
    so the cached DB keeps its N messages."""
    texts = [gen.text(gen.message_length()) for _ in range(count)]
    sid = store.new_session(source="bench-append")
    seconds = []
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        store.add_message(sid, "user" if i % 2 == 0 else "assistant", text)
        seconds.append(time.perf_counter() - t0)
        time.sleep(pace)
    with store._write() as conn:  # a plain delete (forgetting would rewrite the index)
        conn.execute("DELETE FROM messages WHERE session_id = ?", [sid])
        conn.execute("DELETE FROM sessions WHERE id = ?", [sid])
    return seconds


def plain_insert_latency(folder: Path, gen: TextGenerator, count: int) -> list[float]:
    """The same appends into a bare one-table SQLite file (WAL, synchronous=NORMAL, no index):
    the floor this machine allows right now, to read the store's figures against."""
    path = folder / "plain-insert-baseline.sqlite3"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, role TEXT, content TEXT, created REAL)")
    seconds = []
    for i in range(count):
        text = gen.text(gen.message_length())
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO m (role, content, created) VALUES (?, ?, ?)",
                     ("user" if i % 2 == 0 else "assistant", text, time.time()))
        conn.execute("COMMIT")
        seconds.append(time.perf_counter() - t0)
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return seconds


def row(label: str, samples: list[float]) -> str:
    p50, p90, p99, worst = percentiles(samples)
    return f"  {label:<28}{len(samples):>5}{p50:>10.2f}{p90:>10.2f}{p99:>10.2f}{worst:>10.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="messages in the DB")
    parser.add_argument("--db", type=Path, help="DB file (default bench/.data/memory-N.sqlite3)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild even if cached")
    parser.add_argument("--queries", type=int, default=200, help="1-3 word queries")
    parser.add_argument("--appends", type=int, default=500, help="timed single appends")
    args = parser.parse_args()

    path = args.db or DATA_DIR / f"memory-{args.n}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.rebuild or not path.exists():
        print(f"building {args.n:,} messages into {path} ...", flush=True)
        t0 = time.perf_counter()
        build(path, args.n)
        print(f"  built in {time.perf_counter() - t0:.0f} s (including text generation)")
    stats = json.loads(stats_path(path).read_text()) if stats_path(path).exists() else {}

    gen = TextGenerator()
    frequent = gen.vocab[:10]
    queries = make_queries(gen.vocab, args.queries)
    rng = random.Random(SEED + 4)
    rare = [w for w in gen.vocab[5000:] if len(w) > 5]
    mixed = [f"{rng.choice(frequent)} {rng.choice(rare)}" for _ in range(40)]
    hostile = [*REPEATED, "compile failed", "the error", "failed timeout", '"compile failed"',
               "compil*", "error OR timeout", "compile -failed", "tool:read_file error"]
    with MemoryStore(path) as store:
        db = Database(path)
        db.conn.create_function("hermes_index_text", 1, index_text, deterministic=True)
        (messages,) = db.execute("SELECT count(*) FROM messages").fetchone()
        (huge,) = db.execute("SELECT count(*) FROM messages WHERE length(content) > 1000000").fetchone()
        size_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6

        time_each(store.search, queries + frequent + hostile)  # warm the page cache
        # The upkeep thread keeps bm25's best for the frequent words just searched; let it
        # finish now rather than compete with the timed searches for the CPU.
        t0 = time.perf_counter()
        store.maintain()
        upkeep_seconds = time.perf_counter() - t0
        store_q, store_hits = time_each(store.search, queries)
        store_f, store_f_hits = time_each(store.search, frequent)
        store_h, _ = time_each(store.search, hostile)
        store_m, store_m_hits = time_each(store.search, mixed)
        print("running the naive baseline (slow by design) ...", flush=True)
        naive = naive_search(db)
        naive_q, naive_hits = time_each(naive, queries)
        naive_f, naive_f_hits = time_each(naive, frequent)
        naive_m, naive_m_hits = time_each(naive, mixed)
        appends = append_latency(store, TextGenerator(seed=SEED + 2), args.appends, pace=APPEND_PACE)
        burst = append_latency(store, TextGenerator(seed=SEED + 3), args.appends)
        plain = plain_insert_latency(path.parent, TextGenerator(seed=SEED + 2), args.appends)
        db.close()

    def overlap(naive_ids: list[list[int]], hits: list[list]) -> list[float]:
        return [len(set(ids) & {h.message_id for h in hs}) / len(ids)
                for ids, hs in zip(naive_ids, hits, strict=False) if ids]

    best_in_top3 = [ids[0] in {h.message_id for h in hs[:3]}
                    for ids, hs in zip(naive_m_hits, store_m_hits, strict=False) if ids]
    everything = store_q + store_f + store_h + store_m
    print()
    print(f"MemoryStore benchmark: {messages:,} messages ({huge} over 1 MB, {REPEAT_MESSAGES} with "
          f"a word repeated {REPEATS:,} times) in {path} ({size_mb:,.0f} MB incl. WAL)")
    if stats:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(stats["built"]))
        rate = stats["insert_rate"]
        print(f"  insert rate (bulk_add_messages): {rate:,.0f} msgs/s (built {when})")
    print(f"  upkeep round after the warm-up (merges, bm25's best for {len(frequent)} frequent "
          f"words, checkpoint): {upkeep_seconds:.1f} s, in the background in normal use")
    a50, _, a99, amax = percentiles(appends)
    r50, _, r99, rmax = percentiles(burst)
    b50, _, b99, bmax = percentiles(plain)
    print(f"  add_message x{len(appends)}, one every {APPEND_PACE * 1000:.0f} ms (a busy live session):"
          f" p50 {a50:.3f} ms, p99 {a99:.3f} ms, max {amax:.2f} ms")
    print(f"  add_message x{len(burst)} back to back (a burst no session makes; FTS5's crisis merge of"
          f" 64 segments lands in one append in 64): p50 {r50:.3f} ms, p99 {r99:.3f} ms, max {rmax:.2f} ms")
    print(f"  bare one-table insert, back to back, same run: p50 {b50:.3f} ms, p99 {b99:.3f} ms, max {bmax:.2f} ms")
    print()
    print(f"  {'search latency (ms)':<34}{'n':>5}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}")
    print(row("store: 1-3 word queries", store_q))
    print(row("naive: 1-3 word queries", naive_q))
    print(row("store: 10 frequent words", store_f))
    print(row("naive: 10 frequent words", naive_f))
    print(row("store: frequent + rare word", store_m))
    print(row("naive: frequent + rare word", naive_m))
    print(row("store: repeats, huge, syntax", store_h))
    print(row("store: all", everything))
    print(row("naive: all (no snippets)", naive_q + naive_f + naive_m))
    s, n = percentiles(store_q + store_f + store_m), percentiles(naive_q + naive_f + naive_m)
    print(f"  {'ratio naive / store (same sets)':<39}{n[0] / s[0]:>10.1f}{n[1] / s[1]:>10.1f}"
          f"{n[2] / s[2]:>10.1f}{n[3] / s[3]:>10.1f}")
    print()
    q_overlap, f_overlap = overlap(naive_hits, store_hits), overlap(naive_f_hits, store_f_hits)
    print(f"  top-20 overlap with bm25's top 20: 1-3 word queries mean {statistics.mean(q_overlap):.0%}"
          f" ({len(q_overlap)} queries); frequent words alone mean {statistics.mean(f_overlap):.0%},"
          f" min {min(f_overlap):.0%}")
    print(f"  frequent + rare word: bm25's best hit in the store's top 3 for "
          f"{sum(best_in_top3)}/{len(best_in_top3)} queries")
    slowest = sorted(zip(everything, queries + frequent + hostile + mixed, strict=False), reverse=True)[:5]
    print("  slowest store queries: " + ", ".join(f"{q!r} {t * 1e3:.1f} ms" for t, q in slowest))


if __name__ == "__main__":
    main()
