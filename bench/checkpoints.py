"""Checkpoint snapshots of a 10,000-file tree: unchanged, and with a few files changed.

Budget (DESIGN/issue 22): the snapshot of an unchanged 10,000-file tree takes <= 100 ms. The
baseline, measured in the same run, is the least any snapshot must do: lstat every file once
(Python's os.lstat over the same paths) plus starting one git process (``git --version``).

    python bench/checkpoints.py [--files 10000] [--rounds 30] [--changed 5]

Prints medians and p99; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile

from hermes_tui.agent.checkpoints import CheckpointStore


def make_tree(root: Path, files: int) -> list[Path]:
    """``files`` small source-like files in folders of 100, with a .gitignore and an ignored folder."""
    paths = []
    for n in range(files):
        folder = root / f"pkg{n // 100:03d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"module{n % 100:02d}.py"
        path.write_text(f"# module {n}\nVALUE = {n}\n")
        paths.append(path)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for n in range(200):
        (root / "build" / f"out{n}.o").write_bytes(b"\0" * 64)
    return paths


def timed(action: object, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def line(label: str, values: list[float], baseline: float) -> str:
    median = statistics.median(values)
    return (f"{label:<34} median {median * 1000:7.1f} ms  p99 {percentile(values, 99) * 1000:7.1f} ms  "
            f"x{median / baseline:4.2f} of baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--changed", type=int, default=5, help="files changed before each 'slightly changed' snapshot")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        paths = make_tree(workspace, args.files)
        store = CheckpointStore(home, workspace)
        repo = store.repo
        started = time.perf_counter()
        repo.snapshot("first")
        first = time.perf_counter() - started
        time.sleep(1.1)  # past git's racy-timestamp window, as any later turn is
        repo.snapshot("settled")

        def lstat_all() -> None:
            for path in paths:
                os.lstat(path)

        def start_git() -> None:
            subprocess.run([store.git or "git", "--version"], capture_output=True, check=True)

        walk = statistics.median(timed(lstat_all, args.rounds))
        spawn = statistics.median(timed(start_git, args.rounds))
        baseline = walk + spawn
        unchanged = timed(lambda: repo.snapshot("unchanged"), args.rounds)

        counter = iter(range(10**9))

        def change_some() -> None:
            n = next(counter)
            for k in range(args.changed):
                paths[(n * args.changed + k) * 37 % len(paths)].write_text(f"# changed {n} {k}\n")

        changed = []
        for _ in range(args.rounds):
            change_some()
            started = time.perf_counter()
            repo.snapshot("changed")
            changed.append(time.perf_counter() - started)

        number = store.begin("turn", 1, 1, "bench").number
        plan_times = timed(lambda: store.plan(number), max(3, args.rounds // 5))

    print(f"tree: {args.files:,} files (+200 ignored); first snapshot {first:.2f} s")
    print(f"baseline: lstat every file {walk * 1000:.1f} ms + start git {spawn * 1000:.1f} ms = {baseline * 1000:.1f} ms")
    print(line("snapshot, unchanged tree", unchanged, baseline))
    print(line(f"snapshot, {args.changed} files changed", changed, baseline))
    print(line("restore plan (one checkpoint)", plan_times, baseline))
    print("budget: unchanged snapshot <= 100 ms (median above)")


if __name__ == "__main__":
    main()
