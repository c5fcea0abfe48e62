"""The skill router on the published corpus: recall per half of the queries, hints, and latency.

  python bench/router_recall.py ../shared/corpora/skills [--queries other.tsv]

The folder holds skills-corpus.tar.xz (1,301 published SKILL.md files) and queries-dev.tsv
(expected skill name TAB request). The queries are split by line into half A (odd lines, the one
the ranker was tuned on) and half B (even lines, looked at only to report), so a gain that holds
on B is not an artefact of tuning. A second set, bench/router_heldout.tsv, was written before the
ranker was tuned for paraphrases, in other words than queries-dev.tsv, and is reported on its own
row; bench/router_unrelated.txt holds everyday requests no skill fits, and the share of them that
gets any hint is printed (the target is at most one in ten). Prints, per set: search R@3, hint
recall and precision; then the first search after start (a new process's manager on the index on disk) and
search p50/p99 over the queries (wall clock, and the searching thread's CPU time, which a busy
machine does not inflate), interleaved with a baseline measured in the same run: a plain
FTS5 table (one column of name, description and whole body, unweighted bm25). Never fails.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import _common
from _common import summary_ms

from hermes_tui.skills.index import query_words
from hermes_tui.skills.manager import SkillManager

ROUNDS = 8
HERE = Path(__file__).resolve().parent
HELD_OUT = HERE / "router_heldout.tsv"
UNRELATED = HERE / "router_unrelated.txt"


def named(skill_name: str, wanted: str) -> bool:
    return skill_name == wanted or skill_name.endswith("/" + wanted)


def baseline_table(manager: SkillManager) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(name UNINDEXED, text, tokenize='porter unicode61')")
    for skill in manager.list():
        full = manager.get(skill.name)
        body = full.body if full else ""
        conn.execute("INSERT INTO t VALUES (?, ?)", (skill.name, " ".join((skill.name.replace("-", " "),
                                                                           skill.description, body))))
    return conn


def baseline_search(conn: sqlite3.Connection, query: str, limit: int) -> list[str]:
    expression = " OR ".join(f'"{w}"' for w in query_words(query))
    if not expression:
        return []
    return [n for (n,) in conn.execute("SELECT name FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
                                       (expression, limit))]


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """(expected skill name, request) from a TSV."""
    return [(w.strip(), q.strip()) for w, q in
            (line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line)]


def report(manager: SkillManager, base: sqlite3.Connection, pairs: list[tuple[str, str]],
           held_out: list[tuple[str, str]]) -> None:
    halves = {"A": pairs[0::2], "B": pairs[1::2], "all": pairs, "heldout": held_out}
    print(f"{'':8}{'R@3':>6}{'baseline':>10}{'hint recall':>13}{'hint precision':>16}  (hints shown)")
    for label, chosen in halves.items():
        found = base_found = shown = right = 0
        for wanted, query in chosen:
            found += any(named(s.name, wanted) for s in manager.search(query, limit=3))
            base_found += any(named(n, wanted) for n in baseline_search(base, query, 3))
            hints = manager.hint(query, limit=3)
            shown += len(hints)
            right += any(named(s.name, wanted) for s in hints)
        n = max(len(chosen), 1)
        print(f"{label:<8}{found / n:>6.2f}{base_found / n:>10.2f}{right / n:>13.2f}{right / max(shown, 1):>16.2f}"
              f"  ({shown} for {len(chosen)} queries)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="folder with skills-corpus.tar.xz and queries-dev.tsv")
    parser.add_argument("--queries", type=Path, help="another TSV of expected name TAB request")
    args = parser.parse_args()
    pairs = read_pairs(args.queries or args.corpus / "queries-dev.tsv")
    held_out = read_pairs(HELD_OUT)
    unrelated = [line.strip() for line in UNRELATED.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skills"
        with tarfile.open(args.corpus / "skills-corpus.tar.xz") as archive:
            archive.extractall(root, filter="data")
        start = time.perf_counter()
        builder = SkillManager(root)
        count = builder.count()
        print(f"{count:,} usable skills; cold index build (first ever start) {time.perf_counter() - start:.1f} s")
        base = baseline_table(builder)
        builder.close()

        start = time.perf_counter()
        manager = SkillManager(root)
        manager.search(pairs[0][1], limit=5)
        print(f"first search after start (index on disk): {(time.perf_counter() - start) * 1000:.1f} ms")
        report(manager, base, pairs, held_out)
        hinted = [request for request in unrelated if manager.hint(request, limit=3)]
        print(f"unrelated requests with a hint: {len(hinted)}/{len(unrelated)} ({len(hinted) / len(unrelated):.2f})"
              + "".join(f"\n  {request}" for request in hinted))

        ours: list[float] = []
        plain: list[float] = []
        cpu: list[float] = []
        for _ in range(ROUNDS):  # interleaved, so both see the same load on a shared machine
            for _, query in pairs:
                start, start_cpu = time.perf_counter(), time.thread_time()
                manager.search(query, limit=5)
                ours.append(time.perf_counter() - start)
                cpu.append(time.thread_time() - start_cpu)
                start = time.perf_counter()
                baseline_search(base, query, 5)
                plain.append(time.perf_counter() - start)
        hints: list[float] = []
        hint_cpu: list[float] = []
        for _, query in pairs * 2:
            start, start_cpu = time.perf_counter(), time.thread_time()
            manager.hint(query, limit=3)
            hints.append(time.perf_counter() - start)
            hint_cpu.append(time.thread_time() - start_cpu)
        print(f"search   {summary_ms(ours)}")
        print(f"  (CPU)  {summary_ms(cpu)}  (this thread's CPU time: what other processes' load does not add)")
        print(f"hint     {summary_ms(hints)}")
        print(f"  (CPU)  {summary_ms(hint_cpu)}")
        print(f"baseline {summary_ms(plain)}  (plain FTS5, one column, unweighted)")
        print(f"search p50 / baseline p50: {statistics.median(ours) / statistics.median(plain):.2f}x")
        manager.close()


if __name__ == "__main__":
    assert _common  # sys.path + env
    main()
