"""glob and grep over a 20,000-file tree (ripgrep and the pure-Python fallback), and edit_file on a
5 MB file, each through ``ToolRegistry.execute`` as the model's calls run.

Budget (issue 22): a search of the 20,000-file tree in <= 1 s. Baselines measured in the same run:
a bare ``rg`` process for the searches, a bare ``Path.write_bytes`` of the file for the edit.
Prints; never fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _common  # (sys.path + env)

from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager

FOLDERS, PER_FOLDER = 200, 100  # 20,000 files searched
IGNORED = 2_000  # more files under a .gitignored folder, never searched


def build_tree(root: Path) -> None:
    body = "".join(f"def function_{n}(value):\n    return value * {n}  # ordinary line of code\n" for n in range(25))
    for folder in range(FOLDERS):
        here = root / "src" / f"pkg_{folder:03d}"
        here.mkdir(parents=True)
        for n in range(PER_FOLDER):
            extra = f"NEEDLE_{folder}_{n} = True\n" if (folder * PER_FOLDER + n) % 997 == 0 else ""
            (here / f"mod_{n:03d}.py").write_text(body + extra)
    ignored = root / "node_modules" / "dep"
    ignored.mkdir(parents=True)
    for n in range(IGNORED):
        (ignored / f"f{n}.js").write_text("NEEDLE_ignored = 1\n")
    (root / ".gitignore").write_text("node_modules/\n")


def timed(call: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return times


def line(label: str, times: list[float], baseline: list[float] | None = None) -> str:
    ratio = f"  x{statistics.median(times) / statistics.median(baseline):5.1f} of baseline" if baseline else ""
    return f"{label:<44} {_common.summary_ms(times)}{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9, help="runs of each ripgrep search and edit")
    parser.add_argument("--python-runs", type=int, default=3, help="runs of each pure-Python search")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        build_tree(ws)
        registry = ToolRegistry(ws, MemoryStore(Path(tmp) / "m.db"), SkillManager(Path(tmp) / "skills"))
        saved_path = os.environ.get("PATH", "")
        no_rg = Path(tmp) / "no-rg"
        no_rg.mkdir()

        def run(name: str, arguments: dict[str, object]) -> Callable[[], object]:
            def call() -> object:
                result = registry.execute(name, arguments)
                assert result.ok, result.output
                return result
            return call

        searches = [("grep NEEDLE_\\d+_\\d+", "grep", {"pattern": r"NEEDLE_\d+_\d+"}),
                    ("grep 'return value' (capped output)", "grep", {"pattern": "return value"}),
                    ("glob **/*.py (20,000 matches, newest 100)", "glob", {"pattern": "**/*.py"}),
                    ("glob src/pkg_1*/mod_00*.py", "glob", {"pattern": "src/pkg_1*/mod_00*.py"})]
        print(f"tree: {FOLDERS * PER_FOLDER:,} files searched (+{IGNORED:,} under a .gitignored folder); "
              f"budget <= 1,000 ms per search")
        bare = timed(lambda: subprocess.run(["rg", "-c", r"NEEDLE_\d+_\d+", "."], cwd=ws,
                                            capture_output=True, check=False), args.runs)
        print(line("baseline: bare rg -c NEEDLE (own process)", bare))
        for label, name, arguments in searches:
            print(line(f"rg      {label}", timed(run(name, arguments), args.runs), bare))
        os.environ["PATH"] = str(no_rg)
        try:
            for label, name, arguments in searches:
                print(line(f"python  {label}", timed(run(name, arguments), args.python_runs), bare))
        finally:
            os.environ["PATH"] = saved_path

        big = ws / "big.py"
        rows = [f"row_{n:07d} = {n * 7 % 1000}  # a line of a big generated file\n" for n in range(110_000)]
        big.write_text("".join(rows))
        size = big.stat().st_size
        data = big.read_bytes()
        write = timed(lambda: (ws / "copy.py").write_bytes(data), args.runs)
        flips = iter(range(10**6))

        def edit() -> object:
            flip = next(flips) % 2
            old, new = ("= 0  # a line", "= X  # a line") if flip == 0 else ("= X  # a line", "= 0  # a line")
            return run("edit_file", {"path": "big.py", "old": f"row_0055000 {old}", "new": f"row_0055000 {new}"})()

        print(f"\nedit_file of a {size / 1e6:.1f} MB file ({len(rows):,} lines), one line changed:")
        print(line("baseline: Path.write_bytes of the same file", write))
        print(line("edit_file (read, match, temp file, fsync, rename)", timed(edit, args.runs), write))
        result = registry.execute("edit_file", {"path": "big.py", "old": "row_0000001 = 7", "new": "row_0000001 = 8"})
        print(f"what passes through the model: {len('row_0000001 = 7') * 2 + 30} characters of arguments, "
              f"a {len(result.output)}-character result")
        registry.memory.close()


if __name__ == "__main__":
    main()
