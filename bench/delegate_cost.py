"""What sub-agents cost in tokens against doing the same reads in the parent (fake server, scripted).

One task needs FILES files read (SIZE bytes each) and answered from in a few lines. Two arms:

* ``parent``: the agent reads every file itself (READS_PER_STEP calls a step), then answers;
* ``delegate``: the agent hands the reads to SUBAGENTS sub-agents in one step (each reads its
  share and answers in a short report), then answers from the reports.

Then FOLLOWUPS short turns follow in the same session (their requests carry whatever the task
left in the parent's history). Tokens are Hermes' own count of each request as sent (system
prompt, tool schemas, history: ``Usage.context_tokens``), the sub-agents' requests included; the
answers' tokens are the fake server's (a quarter of their characters). Token counts are the same
every run; the times vary and are printed for information only. Prints; never fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _common

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.events import Event, Subagent, Usage
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply, ToolCall

SUB_TASK = "Read these files and report, for each, its KEY line verbatim: "
REPORT_CHARS = 300  # a sub-agent's report: the few lines the parent needs


@dataclass
class Tally:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    sub_input_tokens: int = 0
    parent_context: int = 0  # tokens of the parent's last request: what it carries on

    def add(self, events: list[Event]) -> None:
        for event in events:
            inner = event.event if isinstance(event, Subagent) else event
            if not isinstance(inner, Usage) or inner.context_tokens is None:
                continue  # the parent's copy of a sub-agent's call: counted from its Subagent event
            self.requests += 1
            self.input_tokens += inner.context_tokens
            self.output_tokens += inner.completion_tokens
            if isinstance(event, Subagent):
                self.sub_input_tokens += inner.context_tokens
            else:
                self.parent_context = inner.context_tokens


@dataclass
class Arm:
    task: list[Tally] = field(default_factory=list)
    followups: list[Tally] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def _reply(text: str = "", calls: list[ToolCall] | None = None) -> Reply:
    size = len(text) + sum(len(c.arguments_json) for c in calls or [])
    return Reply(text=text, tool_calls=calls or [], usage=(0, max(1, size // 4)), chunk_size=400)


def script(files: list[str], per_step: int, subagents: int, delegate: bool):
    """The fake model of one arm: answers each request from what it holds."""
    shares = [files[i::subagents] for i in range(subagents)]

    def respond(request: RecordedRequest) -> Reply:
        users = [str(m["content"]) for m in request.messages if m["role"] == "user"]
        tools = [m for m in request.messages if m["role"] == "tool"]
        calls = [m for m in request.messages if m["role"] == "assistant" and m.get("tool_calls")]
        if users[0].startswith(SUB_TASK):  # a sub-agent: read its share in one step, then report
            if not tools:
                share = users[0][len(SUB_TASK):].split("\n")[0].split(", ")
                return _reply(calls=[ToolCall("read_file", {"path": p}) for p in share])
            return _reply("\n".join(f"{p}: KEY {p}" for p in files)[:REPORT_CHARS])
        if len(users) > 1:  # a follow-up turn
            return _reply("Noted.")
        if delegate:
            if not tools:
                return _reply(calls=[ToolCall("delegate", {"task": SUB_TASK + ", ".join(s)}) for s in shares])
            return _reply("Done: every KEY line is in the reports above.")
        done = sum(len(c["tool_calls"]) for c in calls)
        if done < len(files):
            return _reply(calls=[ToolCall("read_file", {"path": p}) for p in files[done:done + per_step]])
        return _reply("Done: every KEY line is in the files above.")

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--size", type=int, default=6000, help="bytes per file")
    parser.add_argument("--reads-per-step", type=int, default=5)
    parser.add_argument("--subagents", type=int, default=2)
    parser.add_argument("--followups", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor\n"
    arms = {"parent": Arm(), "delegate": Arm()}
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        files = []
        for n in range(args.files):
            name = f"file{n:02d}.txt"
            body = (line * (args.size // len(line) + 1))[:args.size]
            (ws / name).write_text(f"KEY {name}\n{body}")
            files.append(name)
        _common.isolated_env(home, ws, server.openai_base)
        os.environ["HERMES_LEARN"] = "off"  # the curator's requests are no part of either arm
        config = Config.load()
        memory = MemoryStore(config.db_path)
        skills = SkillManager(config.skills_dir)
        for _run in range(args.runs):
            for name, arm in arms.items():
                server.responder = script(files, args.reads_per_step, args.subagents, name == "delegate")
                loop = AgentLoop(config, memory, skills)
                start = time.perf_counter()
                task = Tally()
                task.add(list(loop.run_turn("Find the KEY line of every file here.")))
                arm.seconds.append(time.perf_counter() - start)
                after = Tally()
                for n in range(args.followups):
                    after.add(list(loop.run_turn(f"Follow-up {n}: thanks, noted?")))
                arm.task.append(task)
                arm.followups.append(after)
        memory.close()

    def med(values: list[int] | list[float]) -> float:
        return statistics.median(values)

    print(f"{args.files} files of {args.size:,} bytes, {args.reads_per_step} reads a step in the parent, "
          f"{args.subagents} sub-agents, {args.followups} follow-up turns; {args.runs} runs, medians")
    print(f"{'arm':9} {'requests':>8} {'input tok':>10} {'of it subs':>10} {'output tok':>10} "
          f"{'parent ctx':>10} {'follow-ups in':>13} {'total in':>9} {'turn s':>7}")
    totals = {}
    for name, arm in arms.items():
        task_in = med([t.input_tokens for t in arm.task])
        follow_in = med([t.input_tokens for t in arm.followups])
        totals[name] = (task_in, follow_in, med([t.parent_context for t in arm.task]))
        print(f"{name:9} {med([t.requests for t in arm.task]):8.0f} {task_in:10,.0f} "
              f"{med([t.sub_input_tokens for t in arm.task]):10,.0f} {med([t.output_tokens for t in arm.task]):10,.0f} "
              f"{totals[name][2]:10,.0f} {follow_in:13,.0f} {task_in + follow_in:9,.0f} {med(arm.seconds):7.3f}")
    (p_task, p_follow, p_ctx), (d_task, d_follow, d_ctx) = totals["parent"], totals["delegate"]
    print(f"ratios delegate / parent: the task's input tokens {d_task / p_task:.2f}x, "
          f"the parent's context after it {d_ctx / p_ctx:.2f}x, the follow-ups {d_follow / p_follow:.2f}x, "
          f"task + {args.followups} follow-ups {(d_task + d_follow) / (p_task + p_follow):.2f}x")


if __name__ == "__main__":
    main()
