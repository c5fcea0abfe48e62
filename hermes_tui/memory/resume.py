"""What a resumed session sends, and what its view shows: one rule for every surface (the TUI's
/resume and ``-c``, ``hermes-tui -c -p``, ``--session N``, the web's Resume), which all build
their loop through ``AgentLoop``, which asks here.

Memory keeps every message; a resumed conversation leaves out system text, messages taken back
by /undo or /retry (status ``undone``), and a user message whose turn failed before anything
answered it (a live turn drops that one too, so it is never merged into the next message nor
sent again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.conversation import ChatMessage, Status

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore


def shown(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages still in the conversation: all but the undone ones (what a view draws)."""
    return [m for m in messages if m.status is not Status.UNDONE]


def sendable(memory: MemoryStore, session_id: int) -> list[ChatMessage]:
    """A stored session's messages as a resumed loop sends them (see the module's docstring)."""
    stored = [m for m in shown(memory.get_messages(session_id)) if m.role != "system"]
    return [m for k, m in enumerate(stored)
            if not (m.role == "user" and m.status is Status.FAILED
                    and (k + 1 == len(stored) or stored[k + 1].role == "user"))]
