"""Time to the first frame: the Hermes app against a bare Textual app, measured in the same run.

Definition: each run is a fresh ``python`` process started by this script. The clock starts just
before the process is spawned and stops when the child's app hands its first frame to the
driver: the first call of ``App._display`` with a composited frame outside a batch update (the
point where a real terminal would receive the bytes; the headless driver discards them). Both
apps run headless at the same size, so the figure covers interpreter start, imports, building the
app, compose, mount, styling and the first layout + render, and nothing the app does after that
frame (Hermes opens its stores and reaches its model helper right after it). The child exits at
once. Runs alternate between the apps, each taking each place in a round in turn; one
warm-up run of each is discarded.

Budget (DESIGN.md): Hermes median <= 1.3 x the bare app's median. Prints figures, never fails.
``--variant DIR`` also runs the Hermes app of another copy of the code (``DIR`` holds its
``hermes_tui``, first on ``PYTHONPATH``) in the same rounds: an A/B of a start-up change.

    python bench/tui_startup.py [--runs 7] [--variant DIR]
"""

from __future__ import annotations

import os
import sys
import time

SIZE = (100, 32)
BUDGET = 1.3


def child(kind: str) -> None:
    """Run one app headless and write the wall-clock time of its first frame to stdout."""

    def report() -> None:
        os.write(1, f"{time.time()!r}\n".encode())
        os._exit(0)  # the measurement is done; skip shutdown

    if kind == "bare":
        from textual.app import App, ComposeResult
        from textual.widgets import Footer, Header, Static

        class Bare(App[None]):
            def compose(self) -> ComposeResult:
                yield Header()
                yield Static("Hello")
                yield Footer()

        app: object = Bare()
    else:
        import hermes_tui

        # As the hermes-tui program does before its first import (program.main); not in a
        # --variant from before it did (an editable install would lend it this tree's heap.py).
        if os.path.exists(os.path.join(os.path.dirname(hermes_tui.__file__), "heap.py")):
            from hermes_tui import heap

            heap.pause()
        from hermes_tui.config import Config
        from hermes_tui.tui.app import build_app

        app = build_app(Config.load())

    display = app._display

    def display_and_report(screen: object, renderable: object) -> None:
        display(screen, renderable)
        if renderable is not None and not app._batch_count:
            report()

    app._display = display_and_report
    app.run(headless=True, size=SIZE)


def measure(kind: str, env: dict[str, str]) -> float:
    import subprocess

    started = time.time()
    proc = subprocess.run([sys.executable, __file__, "--child", kind], env=env, capture_output=True,
                          text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{kind} run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return float(lines[-1]) - started


def summary(name: str, values: list[float]) -> str:
    import statistics

    from _common import percentile

    return (f"{name:7s} median {statistics.median(values) * 1000:7.1f} ms   p90 {percentile(values, 90) * 1000:7.1f} ms"
            f"   min {min(values) * 1000:7.1f} ms   (n={len(values)})")


def main() -> None:
    # The children run this file too: they go straight to their app, before anything is imported
    # (argparse, or _common, whose sys.path entry would put this tree before a --variant's).
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    import argparse
    import statistics
    import tempfile
    from pathlib import Path

    import _common  # noqa: F401 - the children's environment: .pyc files written, as a user's are
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="measured runs per app (default 7)")
    parser.add_argument("--variant", metavar="DIR", help="also the Hermes app of the hermes_tui in DIR")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.update({
            "HERMES_HOME": str(Path(tmp) / "home"), "HERMES_WORKSPACE": tmp, "HERMES_PROVIDER": "openai",
            "HERMES_MODEL": "bench-model", "OPENAI_API_KEY": "sk-bench", "HERMES_API_BASE": "http://127.0.0.1:9/v1",
        })
        envs = {"bare": env, "hermes": env}
        if args.variant:
            envs["variant"] = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [args.variant,
                                                                                 env.get("PYTHONPATH")]))}
        for name, kind_env in envs.items():  # warm-up: disk cache, .pyc files, the new database
            measure("bare" if name == "bare" else "hermes", kind_env)
        times: dict[str, list[float]] = {name: [] for name in envs}
        names = list(envs)
        for round_ in range(args.runs):
            # Each app takes each place in the round in turn: the run after another app's finds
            # the disk cache and the CPU's clock as that one left them.
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                times[name].append(measure("bare" if name == "bare" else "hermes", envs[name]))

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"Time from process start to first frame (headless, {SIZE[0]}x{SIZE[1]}; load averages {load}):")
    from hermes_tui import bytecode

    for line in bytecode.report_lines():  # without it, every start compiles the modules first
        print(f"  {line}")
    for kind, values in times.items():
        print("  " + summary(kind, values))
    for name in times:
        if name == "bare":
            continue
        ratio = statistics.median(times[name]) / statistics.median(times["bare"])
        verdict = "within" if ratio <= BUDGET else "OVER"
        print(f"  ratio {name}/bare (medians): {ratio:.2f}x  ({verdict} the {BUDGET}x budget)")


if __name__ == "__main__":
    main()
