"""The fixed prompt: what every request of a session starts with, built once so it stays byte-stable.

Its parts (the system rules, the tool schemas, the skills index, the instruction files) are kept
apart as well as joined, so ``/context``, ``hermes-tui context`` and the web's ``/api/context`` can
show what each costs, from the same record the agent sends.

The parts that change between sessions (the curated facts ranked against the first message, the
skills index) are stored at a session's first turn and reused when it is resumed (``for_session``),
so ``--session N`` sends the same bytes and the provider's prompt cache still holds.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.agent import instructions
from hermes_tui.agent.instructions import Instructions
from hermes_tui.agent.prompts import INDEX_LIMIT, MAIN_SYSTEM_PROMPT, skills_index

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

Counter = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], int]


@dataclass(frozen=True)
class Part:
    """One part of the fixed prompt and its size, as ``/context`` lists them."""

    name: str
    tokens: int
    note: str = ""


@dataclass(frozen=True)
class FixedPrompt:
    """The part of every request that stays the same for a session: rules, skills index,
    instruction files, memory and tool schemas (kept fixed so the provider's prompt cache
    holds)."""

    rules: str  # the behavioural spec with the workspace and tool names filled in
    skills_index: str
    instructions: Instructions
    tool_specs: tuple[dict[str, Any], ...]
    memory: str = ""  # the curated facts, added at the session's first turn

    @property
    def system(self) -> str:
        """The system message, exactly as sent."""
        return self.rules + self.skills_index + self.instructions.section() + self.memory

    def parts(self, count: Counter) -> list[Part]:
        """Each part with its token count (``count(messages, tools)``, the provider's tokenizer)."""
        def tokens(text: str) -> int:
            return count([{"role": "system", "content": text}], None) if text else 0

        system = [{"role": "system", "content": self.system}]
        tools = max(count(system, list(self.tool_specs)) - count(system, None), 0)
        section = self.instructions.section()
        included = [f.label for f in self.instructions.files if f.included]
        return [
            Part("system rules", tokens(self.rules)),
            Part("tool schemas", tools, f"{len(self.tool_specs)} tools"),
            Part("skills index", tokens(self.skills_index)),
            Part("instruction files", tokens(section), ", ".join(included) or "none"),
            Part("memory", tokens(self.memory), f"{self.memory.count(chr(10) + '- ')} facts" if self.memory
                 else "none yet (added at the first message)"),
        ]


def build(workspace: Path, home: Path, tool_names: list[str], tool_specs: list[dict[str, Any]],
          skills: SkillManager) -> FixedPrompt:
    rules, _, _ = MAIN_SYSTEM_PROMPT.partition("{skills_index}")
    return FixedPrompt(
        rules=rules.format(workspace=workspace, tool_names=", ".join(tool_names)),
        skills_index=skills_index(skills.for_prompt(INDEX_LIMIT), skills.count()),
        instructions=instructions.load(home, workspace),
        tool_specs=tuple(tool_specs),
    )


def for_session(prompt: FixedPrompt, memory: MemoryStore, session_id: int,
                memory_block: Callable[[], str]) -> FixedPrompt:
    """``prompt`` with the memory block and skills index its session fixed at its first turn.

    A session with none kept yet (its first turn, or one stored before they were) fixes them now:
    ``memory_block()`` and the skills index built at start. Raises what ``memory_block`` raises.
    """
    kept = memory.session_prompt(session_id)
    if kept is not None:
        block, index = kept
    else:
        block, index = memory_block(), prompt.skills_index
        try:
            memory.keep_session_prompt(session_id, block, index)
        except sqlite3.Error as exc:  # a read-only or full store: this process still sends them
            log.warning("could not keep session %d's prompt for a resume: %s", session_id, exc)
    return replace(prompt, memory=block, skills_index=index)


@dataclass(frozen=True)
class Report:
    """What ``/context`` shows: the fixed prompt's parts, the window, the instruction files' notes."""

    parts: tuple[Part, ...]
    window: int
    instructions: Instructions

    def markdown(self) -> str:
        total = sum(p.tokens for p in self.parts)
        lines = ["**Fixed prompt** (sent with every request of this session)", "",
                 "| part | tokens | |", "|---|---:|---|"]
        lines += [f"| {p.name} | {p.tokens:,} | {_cell(p.note)} |" for p in self.parts]
        lines += [f"| **total** | **{total:,}** | {total / max(self.window, 1):.1%} of a {self.window:,}-token window |"]
        files = self.instructions.files
        if files:
            lines += ["", "**Instruction files**", ""]
            for number, f in enumerate(files, start=1):
                state = ("approved" if f.approved else "held back: " + f.flagged) if f.flagged else "read"
                lines.append(f"{number}. `{_cell(f.label)}` — {_cell(state)}{' (cut)' if f.cut else ''}")
        for note in self.instructions.notes:
            lines.append(f"- {_cell(note)}")
        if self.instructions.held_back:
            lines += ["", "A held-back file stays out until you approve it: `/context approve N` in the TUI, "
                      "`hermes-tui context --approve PATH` in a shell. Approval holds for that exact content."]
        return "\n".join(lines)

    def lines(self) -> list[str]:
        """Plain text for a terminal or a pipe (the caller makes it printable)."""
        total = sum(p.tokens for p in self.parts)
        out = [f"{p.name:<18} {p.tokens:>7,}  {p.note}".rstrip() for p in self.parts]
        out.append(f"{'total':<18} {total:>7,}  {total / max(self.window, 1):.1%} of a {self.window:,}-token window")
        for number, f in enumerate(self.instructions.files, start=1):
            state = ("approved" if f.approved else "held back: " + f.flagged) if f.flagged else "read"
            out.append(f"instruction file {number}: {f.label} — {state}{' (cut)' if f.cut else ''}")
        out += [f"note: {note}" for note in self.instructions.notes]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "parts": [{"name": p.name, "tokens": p.tokens, "note": p.note} for p in self.parts],
            "total": sum(p.tokens for p in self.parts),
            "window": self.window,
            "instruction_files": [
                {"path": f.label, "included": f.included, "held_back": bool(f.flagged and not f.approved),
                 "reason": f.flagged, "cut": f.cut} for f in self.instructions.files],
            "notes": list(self.instructions.notes),
        }


def _cell(text: str) -> str:
    """Text from files is hostile: one line, no table or code breaks."""
    return " ".join(text.split()).replace("|", "\\|").replace("`", "'")
