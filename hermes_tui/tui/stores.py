"""The app's memory store and skill manager, opened on first use.

``build_app`` owns them, but opening them means importing sqlite-utils, frontmatter and yaml and
opening the database (~50 ms): the app does that right after its first frame is painted (or
earlier if something needs them), which keeps start-up within budget.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from hermes_tui.config import Config

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager


class Stores:
    def __init__(self, config: Config) -> None:
        self.config = config

    @cached_property
    def memory(self) -> MemoryStore:
        from hermes_tui.memory.store import MemoryStore

        return MemoryStore(self.config.db_path)

    @cached_property
    def skills(self) -> SkillManager:
        from hermes_tui.skills.manager import SkillManager

        return SkillManager(self.config.skills_dir)

    def open(self) -> None:
        """Open both now."""
        self.memory  # noqa: B018 - cached_property: the access opens it
        self.skills  # noqa: B018

    def close(self) -> None:
        if "memory" in self.__dict__:
            self.memory.close()
