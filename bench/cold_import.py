"""What ``import litellm`` and one streamed completion cost in a fresh process, lazy subtrees off and on.

Each round runs two fresh interpreters in turn (the order alternates): both import litellm the way
``llm._lib()`` does (PRODUCTION mode, local cost map, no pydantic plugins, gc off), one with
``hermes_tui.lazy_imports`` installed first. Each then streams one answer (text and a tool call)
from the fake server over the OpenAI wire, then over the Anthropic wire. Reported per arm: CPU
seconds of the import (``time.process_time``: steady on a loaded machine, unlike wall time),
modules whose bodies ran after the import and after the two streams, peak RSS. Medians; never
fails on a figure.

    python bench/cold_import.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import ROOT

from tests.fakes.server import FakeLLMServer, Reply, ToolCall

CHILD = """
import gc, json, os, resource, sys, time
os.environ.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MODE="PRODUCTION", PYDANTIC_DISABLE_PLUGINS="__all__")
from hermes_tui import lazy_imports
if sys.argv[1] == "on":
    lazy_imports.install()
started = time.process_time()
gc.disable()
import litellm
gc.enable()
cpu = time.process_time() - started
def ran():
    return len(sys.modules) - len(lazy_imports.waiting())
imported = ran()
messages = [{"role": "user", "content": "hi"}]
tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}}}]
for model, base, key in (("openai/test-model", sys.argv[2] + "/v1", "sk-test"),
                         ("anthropic/claude-sonnet-4-5", sys.argv[2], "sk-ant-test")):
    for _chunk in litellm.completion(model=model, api_base=base, api_key=key, messages=messages, tools=tools,
                                     stream=True, stream_options={"include_usage": True}, max_retries=0):
        pass
print(json.dumps({"cpu": cpu, "imported": imported, "streamed": ran(),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(arm: str, server: FakeLLMServer) -> dict[str, float]:
    reply = Reply(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})])
    server.queue(reply, reply)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", CHILD, arm, server.url], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    arms: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    with FakeLLMServer() as server:
        for round_ in range(args.runs):
            for arm in (("off", "on") if round_ % 2 == 0 else ("on", "off")):
                arms[arm].append(child(arm, server))

    def median(arm: str, key: str) -> float:
        return statistics.median(r[key] for r in arms[arm])

    print(f"import litellm + a streamed completion per wire, {args.runs} interleaved rounds (medians)")
    for key, label, unit in (("cpu", "import CPU", "s"), ("imported", "modules run by the import", ""),
                             ("streamed", "modules run after both streams", ""), ("rss", "peak RSS", "MB")):
        off, on = median("off", key), median("on", key)
        print(f"  {label:<32} off {off:8.2f}{unit:<2}  on {on:8.2f}{unit:<2}  {on / off:.2f}x")


if __name__ == "__main__":
    main()
