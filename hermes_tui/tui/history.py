"""Prompt history that survives restarts: one JSON string per line in HERMES_HOME/tui_history.jsonl
(the file's format: ``memory/prompts.py``, since forgetting a session from any surface scrubs it).

/forget also removes the forgotten session's prompts from the app's own list (``forget``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from hermes_tui.memory import prompts
from hermes_tui.memory.prompts import HISTORY_FILE

__all__ = ["HISTORY_FILE", "PromptHistory"]

log = logging.getLogger(__name__)

HISTORY_CAP = 500


class PromptHistory:
    """Entries oldest first, plus a cursor for ↑/↓ browsing that keeps the unsent draft.

    The file only grows by appends; it is rewritten down to ``cap`` entries when it holds twice
    that, so a long-lived history costs one small write per prompt.
    """

    def __init__(self, path: Path, cap: int = HISTORY_CAP) -> None:
        self.path = path
        self.cap = cap
        self._entries: list[str] | None = None  # read on first use, not at start-up
        self._index = 0  # == len(entries): editing the draft
        self._draft = ""

    @property
    def entries(self) -> list[str]:
        if self._entries is None:
            self._entries = self._load()
            self._index = len(self._entries)
        return self._entries

    def _load(self) -> list[str]:
        return prompts.read(self.path)[-self.cap:]

    def add(self, text: str) -> None:
        """Record a sent prompt (not twice in a row) and reset browsing to a fresh draft."""
        self._draft = ""
        if text.strip() and (not self.entries or self.entries[-1] != text):
            self.entries.append(text)
            try:
                self._append(text)
            except OSError as exc:
                log.warning("prompt history not saved: %s", exc)
        self._index = len(self.entries)

    def _append(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # prompts are private
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(text, ensure_ascii=False) + "\n")
        if len(self.entries) >= 2 * self.cap:
            self._entries = self.entries[-self.cap:]
            self._rewrite(self.entries)

    def forget(self, sent: Callable[[str], bool]) -> int:
        """Remove every entry for which ``sent`` is true, from memory and from the file (rewritten
        whole, not appended to, so the old lines are gone from it); how many went."""
        kept = [entry for entry in self._load_all() if not sent(entry)]
        before = len(self.entries)
        self._entries = [entry for entry in self.entries if not sent(entry)]
        self._index = len(self._entries)
        self._draft = ""
        if self.path.exists():
            self._rewrite(kept)
        return before - len(self._entries)

    def _load_all(self) -> list[str]:
        cap, self.cap = self.cap, 2 * self.cap  # the file holds up to twice the cap between rewrites
        try:
            return self._load()
        finally:
            self.cap = cap

    def _rewrite(self, entries: list[str]) -> None:
        prompts.rewrite(self.path, entries)

    def previous(self, current: str) -> str | None:
        """The entry before the cursor (None at the oldest); remembers ``current`` as the draft."""
        entries = self.entries
        if self._index == 0:
            return None
        if self._index == len(entries):
            self._draft = current
        self._index -= 1
        return entries[self._index]

    def next(self) -> str | None:
        """The entry after the cursor, the draft after the newest, None when already on the draft."""
        entries = self.entries
        if self._index >= len(entries):
            return None
        self._index += 1
        return self._draft if self._index == len(entries) else entries[self._index]
