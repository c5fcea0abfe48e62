"""One headless turn (``hermes-tui -p``) against the fake server, and where its time goes.

Measured in one run, runs alternating:

* ``python -c "import litellm"``: the floor no Hermes change can lower (the import is lazy, but a
  headless turn needs it);
* ``hermes-tui -p ... --json`` for a two-call turn (a tool call, then the answer) over the fake
  server's OpenAI wire, with the breakdown of each run:
  - *start -> 1st request*: interpreter, Hermes imports, litellm import, database, prompt;
  - *litellm import*: as the child logs it ("litellm imported in ... s" in its hermes.log), and
    litellm's first-call loading (modules, tokenizer) that Hermes runs offline in the background
    right after it ("litellm first call warmed in ... s"), overlapping the first real call;
  - *call N*: the request reaching the server -> its ``usage`` event reaching this script;
  - *after the turn*: model requests after ``turn_finished`` (curator, session summary), if any;
  - *exit*: the last event -> the process is gone.

Budget (issue 8): everything except the litellm import <= 1.0 s; exit <= 0.3 s after the last
event. Prints figures (median, p90 and max over the runs), never fails on a time.

    python bench/headless_turn.py [--runs 5]
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

from tests.fakes import server as fake
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

HERMES_TUI = str(Path(sys.executable).with_name("hermes-tui"))
BUDGET_REST = 1.0
BUDGET_EXIT = 0.3
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

        fake._Handler.do_POST = timed  # type: ignore[method-assign]

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
    proc = subprocess.Popen([HERMES_TUI, "-p", "What is in the workspace?", "--json"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    events: list[tuple[float, dict[str, object]]] = []
    for line in proc.stdout:
        events.append((time.monotonic(), json.loads(line)))
    proc.wait()
    ended = time.monotonic()
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"hermes-tui -p failed ({proc.returncode}): {err}")
    spans = timeline.take()
    run = Run(wall=ended - started, exit=ended - events[-1][0])
    run.first_request = spans[0][0] - started
    usages = [t for t, e in events if e["type"] == "usage"]
    run.calls = [u - s[0] for s, u in zip(spans, usages)]
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


def import_run(env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import litellm"], env=env, check=True)
    return time.monotonic() - started


def fmt(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"median {statistics.median(ms):7.0f} ms  p90 {percentile(ms, 90):7.0f} ms  max {max(ms):7.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    timeline = Timeline()
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "ws" / "notes.txt").write_text("hello\n")
        env = {**os.environ, "HOME": str(root), "XDG_STATE_HOME": str(root / "state"),
               "HERMES_HOME": str(root / "home"), "HERMES_WORKSPACE": str(root / "ws"),
               "HERMES_PROVIDER": "openai", "HERMES_MODEL": "test-model", "HERMES_API_BASE": server.openai_base,
               "OPENAI_API_KEY": "sk-bench", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        hermes_run(server, timeline, env, root / "state")  # warm-up: disk caches, .pyc files
        import_run(env)
        runs: list[Run] = []
        imports: list[float] = []
        for _ in range(args.runs):
            imports.append(import_run(env))
            runs.append(hermes_run(server, timeline, env, root / "state"))

    walls = [r.wall for r in runs]
    own_import = [r.litellm_import for r in runs]
    rest = [r.wall - r.litellm_import for r in runs]
    print(f"headless turn (2 model calls, 1 tool), {args.runs} runs, fake server over the OpenAI wire")
    print(f"  python -c 'import litellm'      {fmt(imports)}")
    print(f"  hermes-tui -p (wall)            {fmt(walls)}")
    print(f"    ratio to the bare import      {statistics.median(walls) / statistics.median(imports):.2f}x")
    print("  breakdown")
    print(f"    start -> 1st request          {fmt([r.first_request for r in runs])}")
    print(f"      of which litellm import     {fmt(own_import)}")
    print(f"      litellm first-call warm-up  {fmt([r.first_call_warmup for r in runs])}  "
          "(background, overlaps call 1)")
    for n in range(max(len(r.calls) for r in runs)):
        print(f"    model call {n + 1}                  {fmt([r.calls[n] for r in runs if len(r.calls) > n])}")
    late = [r.after_turn_requests for r in runs]
    print(f"    after the turn ({max(late)} requests)   {fmt([r.after_turn for r in runs])}")
    print(f"    exit after the last event     {fmt([r.exit for r in runs])}")
    print(f"  everything but the litellm import {fmt(rest)}   budget <= {BUDGET_REST * 1000:.0f} ms: "
          f"{'within' if statistics.median(rest) <= BUDGET_REST else 'OVER'}")
    print(f"  exit after the last event         median {statistics.median([r.exit for r in runs]) * 1000:.0f} ms"
          f"   budget <= {BUDGET_EXIT * 1000:.0f} ms: "
          f"{'within' if statistics.median([r.exit for r in runs]) <= BUDGET_EXIT else 'OVER'}")


if __name__ == "__main__":
    main()
