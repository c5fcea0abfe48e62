"""The panes, declared once: their name, title, keys and where their widget lives.

The action table makes each pane's key binding, the pane bar its tab and the help its line from
``PANES``; the browsing panes' modules (DataTable, Markdown previews, the stores) are imported on
first show, off the start-up path, since the chat is the only pane in the first frame. A new pane
is one module (a widget taking ``memory``, ``skills`` and ``id``, with ``refresh_data`` and
``focus_main``) and one row here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widget import Widget

    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager


@dataclass(frozen=True)
class PaneSpec:
    """One pane of the app: its tab, keys and the widget built the first time it shows."""

    name: str
    title: str
    keys: tuple[str, ...]
    widget: str | None  # "module:Class", built on first show; None: the chat, composed with the app

    @property
    def browsing(self) -> bool:
        return self.widget is not None


PANES: tuple[PaneSpec, ...] = (
    PaneSpec("chat", "Chat", ("f2", "alt+1"), None),
    PaneSpec("skills", "Skills", ("f3", "alt+2"), "hermes_tui.tui.skills_pane:SkillsPane"),
    PaneSpec("memory", "Memory", ("f4", "alt+3"), "hermes_tui.tui.memory_pane:MemoryPane"),
    PaneSpec("sessions", "Sessions", ("f5", "alt+4"), "hermes_tui.tui.sessions_pane:SessionsPane"),
)
BY_NAME = {pane.name: pane for pane in PANES}
BROWSING_PANES = tuple(pane.name for pane in PANES if pane.browsing)


def make_pane(name: str, memory: MemoryStore, skills: SkillManager) -> Widget:
    """The browsing pane ``name`` with the id ``<name>-pane``."""
    spec = BY_NAME[name]
    if spec.widget is None:
        raise ValueError(f"the {name} pane is composed with the app")
    module, _, cls = spec.widget.partition(":")
    return getattr(importlib.import_module(module), cls)(memory=memory, skills=skills, id=f"{name}-pane")
