"""The last session of a workspace: what ``-c`` continues and what the TUI's start points at."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.memory.store import MemoryStore, SessionInfo
from hermes_tui.textsafe import printable

TITLE_CHARS = 60


def continued(memory: MemoryStore, workspace: Path) -> tuple[SessionInfo | None, str]:
    """``-c``: (the session to continue, ""), or (None, the one line saying there is none)."""
    info = memory.last_session(str(workspace))
    if info is None:
        return None, f"there is no earlier session in {workspace} to continue; run without -c to start one."
    return info, ""


def title_of(info: SessionInfo) -> str:
    """A short one-line title, printable: it comes from the store (the model may have written it)."""
    text = " ".join(printable(info.title or info.first_user_line or "").split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
