"""What the sandbox adds to a trivial run_bash call (budget: <= 30 ms), measured in one run.

Three ways to run `true`, interleaved so a busy machine slows them alike:
  bare      bash started directly, as run_bash did before the sandbox (the baseline)
  sandbox   run_bash in bubblewrap (HERMES_SANDBOX=on, the default where bwrap works)
  fallback  run_bash under the reaper (HERMES_SANDBOX=off, or no bubblewrap)
  bwrap     bubblewrap alone, with the sandbox's arguments, running `true` instead of bash
Prints p50/p99 of each and the difference and ratio to the baseline; asserts nothing.
Run: python bench/sandbox_overhead.py [CALLS]   (default: 40 of each)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import _common

from hermes_tui.agent.sandbox import Sandbox, unavailable_reason
from hermes_tui.agent.shell import run_command


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-sandbox-"))
    never = threading.Event()

    def bare() -> None:
        subprocess.run(["bash", "-c", "true"], cwd=workspace, stdin=subprocess.DEVNULL, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

    def sandboxed() -> None:
        run_command("true", workspace, 30, never, sandbox=Sandbox(enabled=True))

    def fallback() -> None:
        run_command("true", workspace, 30, never, sandbox=Sandbox(enabled=False))

    def bwrap_alone() -> None:
        subprocess.run(Sandbox().wrap(["true"], workspace, None), stdin=subprocess.DEVNULL, check=True)

    reason = unavailable_reason()
    ways: dict[str, Callable[[], None]] = {"bare": bare, "fallback": fallback}
    if reason is None:
        ways["sandbox"] = sandboxed
        ways["bwrap"] = bwrap_alone
    else:
        print(f"sandbox: not measured, {reason}")
    times: dict[str, list[float]] = {name: [] for name in ways}
    for run in ways.values():  # warm up: page cache, the probe, imports
        run()
    for _ in range(calls):
        for name, run in ways.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times["bare"])
    base99 = _common.percentile(times["bare"], 99)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{calls} calls of `true` each, load average {load} on {os.cpu_count()} CPUs")
    for name, values in times.items():
        p50, p99 = statistics.median(values), _common.percentile(values, 99)
        print(f"{name:9} p50 {p50 * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms  "
              f"p50 +{(p50 - base) * 1000:6.2f} ms (x{p50 / base:4.2f})  p99 +{(p99 - base99) * 1000:6.2f} ms")
    if "sandbox" in times:
        added = (statistics.median(times["sandbox"]) - base) * 1000
        print(f"the sandbox adds {added:.1f} ms at the median (budget 30 ms)")


if __name__ == "__main__":
    main()
