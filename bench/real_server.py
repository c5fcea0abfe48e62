"""Hermes against a real OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio...): which
of test_real_server.py's scenarios hold there, and how long they take.

    python bench/real_server.py http://localhost:8080/v1 [--model NAME] [--window 2048]
    python bench/real_server.py            # starts the bundled llama-cpp-python + SmolLM2-135M

Scenarios: the window the server reports; a text answer (time to the first words and to the
end; whether the server sent token counts); the step after a tool call, in a session recorded
through the fake server, and its resume; compaction in a ``--window`` window; an abandoned
background request (a summary given up after a second) and how long the next small request then
takes, against the same request measured first in this run (the ratio is what counts: a server
that kept working for the abandoned one makes it large); a URL without a scheme. Prints one line
per scenario, "held" or "FAILED" with the reason, never fails on a time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _common import ROOT  # noqa: F401 - puts the repository on sys.path

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config, ConfigError
from hermes_tui.events import Error, Notice, TextDelta, TurnFinished, Usage
from hermes_tui.llm import LLMClient
from hermes_tui.llm_errors import LLMError
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.windows import ask_server
from tests.fakes.server import FakeLLMServer, Reply, ToolCall


class Bench:
    def __init__(self, base: str, model: str, root: Path) -> None:
        self.base, self.model, self.root = base, model, root
        self.results: list[tuple[str, bool, str]] = []

    def env(self, name: str, **extra: str) -> dict[str, str]:
        home, workspace = self.root / name / "home", self.root / name / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "notes.txt").write_text("alpha\nbeta\n")
        return {"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": self.model, "HERMES_API_BASE": self.base,
                "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace), **extra}

    def config(self, name: str, **extra: str) -> Config:
        env = self.env(name, **extra)
        return Config.load(env, cwd=Path(env["HERMES_WORKSPACE"]))

    def run(self, title: str, scenario: Callable[[], str]) -> None:
        started = time.perf_counter()
        try:
            detail = scenario()
            held = True
        except Exception as exc:  # noqa: BLE001 - a failed scenario is a result to print
            detail, held = f"{type(exc).__name__}: {exc}", False
        seconds = time.perf_counter() - started
        self.results.append((title, held, detail))
        print(f"{'held  ' if held else 'FAILED'}  {title:<44} {seconds:7.1f} s  {detail}", flush=True)

    # -- scenarios

    def window(self) -> str:
        config = self.config("window")
        told = ask_server(config)
        return f"the server says {told:,} tokens" if told else "the server does not say: 8,192 assumed"

    def text(self) -> str:
        events, first = self.turn(self.config("text"), "Say hello in five words.")
        usage = [e for e in events if isinstance(e, Usage)][-1]
        counts = "estimated by Hermes" if usage.estimated else "sent by the server"
        return f"first words after {first:.1f} s; token counts {counts}"

    def tool_step_and_resume(self) -> str:
        config = self.config("tools")
        session = self.recorded("tools", [Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
                                          Reply(text="It says alpha and beta.")], ["What is in notes.txt?"])
        self.turn(config, "Thanks. Say ok.", session)
        self.turn(config, "Say ok once more.", session)
        return "the step after a tool call and its resume were answered"

    def compaction(self, window: int) -> str:
        long_answer = "The report covers budgets, staffing and the timeline of the migration. " * 25
        session = self.recorded("compact", [Reply(text=f"Answer {n}. {long_answer}") for n in range(4)],
                                [f"Question {n}: tell me about the report." for n in range(4)])
        events, _first = self.turn(self.config("compact", HERMES_CONTEXT_TOKENS=str(window)), "Say ok.", session)
        notes = [e.message for e in events if isinstance(e, Notice) and e.message.startswith("Compacted")]
        if not notes:
            raise AssertionError("no compaction happened")
        return notes[0][:110]

    def abandoned(self) -> str:
        client = LLMClient(self.config("abandon"))
        small = [{"role": "user", "content": "Say ok."}]
        baseline = self.timed(lambda: client.complete(small, timeout=600))
        cancel = threading.Event()
        long_request = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
        worker = threading.Thread(target=self.quietly, args=(client, long_request, cancel), daemon=True)
        worker.start()
        time.sleep(1.0)
        cancel.set()
        worker.join(30)
        after = self.timed(lambda: client.complete(small, timeout=600))
        return f"next small request {after:.1f} s vs {baseline:.1f} s before (ratio {after / baseline:.2f})"

    def no_scheme(self) -> str:
        bare = self.base.split("://", 1)[-1]
        try:
            self.config("scheme", HERMES_API_BASE=bare)
        except ConfigError as exc:
            return str(exc)[:110]
        raise AssertionError("a URL without a scheme was accepted")

    # -- helpers

    @staticmethod
    def quietly(client: LLMClient, messages: list[dict[str, str]], cancel: threading.Event) -> None:
        try:
            client.complete(messages, timeout=600, cancel=cancel)
        except LLMError:
            pass

    @staticmethod
    def timed(call: Callable[[], object]) -> float:
        started = time.perf_counter()
        call()
        return time.perf_counter() - started

    def turn(self, config: Config, text: str, session_id: int | None = None) -> tuple[list[object], float]:
        memory = MemoryStore(config.db_path)
        try:
            loop = AgentLoop(config, memory, SkillManager(config.skills_dir), session_id=session_id)
            started, first, events = time.perf_counter(), None, []
            for event in loop.run_turn(text):
                events.append(event)
                if isinstance(event, TextDelta) and first is None:
                    first = time.perf_counter() - started
            errors = [e.message for e in events if isinstance(e, Error)]
            if errors:
                raise AssertionError(errors[0])
            if next(e for e in events if isinstance(e, TurnFinished)).stopped_reason != "done":
                raise AssertionError("the turn did not finish")
            return events, first or 0.0
        finally:
            memory.close()

    def recorded(self, name: str, replies: list[Reply], prompts: list[str]) -> int:
        env = self.env(name)
        with FakeLLMServer() as fake:
            env.update(HERMES_PROVIDER="openai", HERMES_MODEL="test-model", HERMES_API_BASE=fake.openai_base,
                       OPENAI_API_KEY="sk-bench")
            config = Config.load(env, cwd=Path(env["HERMES_WORKSPACE"]))
            memory = MemoryStore(config.db_path)
            try:
                loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
                fake.queue(*replies)
                for prompt in prompts:
                    list(loop.run_turn(prompt))
                return loop.session_id
            finally:
                memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="the server's OpenAI api_base, e.g. http://localhost:11434/v1")
    parser.add_argument("--model", default="local-model", help="HERMES_MODEL (Ollama and vLLM need the real name)")
    parser.add_argument("--window", type=int, default=2048, help="window for the compaction scenario")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-real-") as folder:
        local = None
        if not args.url:
            from tests import realserver

            reason = realserver.missing()
            if reason:
                sys.exit(f"no URL given and no bundled server: {reason}")
            local = realserver.start(Path(folder), n_ctx=args.window, answer_tokens=48)
            print(f"started llama-cpp-python + SmolLM2-135M at {local.base} (--n_ctx {args.window}, answers "
                  "capped at 48 tokens)", flush=True)
        bench = Bench(args.url or local.base, args.model, Path(folder))
        try:
            bench.run("window", bench.window)
            bench.run("text answer", bench.text)
            bench.run("step after a tool call, and resume", bench.tool_step_and_resume)
            bench.run(f"compaction in a {args.window:,} window", lambda: bench.compaction(args.window))
            bench.run("abandoned background request", bench.abandoned)
            bench.run("URL without a scheme", bench.no_scheme)
        finally:
            if local is not None:
                local.stop()
        held = sum(1 for _title, ok, _detail in bench.results if ok)
        print(f"{held} of {len(bench.results)} scenarios held")


if __name__ == "__main__":
    main()
