"""The skill guard's two figures: false positives on published skills, catches on held-out injections.

Usage: python bench/guard_precision.py PATH

PATH is the skills corpus: a folder holding SKILL.md files at any depth, or the corpus archive
(``skills-corpus.tar.xz``), which is unpacked into a temporary folder. Every SKILL.md is read as
the skill library reads it (``parse_skill``) and scanned as it scans it (name, description,
triggers, body). The held-out injections (bench/guard_heldout.py) were never used to tune the
rules. Budget (issue 18): at most 0.5 % of the published skills quarantined. Also prints the scan
time per skill against the time to parse it, measured in the same run. Prints; never fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 - puts the repository on sys.path
from _common import percentile
from guard_heldout import HELD_OUT

from hermes_tui.skills import guard
from hermes_tui.skills.manager import SkillError
from hermes_tui.skills.schema import parse_skill
from tests.skill_corpus import INJECTIONS


def corpus_folder(path: Path, scratch: Path) -> Path:
    if path.is_dir():
        return path
    with tarfile.open(path) as archive:
        archive.extractall(scratch, filter="data")
    return scratch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the skills corpus: a folder or skills-corpus.tar.xz")
    args = parser.parse_args()
    if not args.path.exists():
        sys.exit(f"guard_precision: {args.path} does not exist; give the corpus folder or its .tar.xz")
    with tempfile.TemporaryDirectory() as scratch:
        root = corpus_folder(args.path, Path(scratch))
        files = sorted(root.rglob("SKILL.md"))
        flagged: list[tuple[str, str]] = []
        parse_times: list[float] = []
        scan_times: list[float] = []
        scanned = unreadable = 0
        for path in files:
            started = time.perf_counter()
            try:
                skill = parse_skill(path.read_text(encoding="utf-8", errors="replace"), path.parent.name, path)
            except SkillError:
                unreadable += 1
                continue
            parsed = time.perf_counter()
            why = guard.verdict([skill.name, skill.description, " ".join(skill.triggers), skill.body])
            parse_times.append(parsed - started)
            scan_times.append(time.perf_counter() - parsed)
            scanned += 1
            if why:
                flagged.append((str(path.relative_to(root)), why))
    rate = len(flagged) / scanned if scanned else 0.0
    print(f"published skills: {scanned} scanned ({unreadable} unreadable), {len(flagged)} quarantined: "
          f"false-positive rate {rate:.2%} (budget 0.50 %)")
    for name, why in flagged:
        print(f"  quarantined {name}: {why}")
    missed = [(how, text) for how, text in HELD_OUT if not guard.verdict([text])]
    caught = len(HELD_OUT) - len(missed)
    print(f"held-out obfuscated injections: {caught}/{len(HELD_OUT)} caught: catch rate {caught / len(HELD_OUT):.1%}")
    for how, text in missed:
        print(f"  missed ({how}): {text!r}")
    tests_caught = sum(bool(guard.verdict([text])) for text in INJECTIONS)
    print(f"the tests' injections: {tests_caught}/{len(INJECTIONS)} caught")
    if scan_times:
        ms = [t * 1000 for t in scan_times]
        base = [t * 1000 for t in parse_times]
        print(f"scan per skill: p50 {statistics.median(ms):.3f} ms, p99 {percentile(ms, 99):.3f} ms; "
              f"parsing it (baseline): p50 {statistics.median(base):.3f} ms, p99 {percentile(base, 99):.3f} ms; "
              f"ratio p50 {statistics.median(ms) / statistics.median(base):.2f}x")


if __name__ == "__main__":
    main()
