"""The app's memory store and skill manager, opened on first use.

``build_app`` owns them, but opening them means importing sqlite-utils, frontmatter and yaml and
opening the database (~50 ms): the app does that right after its first frame is painted (or
earlier if something needs them), which keeps start-up within budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes_tui.config import Config
from hermes_tui.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager


class Stores:
    """Opened once, by whichever thread asks first: the app opens them on a worker thread (a schema
    upgrade of a big store can take a while) and a pane that needs them earlier waits for it."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.on_upgrade: Callable[[str], None] | None = None  # told before a schema upgrade
        self.progress: Progress = NO_PROGRESS  # told how far a reindex or a first skills index got
        self._lock = threading.Lock()
        self._memory: MemoryStore | None = None
        self._skills: SkillManager | None = None

    @property
    def memory(self) -> MemoryStore:
        with self._lock:
            if self._memory is None:
                from hermes_tui.memory.store import MemoryStore

                self._memory = MemoryStore(self.config.db_path, on_upgrade=self.on_upgrade, progress=self.progress)
            return self._memory

    @property
    def skills(self) -> SkillManager:
        with self._lock:
            if self._skills is None:
                from hermes_tui.skills.manager import SkillManager

                self._skills = SkillManager.for_config(self.config, self.progress)
            return self._skills

    @property
    def opened(self) -> bool:
        """Both opened (False while opening, or when opening failed)."""
        with self._lock:
            return self._memory is not None and self._skills is not None

    def open(self) -> None:
        """Open both now, and bring the skills index up to date: a first index of a big library
        takes seconds, better here (a worker thread, with a progress bar) than at the first turn."""
        self.memory  # noqa: B018 - the access opens it
        self.skills.reload()

    def close(self) -> None:
        with self._lock:
            memory = self._memory
        if memory is not None:
            memory.close()
