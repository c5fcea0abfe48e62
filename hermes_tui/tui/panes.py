"""Building the browsing panes on first use: their modules (DataTable, Markdown previews, the
stores) stay off the start-up path; the chat pane is the only one in the first frame."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widget import Widget

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

BROWSING_PANES = ("skills", "memory", "sessions")


def make_pane(name: str, memory: MemoryStore, skills: SkillManager) -> Widget:
    """The pane ``name`` with the id ``<name>-pane``."""
    if name == "skills":
        from hermes_tui.tui.skills_pane import SkillsPane

        return SkillsPane(memory=memory, skills=skills, id="skills-pane")
    if name == "memory":
        from hermes_tui.tui.memory_pane import MemoryPane

        return MemoryPane(memory=memory, skills=skills, id="memory-pane")
    if name == "sessions":
        from hermes_tui.tui.sessions_pane import SessionsPane

        return SessionsPane(memory=memory, skills=skills, id="sessions-pane")
    raise ValueError(f"no pane {name!r}")
