"""One headless turn (``hermes-tui -p``) against the fake server, and where its time goes.

Measured in one run, runs interleaved round by round:

* ``python -c "import litellm"``: what a run that parses in its own process cannot avoid;
* ``hermes-tui -p ... --json`` for a two-call turn (a tool call, then the answer) over the fake
  server's OpenAI wire, three ways (issue 24):
  - *off*: ``HERMES_HELPER=off``, the model layer imported in the run (the baseline);
  - *cold*: no warm helper running (stopped before the run): the run starts one at once, sets its
    turn up meanwhile, and its model calls wait for it; the helper stays for the next runs;
  - *warm*: the helper left running by the cold run: the run imports no litellm at all;
  with the breakdown of each run:
  - *start -> 1st request*: interpreter, Hermes imports, litellm import (off), database, prompt;
  - *litellm import*: as the child logs it ("litellm imported in ... s" in its hermes.log; off only);
  - *call N*: the request reaching the server -> its ``usage`` event reaching this script;
  - *after the turn*: model requests after ``turn_finished`` (curator), if any;
  - *exit*: the last event -> the process is gone;
  - *peak RSS* of the ``hermes-tui`` process itself (``wait4``; a helper it starts is not its child).
  After a warm run the script waits until the helper has written the pending summaries, as it
  does while idle between a script's runs, so summaries never overlap a measured run.

* with ``--variant NAME=DIR`` (repeatable): a *cold* and a *warm* run of another copy of the code
  (``DIR`` holds its ``hermes_tui``, first on ``PYTHONPATH``) in the same rounds, as modes
  ``cold-NAME`` and ``warm-NAME``: an A/B of a change. The cold runs take turns in both orders (A B,
  then B A), and so do the warm ones; after each cold run the script waits until the helper it
  leaves is ready, so no helper start overlaps a measured run. Each tree has a helper of its own
  (its own runtime folder and HERMES_HOME: a helper serves only its own code), which its cold run
  starts and its warm run finds, the same for every tree. (Variants' cold runs used to take this
  tree's folder: in half the rounds this tree's helper was then started anew just before its warm
  run, which paid that helper's first requests: a bias against this tree.)
* with ``--peer PATH`` (hermes-agent's ``hermes`` in its own venv, ``pip install hermes-agent``):
  its one-shot turn ``hermes -z ...`` against the same fake server, in the same rounds. Its
  tools are its own, so it gets a one-call turn (a plain answer): a lighter turn than ours.

Budgets (issue 39): warm <= 0.4 s wall and <= 0.1x the *off* run of the same rounds, its client
<= 40 MB RSS; cold <= 0.8x hermes-agent's one-shot turn (measured in the same run with ``--peer``,
else issue 24's 6.84 s). Prints figures (median, p90, p99 and max over the runs; ratios against
*off* of the same run), never fails on a time.

    python bench/headless_turn.py [--runs 5] [--peer /path/to/venv/bin/hermes] [--variant NAME=DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import ROOT, percentile

from hermes_tui import bytecode
from tests.fakes import server as fake
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

HERMES_TUI = str(Path(sys.executable).with_name("hermes-tui"))
BUDGET_REST = 1.0
BUDGET_EXIT = 0.3
BUDGET_WARM = 0.4
BUDGET_WARM_OFF = 0.1  # of the off run's median
BUDGET_WARM_RSS_MB = 40.0
PEER_COLD = 6.84  # hermes-agent 0.19's one-shot turn, issue 24
_IMPORT_LINE = re.compile(r"litellm imported in ([0-9.]+) s")
_WARM_LINE = re.compile(r"litellm first call warmed in ([0-9.]+) s")


@dataclass
class Run:
    wall: float = 0.0
    first_request: float = 0.0
    litellm_import: float = float("nan")
    first_call_warmup: float = float("nan")  # litellm's deferred loading, run offline in the background
    calls: list[float] = field(default_factory=list)
    after_turn: float = 0.0  # curator / summary requests after turn_finished
    after_turn_requests: int = 0
    exit: float = 0.0
    rss_mb: float = 0.0  # peak RSS of the hermes-tui process
    cpu: float = 0.0  # user + system CPU seconds of the hermes-tui process (steady on a loaded machine)


class Timeline:
    """Server-side request times (arrival, last byte sent), on this process's monotonic clock."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        original = fake._Handler.do_POST

        def timed(handler: fake._Handler) -> None:
            arrived = time.monotonic()
            original(handler)
            with self._lock:
                self.spans.append((arrived, time.monotonic()))

        fake._Handler.do_POST = timed

    def take(self) -> list[tuple[float, float]]:
        with self._lock:
            spans, self.spans = sorted(self.spans), []
        return spans


def script(server: FakeLLMServer) -> None:
    server.queue(
        Reply(text="Let me look.", tool_calls=[ToolCall("list_dir", {"path": "."})], usage=(900, 12)),
        Reply(text="The workspace holds one file, notes.txt.", usage=(950, 10)),
    )
    server.responder = lambda request: Reply(text="Listed the workspace; it holds notes.txt.")


def hermes_run(server: FakeLLMServer, timeline: Timeline, env: dict[str, str], state: Path) -> Run:
    log = state / "hermes" / "log" / "hermes.log"
    log.unlink(missing_ok=True)
    script(server)
    timeline.take()
    started = time.monotonic()
    proc = subprocess.Popen([*program(env), "-p", "What is in the workspace?", "--json"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    events: list[tuple[float, dict[str, object]]] = []
    for line in proc.stdout:
        events.append((time.monotonic(), json.loads(line)))
    _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
    ended = time.monotonic()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"hermes-tui -p failed ({proc.returncode}): {err}")
    spans = timeline.take()
    run = Run(wall=ended - started, exit=ended - events[-1][0], rss_mb=usage.ru_maxrss / 1024,
              cpu=usage.ru_utime + usage.ru_stime)
    run.first_request = spans[0][0] - started
    usages = [t for t, e in events if e["type"] == "usage"]
    run.calls = [u - s[0] for s, u in zip(spans, usages, strict=False)]
    finished = next(t for t, e in events if e["type"] == "turn_finished")
    late = [s for s in spans if s[0] > finished]
    run.after_turn_requests = len(late)
    run.after_turn = sum(end - start for start, end in late)
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    for pattern, name in ((_IMPORT_LINE, "litellm_import"), (_WARM_LINE, "first_call_warmup")):
        found = pattern.findall(text)
        if found:
            setattr(run, name, float(found[-1]))
    return run


def peer_run(server: FakeLLMServer, peer: str, home: Path) -> tuple[float, float, float]:
    """hermes-agent's one-shot turn (one call, a plain answer): wall seconds, peak RSS in MB, CPU seconds."""
    server.queue(Reply(text="The workspace holds one file, notes.txt.", usage=(950, 10)))
    env = {**os.environ, "HOME": str(home), "HERMES_HOME": str(home)}
    out, err = home / "out.txt", home / "err.txt"
    started = time.monotonic()
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen([peer, "-z", "What is in the workspace?"], env=env, cwd=home,
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        _pid, status, usage = os.wait4(proc.pid, 0)  # its own peak RSS
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0 or "notes.txt" not in out.read_text():
        raise SystemExit(f"hermes-agent -z failed ({status}): {err.read_text()[-500:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def peer_home(root: Path, server: FakeLLMServer) -> Path:
    """A HERMES_HOME for hermes-agent pointing at the fake server as a custom OpenAI endpoint."""
    home = root / "peer"
    home.mkdir()
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: test-model\n"
                                      f"  base_url: \"{server.openai_base}\"\n  api_key: sk-bench\n")
    return home


def program(env: dict[str, str]) -> list[str]:
    """``hermes-tui`` as installed; for a --variant's tree (first on ``PYTHONPATH``), what its own
    console script runs: its entry point (an editable install would lend an older tree this
    tree's ``hermes_tui.program``, which pauses the collector that tree never resumes). ``-P``:
    not the current folder first on ``sys.path`` (this tree, when run from the repository)."""
    tree = Path(env.get("PYTHONPATH", "").split(os.pathsep)[0] or ROOT)
    if tree.resolve() == ROOT.resolve():
        return [HERMES_TUI]
    module, function = (("hermes_tui.program", "main") if (tree / "hermes_tui" / "program.py").exists()
                        else ("hermes_tui.cli", "tui_main"))
    return [sys.executable, "-P", "-c", f"import sys; sys.argv[0] = 'hermes-tui'; from {module} import {function}; "
                                  f"sys.exit({function}())"]


def helper(env: dict[str, str], command: str) -> str:
    return subprocess.run([*program(env), "helper", command], env=env, capture_output=True, text=True).stdout.strip()


def wait_for_helper(env: dict[str, str], timeout: float = 120.0) -> None:
    """Until a helper answers (it answers once ready): a run may leave one still starting."""
    deadline = time.monotonic() + timeout
    while "helper running" not in helper(env, "status") and time.monotonic() < deadline:
        time.sleep(0.1)


def wait_for_summaries(db: Path, timeout: float = 60.0) -> None:
    """Until the helper has written the pending summaries (it does so once idle)."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if not conn.execute("SELECT count(*) FROM pending_summaries").fetchone()[0]:
                return
        time.sleep(0.1)


def helper_rss_mb(env: dict[str, str]) -> float:
    """Peak RSS of the running helper, from /proc (0 when none runs)."""
    found = re.search(r"pid (\d+)", helper(env, "status"))
    if not found:
        return 0.0
    status = Path(f"/proc/{found.group(1)}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def import_run(env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import litellm"], env=env, check=True)
    return time.monotonic() - started


def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def fmt(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"median {statistics.median(ms):7.0f} ms  p90 {percentile(ms, 90):7.0f} ms  "
            f"p99 {percentile(ms, 99):7.0f} ms  max {max(ms):7.0f} ms")


def fmt_mb(values: list[float]) -> str:
    return f"median {statistics.median(values):7.1f} MB          max {max(values):7.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peer", help="hermes-agent's hermes executable, to measure it in the same run")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                        help="also a cold run of the hermes_tui in DIR, as mode cold-NAME (repeatable)")
    args = parser.parse_args()
    variants = dict(v.split("=", 1) for v in args.variant)
    timeline = Timeline()
    with tempfile.TemporaryDirectory(prefix="hb-", dir="/tmp") as tmp, FakeLLMServer() as server:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "ws" / "notes.txt").write_text("hello\n")
        (root / "run").mkdir(mode=0o700)
        env = {**os.environ, "HOME": str(root), "XDG_STATE_HOME": str(root / "state"),
               "XDG_RUNTIME_DIR": str(root / "run"),
               "HERMES_HOME": str(root / "home"), "HERMES_WORKSPACE": str(root / "ws"),
               "HERMES_PROVIDER": "openai", "HERMES_MODEL": "test-model", "HERMES_API_BASE": server.openai_base,
               "OPENAI_API_KEY": "sk-bench", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        envs = {"off": {**env, "HERMES_HELPER": "off"}, "cold": {**env, "HERMES_HELPER": "on"},
                "warm": {**env, "HERMES_HELPER": "on"}}
        colds = ["cold", *(f"cold-{name}" for name in variants)]
        warms = ["warm", *(f"warm-{name}" for name in variants)]
        for name, folder in variants.items():  # each tree its own helper: its cold run leaves it for its warm run
            (root / f"run-{name}").mkdir(mode=0o700)
            envs[f"cold-{name}"] = envs[f"warm-{name}"] = {
                **envs["cold"], "PYTHONPATH": os.pathsep.join([folder, env["PYTHONPATH"]]),
                "XDG_RUNTIME_DIR": str(root / f"run-{name}"), "HERMES_HOME": str(root / f"home-{name}")}
        modes = ("off", *colds, *warms)
        hermes_run(server, timeline, envs["off"], root / "state")  # warm-up: disk caches, .pyc files
        import_run(env)
        peers: list[tuple[float, float, float]] = []
        if args.peer:
            home = peer_home(root, server)
            peer_run(server, args.peer, home)  # its warm-up
        runs: dict[str, list[Run]] = {mode: [] for mode in modes}
        imports: list[float] = []
        helper_rss: list[float] = []
        try:
            for n in range(args.runs):
                print(f"round {n + 1}: load averages {loadavg()}", flush=True)
                imports.append(import_run(env))
                order = ["off", *(colds if n % 2 == 0 else colds[::-1]), *(warms if n % 2 == 0 else warms[::-1])]
                for mode in order:
                    if mode.startswith("cold"):
                        helper(envs[mode], "stop")
                    runs[mode].append(hermes_run(server, timeline, envs[mode], root / "state"))
                    if mode.startswith("cold"):
                        wait_for_helper(envs[mode])  # the helper the cold run left for the warm run, ready
                    if mode.startswith("warm"):  # its helper writes the rounds' summaries (a cold run
                        # leaves its own pending: it hands nothing to a helper not ready)
                        wait_for_summaries(Path(envs[mode]["HERMES_HOME"]) / "memory.sqlite3")
                helper_rss.append(helper_rss_mb(env))
                if args.peer:
                    peers.append(peer_run(server, args.peer, home))
        finally:
            for mode in ("cold", *(f"warm-{name}" for name in variants)):
                helper(envs[mode], "stop")

    off = runs["off"]
    print(f"headless turn (2 model calls, 1 tool), {args.runs} interleaved rounds, fake server over the OpenAI wire")
    print(f"  load averages at the end: {loadavg()} (2 cores shared: compare ratios within this run)")
    for line in bytecode.report_lines():  # without it, every run compiles the modules first
        print(f"  {line}")
    print(f"  python -c 'import litellm'      {fmt(imports)}")
    for mode in modes:
        walls = [r.wall for r in runs[mode]]
        ratio = statistics.median(walls) / statistics.median([r.wall for r in off])
        print(f"  hermes-tui -p, helper {mode:<5} {fmt(walls)}   {ratio:.2f}x off")
        if "-" in mode:
            base = mode.split("-", 1)[0]
            paired = [v.wall / c.wall for v, c in zip(runs[mode], runs[base], strict=True)]
            print(f"    / {base} of the same round      median {statistics.median(paired):.2f}x  "
                  f"min {min(paired):.2f}x  max {max(paired):.2f}x")
        cpus = [r.cpu for r in runs[mode]]
        print(f"    CPU of hermes-tui             {fmt(cpus)}   "
              f"{statistics.median(cpus) / statistics.median([r.cpu for r in off]):.2f}x off")
        print(f"    peak RSS of hermes-tui        {fmt_mb([r.rss_mb for r in runs[mode]])}   "
              f"{statistics.median([r.rss_mb for r in runs[mode]]) / statistics.median([r.rss_mb for r in off]):.2f}x off")
    print(f"  the helper process (peak RSS)   {fmt_mb([v for v in helper_rss if v] or [0.0])}")
    for mode in modes:
        chosen = runs[mode]
        print(f"  breakdown, helper {mode}")
        print(f"    start -> 1st request          {fmt([r.first_request for r in chosen])}")
        if mode == "off":
            print(f"      of which litellm import     {fmt([r.litellm_import for r in chosen])}")
            print(f"      litellm first-call warm-up  {fmt([r.first_call_warmup for r in chosen])}  "
                  "(background, overlaps call 1)")
        for n in range(max(len(r.calls) for r in chosen)):
            print(f"    model call {n + 1}                  {fmt([r.calls[n] for r in chosen if len(r.calls) > n])}")
        late = [r.after_turn_requests for r in chosen]
        print(f"    after the turn ({max(late)} requests)   {fmt([r.after_turn for r in chosen])}")
        print(f"    exit after the last event     {fmt([r.exit for r in chosen])}")
    rest = [r.wall - r.litellm_import for r in off]
    print(f"  off: everything but the litellm import {fmt(rest)}   budget <= {BUDGET_REST * 1000:.0f} ms: "
          f"{'within' if statistics.median(rest) <= BUDGET_REST else 'OVER'}")
    warm_wall = statistics.median([r.wall for r in runs["warm"]])
    warm_rss = statistics.median([r.rss_mb for r in runs["warm"]])
    cold_wall = statistics.median([r.wall for r in runs["cold"]])
    peer_cold, source = PEER_COLD, "issue 24's figure"
    if peers:
        peer_cold, source = statistics.median([w for w, _, _ in peers]), "measured in this run"
        print(f"  hermes-agent -z (1 model call)  {fmt([w for w, _, _ in peers])}")
        print(f"    its CPU (user+sys)            {fmt([c for _, _, c in peers])}")
        print(f"    its peak RSS                  {fmt_mb([m for _, m, _ in peers])}")
        for mode in modes:
            print(f"  hermes-tui -p {mode:<5} / hermes-agent -z: wall {statistics.median([r.wall for r in runs[mode]]) / peer_cold:.2f}x,"
                  f" CPU {statistics.median([r.cpu for r in runs[mode]]) / statistics.median([c for _, _, c in peers]):.2f}x")
    off_wall = statistics.median([r.wall for r in off])
    print(f"  warm: wall median {warm_wall * 1000:.0f} ms, budget <= {BUDGET_WARM * 1000:.0f} ms: "
          f"{'within' if warm_wall <= BUDGET_WARM else 'OVER'}; {warm_wall / off_wall:.3f}x off, budget <= "
          f"{BUDGET_WARM_OFF:.1f}x: {'within' if warm_wall <= BUDGET_WARM_OFF * off_wall else 'OVER'}; client RSS "
          f"median {warm_rss:.1f} MB, budget <= {BUDGET_WARM_RSS_MB:.0f} MB: "
          f"{'within' if warm_rss <= BUDGET_WARM_RSS_MB else 'OVER'}")
    print(f"  cold: wall median {cold_wall * 1000:.0f} ms = {cold_wall / peer_cold:.2f}x hermes-agent's "
          f"{peer_cold:.2f} s ({source}), budget <= 0.80x: {'within' if cold_wall <= 0.8 * peer_cold else 'OVER'}")
    print(f"  the litellm import alone is {statistics.median(imports) / peer_cold:.2f}x hermes-agent's whole turn")
    print(f"  exit after the last event (off) median {statistics.median([r.exit for r in off]) * 1000:.0f} ms"
          f"   budget <= {BUDGET_EXIT * 1000:.0f} ms: "
          f"{'within' if statistics.median([r.exit for r in off]) <= BUDGET_EXIT else 'OVER'}")


if __name__ == "__main__":
    main()
