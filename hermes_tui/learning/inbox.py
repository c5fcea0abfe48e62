"""Curated facts waiting for the user under HERMES_LEARN=review (learned skills wait in the skill index).

The memory curator's proposals go to ``HERMES_HOME/memory/inbox.json`` instead of the fact files,
already vetted (one line, no secret, guard-checked); ``hermes-tui inbox accept N`` saves one into
the files of the workspace it was said in, ``reject N`` drops it. Until then no prompt sees it.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from hermes_tui.private import private_dir, write_private

log = logging.getLogger(__name__)

INBOX_FILE = "inbox.json"


@dataclass(frozen=True)
class PendingFact:
    """A fact the curator proposed: its scope, wording, the fact it replaces (an id) and where it was said."""

    scope: str
    text: str
    workspace: str
    replaces: str | None = None
    session_id: int | None = None


class FactInbox:
    """The waiting facts of one HERMES_HOME, oldest first. Thread-safe within a process."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "memory" / INBOX_FILE
        self._lock = threading.Lock()

    def items(self) -> list[PendingFact]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("the fact inbox %s is unreadable: %s", self.path, exc)
            return []
        return [PendingFact(**item) for item in data if isinstance(item, dict)]

    def add(self, fact: PendingFact) -> None:
        with self._lock:
            items = self.items()
            if fact not in items:
                self._write([*items, fact])

    def take(self, index: int) -> PendingFact:
        """Remove and return the item at ``index`` (0-based); ``IndexError`` when there is none."""
        with self._lock:
            items = self.items()
            fact = items.pop(index)
            self._write(items)
            return fact

    def _write(self, items: list[PendingFact]) -> None:
        private_dir(self.path.parent)
        write_private(self.path, json.dumps([asdict(i) for i in items], ensure_ascii=False, indent=1))
