"""Fixed prompt overhead: tokens of the system prompt + tool schemas in the first request.

Measured on the real request Hermes sends (captured by the fake LLM server), with 0, 50 and 200
skills installed. Budget: <= 2,000 tokens with the edit and search tools (issue 22; DESIGN.md's
general budget is 2,500) + <= 25 tokens per skill; each built-in tool's schema is listed. Also the skill
tools' replies at 200 skills: the largest list_skills page (budget ~2,000 tokens) and use_skill on
a 120 KB body (capped near 8,000 tokens). Prints; never fails.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import _common  # (sys.path + env)
import tiktoken

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer

WORDS = ("deploy build test lint docker python flask railway postgres backup migrate release "
         "invoice report scrape parse convert resize image video audio git branch rebase").split()


def install_skills(skills: SkillManager, count: int) -> None:
    for n in range(count):
        a, b, c = WORDS[n % len(WORDS)], WORDS[(n * 7 + 3) % len(WORDS)], WORDS[(n * 11 + 5) % len(WORDS)]
        skills.create(f"{a}-{b}-{c}-{n}", f"How to {a} and {b} a {c} project step by step, with checks",
                      [a, b, c], f"1. {a}\n2. {b}\n3. {c}\n")


def tool_tokens(encoding: tiktoken.Encoding) -> list[tuple[str, int]]:
    """Tokens of each built-in tool's schema, as sent (its JSON)."""
    from hermes_tui.agent.tools import TOOLS

    return [(tool.name, len(encoding.encode(json.dumps(tool.spec())))) for tool in TOOLS]


def first_request_tokens(count: int, encoding: tiktoken.Encoding) -> tuple[int, int, int]:
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        _common.isolated_env(home, ws, server.openai_base)
        config = Config.load()
        skills = SkillManager(config.skills_dir)
        install_skills(skills, count)
        memory = MemoryStore(config.db_path)
        loop = AgentLoop(config, memory, skills)
        list(loop.run_turn("hello"))
        body = server.requests[0].body
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        tools = json.dumps(body["tools"])
        memory.close()
        return len(encoding.encode(system)), len(encoding.encode(tools)), len(body["tools"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--counts", default="0,50,200", help="skill counts to measure")
    args = parser.parse_args()
    # Importing this points TIKTOKEN_CACHE_DIR at the cl100k file bundled with litellm (no network).
    import litellm.litellm_core_utils.default_encoding  # noqa: F401 - imported for that side effect

    encoding = tiktoken.get_encoding("cl100k_base")
    print("prompt overhead (tiktoken cl100k_base) of the first request")
    print(f"{'skills':>7} {'system':>8} {'tools':>7} {'total':>7} {'budget':>7}  per-skill over 0")
    base_total = None
    for count in (int(c) for c in args.counts.split(",")):
        system, tools, n_tools = first_request_tokens(count, encoding)
        total = system + tools
        budget = 2000 + 25 * count
        base_total = total if base_total is None else base_total
        per_skill = f"{(total - base_total) / count:6.2f}" if count else "     -"
        print(f"{count:>7} {system:>8} {tools:>7} {total:>7} {budget:>7}  {per_skill}   ({n_tools} tools)")
    print("per tool: " + ", ".join(f"{name} {tokens}" for name, tokens in tool_tokens(encoding)))
    page, used = skill_tool_replies(encoding)
    print(f"list_skills page (40 of 200 skills, long descriptions): {page} tokens (budget ~2,000)")
    print(f"use_skill on a 120 KB body: {used} tokens (cap ~8,000 + folder and files)")


def skill_tool_replies(encoding: tiktoken.Encoding) -> tuple[int, int]:
    from hermes_tui.agent.skill_tools import PAGE_MAX, load, page

    with tempfile.TemporaryDirectory() as tmp:
        skills = SkillManager(Path(tmp) / "skills")
        for n in range(200):
            skills.create(f"skill-{n}", f"Procedure {n}: " + "what it does and when to use it, " * 30,
                          ["x"], "Steps.")
        skills.create("huge", "A very long procedure.", ["huge"], "Step: do the thing with care.\n" * 4000)
        _ok, listing = page(skills, "", PAGE_MAX, 0)
        _ok, used = load(skills, "huge")
        return len(encoding.encode(listing)), len(encoding.encode(used))


if __name__ == "__main__":
    main()
