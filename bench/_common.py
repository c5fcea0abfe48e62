"""Shared bits for the benchmark scripts (run from the repository root: python bench/NAME.py)."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so tests.fakes is importable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The processes a script starts run as a user's second start does, with Hermes' .pyc files written
# by the first. Where PYTHONDONTWRITEBYTECODE is set (this machine's shells set it), each run would
# compile Hermes' ~50 modules from source (~40 ms); the site-packages it is compared with, bare
# Textual's included, were compiled when they were installed.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def summary_ms(values: list[float]) -> str:
    """'p50 … p99 … max …' of seconds, printed in milliseconds."""
    ms = [v * 1000 for v in values]
    return (f"p50 {statistics.median(ms):8.2f} ms  p90 {percentile(ms, 90):8.2f} ms  "
            f"p99 {percentile(ms, 99):8.2f} ms  max {max(ms):8.2f} ms")


def isolated_env(home: Path, workspace: Path, server_base: str) -> None:
    """Point Hermes at a throw-away home/workspace and the fake server (OpenAI wire)."""
    os.environ.update({
        "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace), "HERMES_PROVIDER": "openai",
        "HERMES_MODEL": "test-model", "HERMES_API_BASE": server_base, "OPENAI_API_KEY": "sk-bench",
        "HERMES_APPROVAL": "always",
    })


class ServerProcess:
    """The fake LLM server in a process of its own, serving ``replies`` in order.

    Why: a provider is never in Hermes' process. In-process, the server's thread would take the
    GIL from the app and the stream parser, and a benchmark would measure that contention.
    """

    def __init__(self, *replies: object) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, replies), daemon=True)

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.openai_base = self._parent.recv()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._parent.send("stop")
        self._process.join(10)


def _serve(pipe: object, replies: tuple[object, ...]) -> None:
    from tests.fakes.server import FakeLLMServer

    with FakeLLMServer() as server:
        server.queue(*replies)
        pipe.send(server.openai_base)
        pipe.recv()  # until the benchmark is done
