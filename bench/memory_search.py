"""Benchmark MemoryStore search and append at scale, next to a naive FTS5 baseline.

    python bench/memory_search.py [--n 1000000] [--db PATH] [--rebuild]

Builds (once, cached under bench/.data/ keyed by N) a database of N synthetic messages with
Zipf-distributed English-like words, then prints the insert rate, DB size, single-append latency
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
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlite_utils import Database  # noqa: E402

from hermes_tui.memory.store import MemoryStore  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent / ".data"
SEED = 20240611

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
        return int(round(20 * 20 ** self.rng.random()))

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


def build(path: Path, n: int) -> None:
    """Fill a fresh DB with n messages through the store's bulk path; record the insert rate."""
    tmp = path.with_name(path.name + ".building")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    gen = TextGenerator()
    start_epoch = time.time() - 2 * 365 * 86400
    done = 0
    insert_seconds = 0.0
    last_report = time.perf_counter()
    with MemoryStore(tmp) as store:
        while done < n:
            rows = gen.session(start_epoch + done * 60.0)[: n - done]
            t0 = time.perf_counter()
            sid = store.new_session(source="bench")
            done += store.bulk_add_messages(sid, rows)
            insert_seconds += time.perf_counter() - t0
            if time.perf_counter() - last_report > 15:
                last_report = time.perf_counter()
                print(f"  built {done:,}/{n:,} messages ({done / insert_seconds:,.0f} msgs/s)",
                      flush=True)
    db = Database(tmp)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
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
    """The obvious query: every match ranked by bm25, top 20, same quoted words as the store."""
    sql = (
        "SELECT m.id, m.session_id, m.role, m.created,"
        " snippet(messages_fts, -1, char(2), char(3), '…', 16)"
        " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
        " WHERE messages_fts MATCH :q ORDER BY messages_fts.rank LIMIT 20"
    )

    def search(query: str) -> list[int]:
        words = re.findall(r"[^\W_]+", query.lower())
        expr = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [row["id"] for row in db.query(sql, {"q": expr})]

    return search


def append_latency(store: MemoryStore, gen: TextGenerator, count: int) -> list[float]:
    """Time single add_message calls, then delete them so the cached DB keeps its N messages."""
    texts = [gen.text(gen.message_length()) for _ in range(count)]
    sid = store.new_session(source="bench-append")
    seconds = []
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        store.add_message(sid, "user" if i % 2 == 0 else "assistant", text)
        seconds.append(time.perf_counter() - t0)
    db = Database(store.path)
    with db.atomic():
        db.execute("DELETE FROM messages WHERE session_id = ?", [sid])
        db.execute("DELETE FROM sessions WHERE id = ?", [sid])
    db.close()
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
    with MemoryStore(path) as store:
        db = Database(path)
        (messages,) = db.execute("SELECT count(*) FROM messages").fetchone()
        size_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6

        time_each(store.search, queries + frequent)  # warm the page cache
        store_q, store_hits = time_each(store.search, queries)
        store_f, _ = time_each(store.search, frequent)
        print("running the naive baseline (slow by design) ...", flush=True)
        naive = naive_search(db)
        naive_q, naive_hits = time_each(naive, queries)
        naive_f, _ = time_each(naive, frequent)
        appends = append_latency(store, TextGenerator(seed=SEED + 2), args.appends)
        db.close()

    overlap = [
        len(set(ids) & {h.message_id for h in hits}) / len(ids)
        for ids, hits in zip(naive_hits, store_hits)
        if ids
    ]
    print()
    print(f"MemoryStore benchmark: {messages:,} messages in {path} ({size_mb:,.0f} MB incl. WAL)")
    if stats:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(stats["built"]))
        rate = stats["insert_rate"]
        print(f"  insert rate (bulk_add_messages): {rate:,.0f} msgs/s (built {when})")
    a50, _, a99, amax = percentiles(appends)
    print(f"  add_message x{len(appends)}: p50 {a50:.3f} ms, p99 {a99:.3f} ms, max {amax:.2f} ms")
    print()
    print(f"  {'search latency (ms)':<28}{'n':>5}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}")
    print(row("store: 1-3 word queries", store_q))
    print(row("naive: 1-3 word queries", naive_q))
    print(row("store: 10 frequent words", store_f))
    print(row("naive: 10 frequent words", naive_f))
    print(row("store: all", store_q + store_f))
    print(row("naive: all", naive_q + naive_f))
    s, n = percentiles(store_q + store_f), percentiles(naive_q + naive_f)
    print(f"  {'ratio naive / store':<33}{n[0] / s[0]:>10.1f}{n[1] / s[1]:>10.1f}"
          f"{n[2] / s[2]:>10.1f}{n[3] / s[3]:>10.1f}")
    print()
    print(f"  top-20 overlap with the naive ranking: mean {statistics.mean(overlap):.0%} over "
          f"{len(overlap)} queries the naive AND query answers")
    slowest = sorted(zip(store_q + store_f, queries + frequent), reverse=True)[:5]
    print("  slowest store queries: " + ", ".join(f"{q!r} {t * 1e3:.1f} ms" for t, q in slowest))


if __name__ == "__main__":
    main()
