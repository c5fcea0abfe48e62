"""Does Hermes learn? Scripted sessions through the fake server (OpenAI wire), and the skill router on
the published corpus. Prints; never fails.

  python bench/learning.py ../shared/corpora/skills        (the folder holding the corpus and queries)

1. Facts recalled: session 1 saves facts with the memory tool; sessions 2-5 start fresh. The share
   of the facts present in each session's first request, then the same past the prompt cap (300
   facts): whether the fact relevant to the first message still gets in.
2. What the memory and instruction blocks cost, in tokens (the provider's tokenizer via litellm).
3. The router on the corpus: hint precision and recall, and search R@3, on the development queries.
4. Near-duplicates: 50 curator proposals of 10 procedures (5 wordings each): how many skills remain;
   and how many published skills the check would take for another one.
5. Ranking after failures: 10 pairs of comparable skills (same procedure, two names). Whichever of
   a pair ranks first fails in a scripted session (use_skill, then the server errors) and the other
   succeeds; then: in how many pairs the one that succeeded ranks first in search, in the hints
   and in the prompt index (before the sessions the one that failed ranked first in all of them).
"""

from __future__ import annotations

import argparse
import tarfile
import tempfile
from pathlib import Path

import _common

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.memory import facts
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.similar import CANDIDATES, near_duplicate
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall

FACTS = [
    ("user", "I use pytest, never unittest."), ("user", "I prefer short answers with code first."),
    ("user", "My editor is neovim."), ("project", "The deploy target is staging-7."),
    ("project", "The database is PostgreSQL 16 on port 5433."), ("project", "CI runs on GitHub Actions."),
    ("project", "Never push to main directly; open a pull request."), ("user", "I work in UTC+1."),
]
PROCEDURES = [
    ("count-lines", "Count the lines of code in a repository", "loc, sloc, line count"),
    ("rotate-logs", "Rotate and compress old log files", "logrotate, old logs, compress logs"),
    ("resize-images", "Resize a folder of images to a maximum width", "thumbnails, shrink photos"),
    ("backup-postgres", "Back up a PostgreSQL database with pg_dump", "pg_dump, database backup"),
    ("find-large-files", "Find the largest files on a disk", "disk usage, du, big files"),
    ("git-undo-commit", "Undo the last git commit but keep the changes", "git reset, uncommit"),
    ("convert-csv-json", "Convert a CSV file to JSON", "csv to json, parse csv"),
    ("check-ssl-expiry", "Check when a site's TLS certificate expires", "ssl, certificate expiry"),
    ("docker-cleanup", "Remove unused Docker images and containers", "docker prune, free disk"),
    ("python-venv", "Create a Python virtual environment and install requirements", "venv, pip install"),
]
WORDINGS = [
    lambda n, d: (n, d), lambda n, d: (f"{n}-helper", f"How to {d[0].lower() + d[1:]}"),
    lambda n, d: (f"quick-{n}", f"{d} quickly"), lambda n, d: (n.replace("-", "-and-", 1), f"{d}, step by step"),
    lambda n, d: (f"{n}-v2", f"{d} (the reliable way)"),
]


def recalled(home: Path, workspace: Path) -> None:
    with FakeLLMServer() as server:
        _common.isolated_env(home, workspace, server.openai_base)
        config = Config.load()
        with MemoryStore(config.db_path) as memory:
            calls = [ToolCall("memory", {"action": "save", "scope": s, "text": t}) for s, t in FACTS]
            server.queue(Reply(tool_calls=calls), Reply(text="Saved."))
            list(AgentLoop(config, memory, SkillManager(config.skills_dir)).run_turn("here is how I work"))
            print("1. facts recalled in the first request of session N (session 1 saved them):")
            for number in range(2, 6):
                before = len(server.requests)
                server.queue(Reply(text="ok"))
                loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
                list(loop.run_turn("hello again"))
                system = server.requests[before].system or ""
                share = sum(text in system for _, text in FACTS) / len(FACTS)
                print(f"   session {number}: {share:.0%} of {len(FACTS)} facts")
            parts = {p.name: p.tokens for p in loop.prompt_parts()}
            store = facts.for_config(config)
            for n in range(300):
                store.save("project", f"Service {n} is owned by team {n} and lives in repo svc-{n}.")
            store.save("project", "The flaky test is tests/test_payments.py::test_refund_rounding.")
            before = len(server.requests)
            server.queue(Reply(text="ok"))
            loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
            list(loop.run_turn("why does test_refund_rounding fail in test_payments?"))
            system = server.requests[before].system or ""
            capped = {p.name: p.tokens for p in loop.prompt_parts()}
            print(f"   past the cap ({len(store.facts())} facts): the relevant fact is "
                  f"{'in' if 'test_refund_rounding' in system else 'NOT in'} the prompt; the memory block "
                  f"costs {capped['memory']:,} tokens (cap {facts.PROMPT_TOKENS:,})")
    (workspace / "AGENTS.md").write_text("Use pytest. Run `make lint` before committing.\n" * 20)
    print("2. tokens of the fixed prompt's blocks (8 facts; a 20-line AGENTS.md added after):")
    for name, tokens in parts.items():
        print(f"   {name:<18} {tokens:>6,}")
    with_file = AgentLoop(config, MemoryStore(config.db_path), SkillManager(config.skills_dir))
    print(f"   instruction files  {with_file.fixed_prompt.parts(with_file.context.count)[3].tokens:>6,}"
          "  (with the AGENTS.md)")


def router(corpus: Path, queries: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skills"
        with tarfile.open(corpus) as archive:
            archive.extractall(root, filter="data")
        manager = SkillManager(root)
        pairs = [line.split("\t", 1) for line in queries.read_text().splitlines() if "\t" in line]

        def named(skill_name: str, wanted: str) -> bool:
            return skill_name == wanted or skill_name.endswith("/" + wanted) or skill_name.endswith(":" + wanted)

        found = shown = hinted_right = 0
        for wanted, query in pairs:
            found += any(named(s.name, wanted) for s in manager.search(query, limit=3))
            hints = manager.hint(query, limit=3)
            shown += len(hints)
            hinted_right += any(named(s.name, wanted) for s in hints)
        print(f"3. router on {manager.count():,} published skills, {len(pairs)} development queries:")
        print(f"   search R@3 {found / len(pairs):.2f}; hints: recall {hinted_right / len(pairs):.2f}, "
              f"precision {hinted_right / max(shown, 1):.2f} ({shown} hints shown)")
        skills = manager.list()
        twins = 0
        for skill in skills:  # proposed anew, would a published skill be taken for another one?
            query = " ".join([skill.name.split("/")[-1].replace("-", " "), skill.description, *skill.triggers])
            twins += near_duplicate(skill, [c for c in manager.search(query, limit=CANDIDATES)
                                            if c.name != skill.name]) is not None
        print(f"   near-duplicate check: {twins} of {len(skills):,} published skills resemble another one "
              f"enough to be merged ({twins / max(len(skills), 1):.1%}; the corpus has real duplicates too)")
        manager.close()


def near_duplicates(home: Path) -> None:
    manager = SkillManager(home / "dup-skills")
    for name, description, triggers in PROCEDURES:
        for wording in WORDINGS:
            proposed_name, proposed_description = wording(name, description)
            manager.propose(proposed_name, proposed_description, triggers.split(", "),
                            f"1. {proposed_description}.\n2. Check the result.")
    print(f"4. 50 proposals of {len(PROCEDURES)} procedures leave {manager.count()} skills (target {len(PROCEDURES)})")
    manager.close()


def ranking_after_failures(home: Path, workspace: Path) -> None:
    with FakeLLMServer() as server:
        _common.isolated_env(home, workspace, server.openai_base)
        config = Config.load()
        skills = SkillManager(home / "ranked-skills")
        pairs = {description: (name, f"{name}-alt") for name, description, _ in PROCEDURES}
        for _name, description, triggers in PROCEDURES:
            for twin in reversed(pairs[description]):  # so the plain name is first everywhere
                skills.create(twin, description, triggers.split(", "), f"1. {description}.\n2. Check the result.")

        def first(found: list, pair: tuple[str, str]) -> str | None:
            return next((s.name for s in found if s.name in pair), None)

        def tally(winners: dict[str, str]) -> dict[str, int]:
            """In how many pairs the given skill ranks first, per surface."""
            prompt = skills.for_prompt(2 * len(pairs))
            return {
                "search": sum(first(skills.search(d), pairs[d]) == w for d, w in winners.items()),
                "hints": sum(first(skills.hint(d), pairs[d]) == w for d, w in winners.items()),
                "prompt index": sum(first(prompt, pairs[d]) == w for d, w in winners.items()),
            }

        # The one ranked first in search is the one whose use fails.
        losers = {d: first(skills.search(d), pair) or pair[0] for d, pair in pairs.items()}
        winners = {d: pair[1] if losers[d] == pair[0] else pair[0] for d, pair in pairs.items()}
        before = tally(winners)
        with MemoryStore(config.db_path) as memory:
            loop = AgentLoop(config, memory, skills)
            for description in pairs:
                server.queue(Reply(tool_calls=[ToolCall("use_skill", {"name": losers[description]})]), Fault(401))
                list(loop.run_turn(description))
                server.queue(Reply(tool_calls=[ToolCall("use_skill", {"name": winners[description]})]),
                             Reply(text="Done."))
                list(loop.run_turn(description))
        after = tally(winners)
        n = len(pairs)
        print(f"5. ranking after failures: {n} pairs of comparable skills; one use each, the first-ranked "
              "one's turn ends in an error, the other's finishes. The one that succeeded ranks first in:")
        for surface in before:
            print(f"   {surface:<13} before {before[surface]:>2}/{n}   after {after[surface]:>2}/{n}")
        skills.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, nargs="?", help="folder with skills-corpus.tar.xz and queries-dev.tsv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "workspace"
        workspace.mkdir()
        recalled(home, workspace)
        if args.corpus:
            router(args.corpus / "skills-corpus.tar.xz", args.corpus / "queries-dev.tsv")
        else:
            print("3. router: pass the corpus folder to measure it")
        near_duplicates(home)
        ranking_after_failures(home, workspace)


if __name__ == "__main__":
    main()
