"""The Skills pane's preview, a component that owns what it shows: the highlighted skill as
Markdown, or its versions with the diff F8 or F9 would apply (``versions_of``), or why a held-back
file is held back. Re-rendering only when the text changes keeps the reader's scroll position.

Skill text is the model's or a stranger's: it is shown as Markdown (no markup, no terminal
sequences), and code and diffs are fenced so nothing in them closes the fence.
"""

from __future__ import annotations

import time
from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from hermes_tui.skills.lifecycle import SkillStats
from hermes_tui.skills.manager import HeldBack, SkillError, SkillManager
from hermes_tui.skills.schema import Skill
from hermes_tui.tui import actions

EMPTY_PREVIEW = "*No skill selected.*"
FENCE = "`" * 3


def key(action: str) -> str:
    """The key of a Skills pane action, as the action table has it."""
    return actions.main_key("skills", action)


def skill_markdown(skill: Skill, stats: SkillStats | None = None) -> str:
    """The preview: a summary of the frontmatter and of the skill's record, then the body as written."""
    updated = time.strftime("%Y-%m-%d", time.localtime(skill.updated))
    facts = f"version {skill.version} · used {skill.use_count}× · updated {updated}"
    lines = [f"## {skill.name}", "", skill.description, "", f"*{facts}*"]
    if stats is not None and stats.has_record:
        lines += ["", f"*{stats.summary()}*"]
    if skill.notice:
        lines += ["", f"*Note: {skill.notice}*"]
    if skill.triggers:
        lines += ["", "**Triggers:** " + ", ".join(skill.triggers)]
    lines += ["", "---", "", skill.body or "*This skill has no body.*"]
    return "\n".join(lines)


def _code(text: str, kind: str = "text") -> list[str]:
    return [f"{FENCE}{kind}", text.replace(FENCE, "~~~"), FENCE]


class SkillPreview(VerticalScroll):
    """The preview of one skill (or held-back file) below the tables."""

    def __init__(self, skills: SkillManager, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._manager = skills
        self.versions_of: str | None = None  # the skill F7 shows the versions of; moving away ends it
        self._previewed = EMPTY_PREVIEW

    def compose(self) -> ComposeResult:
        yield Markdown(EMPTY_PREVIEW, id="skills-preview-body")

    def show(self, skill: Skill | None) -> None:
        """The skill's preview, or its versions while F7 shows them for this skill."""
        if skill is not None and not skill.body:  # lists carry no bodies; read this one file
            skill = self._manager.get(skill.name) or skill
        if skill is None or skill.name != self.versions_of:
            self.versions_of = None
        if skill is None:
            text = EMPTY_PREVIEW
        elif self.versions_of is not None:
            text = self._versions_markdown(skill)
        else:
            text = skill_markdown(skill, next(iter(self._manager.stats(skill.name)), None))
        self._set(text)

    def toggle_versions(self, skill: Skill | None) -> None:
        """F7: the versions of ``skill``, or its preview again if they were shown."""
        self.versions_of = None if skill is None or self.versions_of == skill.name else skill.name
        self.show(skill)

    def show_held(self, item: HeldBack) -> None:
        state = "Quarantined by the skill guard" if item.quarantined else "Skipped"
        lines = [f"## {item.name or item.path}", "", f"**{state}:** {item.reason}", "", f"File: `{item.path}`"]
        if item.quarantined:
            lines += ["", f"{key('approve')} approves this exact content; {key('delete')} deletes the skill."]
            skill = self._manager.get(item.name or "")
            if skill is not None:
                lines += ["", "---", "", *_code(skill.body)]
        self._set("\n".join(lines))

    def outdated(self) -> None:
        """A skill changed on disk: the next ``show`` renders again even if its text looks the same."""
        self._previewed = ""

    def page(self, direction: str) -> None:
        """PgUp/PgDn (the focus stays where it is)."""
        if direction == "up":
            self.scroll_page_up(animate=False)
        else:
            self.scroll_page_down(animate=False)

    def _set(self, text: str) -> None:
        if text == self._previewed:
            return  # unchanged: skip the re-parse (and keep the reader's scroll position)
        self._previewed = text
        self.query_one("#skills-preview-body", Markdown).update(text)
        self.scroll_home(animate=False)

    def _versions_markdown(self, skill: Skill) -> str:
        """The version list, then the diff F8 or F9 would apply."""
        try:
            versions = self._manager.versions(skill.name)
            pending = [v for v in versions if v.kind == "pending"]
            archived = [v for v in versions if v.kind == "archived"]
            lines = [f"## {skill.name}: versions", ""]
            for v in versions:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(v.time))
                lines.append(f"- `{v.label}` ({v.kind}, {when})")
            diff = ""
            if pending:
                diff = self._manager.accept_diff(skill.name, pending[-1].label)
                lines += ["", f"**{key('accept')} accepts `{pending[-1].label}`**, merged into the file as it is now "
                          "(your changes stay; the current file is archived first):"]
            elif archived:
                diff = self._manager.diff(skill.name, archived[-1].label, "current")
                lines += ["", f"**Last change** ({key('restore')} restores `{archived[-1].label}` as a new version):"]
            else:
                lines += ["", "*No other version yet.*"]
        except (SkillError, OSError) as exc:
            return f"*Could not read the versions: {exc}*"
        if diff:
            lines += ["", *_code(diff, "diff")]
        return "\n".join(lines)
