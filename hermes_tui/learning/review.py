"""``hermes-tui inbox list|accept N|reject N``: what Hermes learned under HERMES_LEARN=review.

One numbering over both kinds: the learned skills held in the skill index first, then the facts
waiting for approval in the curated memory (``FactStore.pending``, the one place they wait: the same
ones ``hermes-tui facts`` lists). Skills flagged as failing are listed after them (``skills pin`` keeps one).
Every line passes ``printable``: names, descriptions and facts are model-written text.
"""

from __future__ import annotations

from hermes_tui.config import Config
from hermes_tui.memory import facts as curated
from hermes_tui.memory.facts import Fact, FactStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.schema import Skill, SkillError
from hermes_tui.textsafe import printable


def _items(skills: SkillManager, facts: FactStore) -> list[Skill | Fact]:
    return [*skills.inbox(), *facts.pending()]


def _describe(item: Skill | Fact) -> str:
    if isinstance(item, Skill):
        return f"skill {item.name}: {item.description}"
    what = f"replaces {item.replaces}" if item.replaces else item.scope
    return f"fact ({what}): {item.text} [id {item.id}]"


def list_lines(skills: SkillManager, facts: FactStore) -> list[str]:
    """The waiting items, numbered, then the skills flagged as failing."""
    items = _items(skills, facts)
    lines = [f"{n}. {_describe(item)}" for n, item in enumerate(items, 1)]
    if lines:
        lines.append("`hermes-tui inbox accept N` keeps one (skills are offered to the model, facts join the "
                     "memory); `hermes-tui inbox reject N` drops it.")
    else:
        lines.append("The inbox is empty.")
    failing = [s for s in skills.states() if s.failing]
    if failing:
        lines += ["", "Flagged for review (failed more often than they worked; out of the prompt and hints):"]
        lines += [f"  {s.name}: {s.done} worked, {s.failed} failed; `hermes-tui skills pin {s.name}` keeps it"
                  for s in failing]
    return lines


def run_inbox_command(config: Config, skills: SkillManager, command: str, number: int | None) -> list[str]:
    """Run one command; raises ``SkillError`` or ``FactError`` (one readable line) when it cannot."""
    facts = curated.for_config(config)
    if command == "list":
        return [printable(line) for line in list_lines(skills, facts)]
    items = _items(skills, facts)
    if number is None or not 1 <= number <= len(items):
        raise SkillError(f"there is no inbox item {number}; `hermes-tui inbox list` numbers them")
    item = items[number - 1]
    if isinstance(item, Skill):
        if command == "accept":
            skills.accept_learned(item.name)
            return [printable(f"accepted skill {item.name}: it is offered to the model from now on")]
        skills.delete(item.name)
        return [printable(f"rejected skill {item.name}: deleted")]
    if command == "reject":  # the removal that keeps its words under "Earlier versions"
        gone = facts.remove(item.id)
        return [printable(f"rejected fact: {gone.text}")]
    kept = facts.approve(item.id)
    return [printable(f"accepted: remembered ({kept.scope}): {kept.text}")]
