"""Skills at scale: index build, first list, search, hint and use_skill over 1,000 and 5,000 skills.

Generates realistic SKILL.md files (bodies 1-20 KB, some in category folders, some foreign
frontmatter), plus the recall set of tests/skill_corpus.py hidden among them. Baseline, measured in
the same run: a plain FTS5 table (one column, unweighted bm25) over the same text, queried
directly. Budgets (issue 10): search p50 <= 5 ms, p99 <= 20 ms; use_skill <= 20 ms; first list
after start <= 300 ms at 1,000 skills. Prints; never fails.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import _common
from _common import summary_ms

from hermes_tui.agent.skill_tools import load
from hermes_tui.skills.index import match_expression
from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.schema import Skill, render_skill
from tests.skill_corpus import _BENIGN_STEPS, _TOPICS, PARAPHRASES, RECALL_SKILLS, UNRELATED

PROSE = ("Check the logs before and after the change. Keep a copy of the previous configuration so the "
         "step can be undone. Prefer the package manager's version unless the project pins another one. "
         "When a command fails, read the whole error before retrying; most failures name the missing "
         "file or permission. Record what you changed in the project notes.").split(". ")


def body_text(rng: random.Random, size: int, title: str) -> str:
    parts = [f"# {title}", ""]
    n = 1
    while sum(len(p) + 1 for p in parts) < size:
        step = rng.choice(_BENIGN_STEPS).format(owner="acme", repo=f"svc{n}")
        parts += [f"{n}. `{step}`", "   " + ". ".join(rng.sample(PROSE, 3)) + "."]
        n += 1
    return "\n".join(parts)


def generate(root: Path, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    now = time.time()
    for n in range(count):
        topic, description, triggers = _TOPICS[n % len(_TOPICS)]
        name = f"{topic}-{n}"
        folder = root / (f"category-{n % 7}/{name}" if n % 5 == 0 else name)
        folder.mkdir(parents=True)
        body = body_text(rng, rng.randint(1_000, 20_000), description)
        skill = Skill(name, f"{description} ({n})", [t.strip() for t in triggers.split(",")], body,
                      created=now - n, updated=now - n)
        text = render_skill(skill)
        if n % 3 == 0:  # a foreign file: Claude Code style keys Hermes must keep
            text = text.replace("metadata:\n", "allowed-tools: [Bash, Read]\nargument-hint: <path>\nmetadata:\n", 1)
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
        if n % 10 == 0:
            (folder / "scripts").mkdir()
            (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho ok\n")
    for name, description, triggers in RECALL_SKILLS:
        (root / name).mkdir()
        body = body_text(rng, 3_000, description)
        (root / name / "SKILL.md").write_text(render_skill(Skill(name, description, triggers, body,
                                                                 created=now, updated=now)), encoding="utf-8")


def baseline_table(root: Path) -> sqlite3.Connection:
    """Plain FTS5: one column of name + description + body, default bm25, no weights."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(name UNINDEXED, text, tokenize='porter unicode61')")
    for path in root.rglob("SKILL.md"):
        text = path.read_text(encoding="utf-8")
        conn.execute("INSERT INTO t VALUES (?, ?)", (path.parent.name, path.parent.name.replace("-", " ") + " " + text))
    return conn


def timed(fn, repeat: int, clock=time.perf_counter) -> list[float]:
    out = []
    for _ in range(repeat):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def run(count: int, queries: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skills"
        root.mkdir()
        generate(root, count)
        print(f"\n== {count:,} skills (+{len(RECALL_SKILLS)} recall skills), "
              f"{sum(p.stat().st_size for p in root.rglob('SKILL.md')) / 1e6:.1f} MB of SKILL.md")

        start = time.perf_counter()
        first = SkillManager(root)
        first.list()
        print(f"cold index build (first ever start)      {(time.perf_counter() - start) * 1000:9.1f} ms")
        first.close()
        start = time.perf_counter()
        manager = SkillManager(root)
        listed = manager.list(limit=40)
        print(f"first list after start (index on disk)   {(time.perf_counter() - start) * 1000:9.1f} ms  "
              f"({len(listed)} of {manager.count():,})")

        rng = random.Random(3)
        search = timed(lambda: manager.search(rng.choice(queries), limit=5), 600)
        hint = timed(lambda: manager.hint(rng.choice(queries), limit=3), 300)
        names = [s.name for s in manager.list(limit=500)]
        use = timed(lambda: load(manager, rng.choice(names)), 300)
        base = baseline_table(root)
        base_search = timed(lambda: base.execute(
            "SELECT name FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 5",
            (match_expression(rng.choice(queries)),)).fetchall(), 600)
        search_cpu = timed(lambda: manager.search(rng.choice(queries), limit=5), 600, time.thread_time)
        print(f"search   {summary_ms(search)}")
        print(f"  (CPU)  {summary_ms(search_cpu)}  (this thread's CPU time, which other processes do not inflate)")
        print(f"hint     {summary_ms(hint)}")
        print(f"use      {summary_ms(use)}")
        print(f"baseline {summary_ms(base_search)}  (plain FTS5, one column, unweighted)")
        print(f"search p50 / baseline p50: {statistics.median(search) / statistics.median(base_search):.2f}x")

        hits = sum(n in [s.name for s in manager.search(q, limit=3)] for q, n in PARAPHRASES)
        base_hits = sum(n in [r[0] for r in base.execute(
            "SELECT name FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 3", (match_expression(q),))]
                        for q, n in PARAPHRASES)
        hinted = sum(bool(manager.hint(q)) for q in UNRELATED)
        print(f"recall@3 on {len(PARAPHRASES)} paraphrases: {hits / len(PARAPHRASES):.2f} "
              f"(baseline {base_hits / len(PARAPHRASES):.2f}); hints for {hinted}/{len(UNRELATED)} unrelated requests")
        manager.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,5000")
    args = parser.parse_args()
    queries = [q for q, _ in PARAPHRASES] + UNRELATED + [t[1] for t in _TOPICS]
    for size in (int(s) for s in args.sizes.split(",")):
        run(size, queries)


if __name__ == "__main__":
    assert _common  # sys.path + env
    main()
