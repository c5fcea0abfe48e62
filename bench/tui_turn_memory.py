"""The full-screen app's own resident memory and CPU after its first answered turn.

Each run is a fresh ``python`` process that runs the Hermes app headless (Textual's pilot) against
the fake server (in a process of its own), sends one message, waits until the answer is on screen
then reports from ``/proc``: the app process's current (VmRSS) and peak
(VmHWM) resident memory, its user+system CPU seconds, whether litellm was imported in it, and the
same for the helper that served its model calls, which holds litellm instead: the per-user warm
helper as shipped (started by the warm-up run, then reached by every run, as after a ``-p`` run),
or with ``--helper off`` the app's own stream helper (``llm_host``).

Budget (DESIGN.md): <= 120 MB resident after a turn, no litellm in the app's process. Prints figures
with the load averages (the machine may be shared: compare within a run), never fails on them.

    python bench/tui_turn_memory.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, ServerProcess, percentile

BUDGET_MB = 120.0
SIZE = (100, 32)

CHILD = """
import asyncio, json, os, re, sys
from hermes_tui.config import Config
from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import build_app

def proc(pid, key):
    found = re.search(key + r":\\s+(\\d+) kB", open(f"/proc/{pid}/status").read())
    return int(found.group(1)) / 1024 if found else 0.0

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

app = build_app(Config.load())
seen = {}

async def main():
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        app.chat.prompt.load("What is in the workspace?")
        await pilot.press("enter")
        while app.chat.busy or not list(app.chat.conversation.query(AnswerText)):
            await asyncio.sleep(0.05)
        await pilot.pause()
        helper = app.session.host().pid
        me = os.getpid()
        seen.update(rss=proc(me, "VmRSS"), peak=proc(me, "VmHWM"), cpu=cpu(me),
                    litellm="litellm" in sys.modules,
                    helper_rss=proc(helper, "VmRSS") if helper else 0.0, helper_cpu=cpu(helper) if helper else 0.0)

asyncio.run(main())
print(json.dumps(seen), flush=True)
os._exit(0)
"""


def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def one(env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600,
                          cwd=env["HERMES_WORKSPACE"])
    if proc.returncode != 0:
        raise SystemExit(f"the app run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(values: list[float], unit: str) -> str:
    return (f"median {statistics.median(values):7.1f} {unit}  p90 {percentile(values, 90):7.1f} {unit}  "
            f"max {max(values):7.1f} {unit}")


def main() -> None:
    from tests.fakes.server import Reply

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--helper", choices=("on", "off"), default="on", help="HERMES_HELPER (default: on, as shipped)")
    args = parser.parse_args()
    reply = Reply(text="The workspace holds one file, notes.txt.", usage=(950, 10))
    with tempfile.TemporaryDirectory(prefix="tm-", dir="/tmp") as tmp, \
            ServerProcess(*[reply] * (args.runs + 1) * 2) as server:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "ws" / "notes.txt").write_text("hello\n")
        (root / "run").mkdir(mode=0o700)
        env = {**os.environ, "HERMES_HOME": str(root / "home"), "HERMES_WORKSPACE": str(root / "ws"),
               "HERMES_HELPER": args.helper, "XDG_RUNTIME_DIR": str(root / "run"),
               "HERMES_PROVIDER": "openai", "HERMES_MODEL": "test-model", "HERMES_API_BASE": server.openai_base,
               "OPENAI_API_KEY": "sk-bench", "XDG_STATE_HOME": str(root / "state"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        before = one(env)  # warm-up: disk caches, .pyc files, the new database (and the warm helper)
        runs = []
        try:
            for n in range(args.runs):
                print(f"run {n + 1}: load averages {loadavg()}", flush=True)
                runs.append(one(env))
        finally:
            hermes_tui = Path(sys.executable).with_name("hermes-tui")
            subprocess.run([str(hermes_tui), "helper", "stop"], env=env, capture_output=True, check=False)
    print(f"The app after its first answered turn ({args.runs} runs, HERMES_HELPER={args.helper}, fake server, "
          f"headless {SIZE[0]}x{SIZE[1]}); load averages at the end {loadavg()}")
    print(f"  app RSS now                {fmt([r['rss'] for r in runs], 'MB')}")
    print(f"  app RSS peak               {fmt([r['peak'] for r in runs], 'MB')}")
    print(f"  app CPU (user+sys)         {fmt([r['cpu'] for r in runs], 's ')}")
    print(f"  litellm in the app         {sum(bool(r['litellm']) for r in runs)} of {args.runs} runs")
    print(f"  helper RSS now             {fmt([r['helper_rss'] for r in runs], 'MB')}")
    if args.helper == "on":  # one helper served every run: what each run added to its CPU
        added = [r["helper_cpu"] - p["helper_cpu"] for p, r in zip([before, *runs], runs, strict=False)]
        print(f"  helper CPU added by a run  {fmt([a * 1000 for a in added], 'ms')}  (it holds litellm already)")
    else:
        print(f"  helper CPU (user+sys)      {fmt([r['helper_cpu'] for r in runs], 's ')}  (one per app start)")
    rss = statistics.median([r["rss"] for r in runs])
    print(f"  budget: app RSS <= {BUDGET_MB:.0f} MB after a turn: {'within' if rss <= BUDGET_MB else 'OVER'}")


if __name__ == "__main__":
    main()
