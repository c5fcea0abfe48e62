"""``hermes-tui skills list|show|stats|archive|restore|pin``: the library's lifecycle from the shell.

Each command returns the lines to print; names, descriptions and bodies come from skill files
(hostile text), so every line passes ``printable`` before it reaches the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from hermes_tui.skills.lifecycle import SkillState, SkillStats
from hermes_tui.skills.manager import SkillManager, SkillNotFoundError
from hermes_tui.skills.schema import Skill, SkillError, load_frontmatter, split_text
from hermes_tui.textsafe import printable

SHOWN_BODY = 4000  # characters of instructions `show` prints

# Where a quarantined skill is reviewed: (name, subject) -> one sentence. The surface supplies it,
# since the keys live in the TUI's action table and this core module must not import the TUI.
Review = Callable[[str, str], str]


def run_skill_command(skills: SkillManager, command: str, args: Mapping[str, object], review: Review) -> list[str]:
    """Run one command; raises ``SkillError`` (one readable line) when it cannot."""
    name = str(args.get("name") or "")
    if command == "import":
        from hermes_tui.skills.importer import import_library

        report = import_library(args["folder"], skills, skills.progress)  # type: ignore[arg-type]  # argparse gives the folder as a str
        lines = report.lines() + [quarantined_line(name, reason, review) for name, reason in report.quarantined]
    elif command == "list":
        lines = list_lines(skills, review)
    elif command == "show":
        lines = show_lines(skills, name)
    elif command == "stats":
        stats = skills.stats(name or None)
        if name and not stats:
            raise SkillNotFoundError(f"no skill named {name!r}; `hermes-tui skills list` shows the names")
        lines = stats_lines(stats)
    elif command == "archive":
        lines = [f"archived {name} to {skills.archive(name)}; `hermes-tui skills restore {name}` brings it back"]
    elif command == "restore":
        skill = skills.unarchive(name)
        lines = [f"restored {skill.name} to {skill.folder}"]
    elif command == "pin":
        off = bool(args.get("off"))
        skill = skills.pin(name, not off)
        lines = [f"unpinned {skill.name}: it ages again" if off else f"pinned {skill.name}: it never ages"]
    else:  # argparse only lets the commands above through
        raise ValueError(command)
    return [printable(line) for line in lines]


def quarantined_line(name: str, reason: str, review: Review) -> str:
    """One imported skill the guard held back, and where to review it."""
    return (f"  quarantined {name}: the skill guard flagged it ({reason}); it is not offered to the model "
            f"until you approve it. {review(name, 'it')}")


def quarantined_lines(skill: Skill) -> list[str]:
    """``show`` for a skill the guard holds back: why, where, and its text (printable)."""
    return [f"{skill.name}: quarantined by the skill guard ({skill.quarantine})", f"path: {skill.path}",
            "it is not offered to the model until approved in the TUI's Skills pane (or deleted)", "",
            _shown_body(skill.body)]


def list_lines(skills: SkillManager, review: Review) -> list[str]:
    """The library's table, then what it holds back (as the Skills pane lists it below its skills)."""
    skills.age()
    states = skills.states()
    held = skills.held_back()
    if not states and not held:
        return ["No skills yet."]
    lines: list[str] = []
    if states:
        width = max(len(s.name) for s in states)
        lines.append(f"{'NAME':<{width}}  {'STATE':<8}  {'USES':>4}  {'SUCCESS':>7}  NOTES")
        for state in states:
            lines.append(f"{state.name:<{width}}  {state.state:<8}  {state.uses:>4}  {_rate(state):>7}  {_notes(state)}")
    if held:
        lines += [""] if lines else []
        lines.append("Held back, not offered to the model:")
        for item in held:
            why = "quarantined by the skill guard" if item.quarantined else "skipped"
            lines.append(f"  {item.name or item.path} ({why}): {item.reason}")
        quarantined = [item.name for item in held if item.quarantined and item.name]
        if len(quarantined) == 1:
            lines.append(review(quarantined[0], "it") + ".")
        elif quarantined:
            lines.append(review("NAME", "them") + ".")
    return lines


def show_lines(skills: SkillManager, name: str) -> list[str]:
    state = next((s for s in skills.states() if s.name == name), None)
    skill = skills.get(name)
    if skill is None and state is None:
        raise SkillNotFoundError(f"no skill named {name!r}; `hermes-tui skills list` shows the names")
    if skill is not None and skill.quarantine:
        return quarantined_lines(skill)
    if state is None:
        state = next(s for s in skills.states() if s.name == skill.name)  # type: ignore[union-attr]  # skill and state are not both None (raised above)
    lines = [
        f"{state.name}: {state.state}" + (f" ({_notes(state)})" if _notes(state) else ""),
        f"path: {state.path}",
        f"uses: {state.uses}, finished well: {state.done}, errors or corrections: {state.failed}, "
        f"success rate: {_rate(state)}",
        f"last used: {_when(state.last_used)}",
    ]
    if skill is not None:
        lines += provenance_lines(skill)
        lines += [f"version: {skill.version}", f"description: {skill.description}",
                  f"triggers: {', '.join(skill.triggers) or '-'}", "", _shown_body(skill.body)]
    return lines


PROVENANCE = (("learned_by", "learned by"), ("learned_in", "learned in"), ("refined_by", "refined by"))


def provenance_lines(skill: Skill) -> list[str]:
    """Who wrote a learned skill and from which session (its ``metadata``), one line each."""
    try:
        text = skill.path.read_text(encoding="utf-8") if skill.path is not None else ""
        meta = load_frontmatter(split_text(text).frontmatter).get("metadata")
    except (OSError, SkillError, UnicodeDecodeError):
        return []
    if not isinstance(meta, dict):
        return []
    return [f"{label}: {meta[key]}" for key, label in PROVENANCE if isinstance(meta.get(key), str)]


def stats_lines(stats: list[SkillStats]) -> list[str]:
    """``skills stats``: uses and outcomes, and the mean cost of the turns that used a skill against
    the turn it was learned from (what a user weighs to keep or drop it)."""
    if not stats:
        return ["No skills yet."]
    width = max(len(s.name) for s in stats)
    lines = [f"{'NAME':<{width}}  {'USES':>4}  {'OK':>3}  {'FAILED':>6}  {'CALLS/USE':>9}  {'TOKENS/USE':>10}  "
             f"{'LEARNED FROM (CALLS, TOKENS)':<28}  NOTES"]
    for s in stats:
        learned = "-" if s.learned_tool_calls is None else f"{s.learned_tool_calls}, {s.learned_tokens or 0}"
        notes = "failing: out of the prompt and hints; `skills pin` keeps it" if s.failing else ""
        lines.append(f"{s.name:<{width}}  {s.uses:>4}  {s.successes:>3}  {s.failures:>6}  {_mean(s.mean_tool_calls):>9}  "
                     f"{_mean(s.mean_tokens):>10}  {learned:<28}  {notes}".rstrip())
    return lines


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _shown_body(body: str) -> str:
    return body if len(body) <= SHOWN_BODY else body[:SHOWN_BODY] + "\n[…]"


def _rate(state: SkillState) -> str:
    rate = state.success_rate
    return "-" if rate is None else f"{rate:.0%}"


def _notes(state: SkillState) -> str:
    notes = ["pinned"] if state.pinned else []
    if not state.learned:
        notes.append("guest: never ages")
    if state.failing:
        notes.append("failing: out of the prompt and hints, pin to keep")
    return ", ".join(notes)


def _when(epoch: float) -> str:
    if not epoch:
        return "never"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
