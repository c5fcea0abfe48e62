"""Time per model call through AgentLoop vs a bare streamed litellm.completion, same fake server.

Both stream the same scripted answer over the OpenAI wire; AgentLoop adds what a real turn costs
(storing messages, skill lookup, tool schemas, the stream pump, events). Budget: <= 1.2x.
Runs are interleaved so machine noise hits both sides alike. Prints; never fails.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import _common
from _common import summary_ms

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.llm import _lib, request_args
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--words", type=int, default=300, help="words in the scripted answer")
    args = parser.parse_args()
    answer = " ".join(f"word{n % 50}" for n in range(args.words))
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        server.responder = lambda request: Reply(text=answer, chunk_size=6)
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        _common.isolated_env(home, ws, server.openai_base)
        config = Config.load()
        memory = MemoryStore(config.db_path)
        skills = SkillManager(config.skills_dir)
        for n in range(20):
            skills.create(f"skill-{n}", f"A saved procedure number {n}", ["word1", f"t{n}"], "1. step")
        litellm = _lib()
        request = request_args(config, 60.0)

        def bare() -> None:
            stream = litellm.completion(messages=[{"role": "user", "content": "hi"}], stream=True,
                                        stream_options={"include_usage": True}, **request)
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text == answer

        loop = AgentLoop(config, memory, skills)

        def agent() -> None:
            loop.history.clear()  # one model call per sample, without a growing history
            events = list(loop.run_turn("hi"))
            assert events[-1].text == answer, events[-1]

        for warm in (bare, agent, bare, agent):
            warm()
        timings: dict[str, list[float]] = {"bare": [], "agent": []}
        for _ in range(args.calls):
            for name, fn in (("bare", bare), ("agent", agent)):
                start = time.perf_counter()
                fn()
                timings[name].append(time.perf_counter() - start)
        memory.close()
    chunks = -(-len(answer) // 6)
    print(f"{args.calls} calls each, {args.words}-word answer in {chunks} chunks, OpenAI wire, fake server")
    print(f"  bare litellm.completion : {summary_ms(timings['bare'])}")
    print(f"  AgentLoop.run_turn      : {summary_ms(timings['agent'])}")
    ratio = statistics.median(timings["agent"]) / statistics.median(timings["bare"])
    print(f"  ratio of medians (agent / bare): {ratio:.3f}x   (budget <= 1.2x)")


if __name__ == "__main__":
    main()
