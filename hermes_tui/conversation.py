"""The conversation as typed records: a stored message, its tool calls and how each step ended.

Why one module: the OpenAI chat dicts (``{"function": {"arguments": "<JSON text>"}}``) are the
model's wire format, and each reader used to re-parse them with its own fallback. Here they are
parsed once, when a message is loaded (``ChatMessage``) or a call arrives (``ToolCall``); the dict
form is made again only where a request goes to the model (``to_llm``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """How a message's step ended, stored in ``messages.status``: a tool result's call, or a user
    message's turn (``FAILED``: it failed before an answer; ``CANCELLED``: the user stopped it).
    ``UNDONE``: /undo or /retry took the message out of the conversation; memory keeps it, no
    surface sends it to the model again (``memory.resume``)."""

    OK = "ok"
    FAILED = "failed"
    DENIED = "denied"  # the user said no to the call
    CANCELLED = "cancelled"
    UNDONE = "undone"


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``raw`` is its arguments' text as the model sent it;
    ``arguments`` the JSON object it holds, or ``{}`` when it holds none (``valid`` False, and
    ``error`` says why): that ``{}`` is what is run and sent back."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw: str = ""
    valid: bool = True
    error: str | None = None

    @classmethod
    def parse(cls, call_id: str, name: str, raw: Any) -> ToolCall:
        """Check ``raw`` (the model's text, or an already-decoded value) once."""
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return cls(call_id, name, {}, "" if raw is None else raw)
        if isinstance(raw, Mapping):
            return cls(call_id, name, dict(raw), json.dumps(raw, ensure_ascii=False))
        text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            value = json.loads(text)
        except ValueError as exc:
            return cls(call_id, name, {}, text, False, f"not valid JSON: {exc}")
        if not isinstance(value, dict):
            return cls(call_id, name, {}, text, False, f"a JSON {type(value).__name__}, not an object")
        return cls(call_id, name, value, text)

    @classmethod
    def from_llm(cls, call: Mapping[str, Any], position: int = 0) -> ToolCall:
        """A call in the OpenAI form (stored, or read back from a history); a missing id or
        name gets a stand-in, so one broken call cannot hide the others."""
        function = call.get("function") or {}
        return cls.parse(str(call.get("id") or f"call_{position}"), str(function.get("name") or "unknown_tool"),
                         function.get("arguments"))

    @property
    def json(self) -> str:
        """The arguments as they are stored and sent: always a JSON object's text."""
        return self.raw if self.valid and self.raw.strip() else "{}"

    def note(self) -> str:
        """What the call's result says when its arguments could not be used."""
        return (f"The arguments were not a JSON object ({self.error}), so {{}} was sent instead. "
                f"Raw arguments: {self.raw[:2000]}")

    def to_llm(self) -> dict[str, Any]:
        """The OpenAI form with the arguments as the model wrote them (``agent/history.repair``
        makes a conversation sendable, with ``json``)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.raw or "{}"}}


def parse_calls(calls: Any) -> tuple[ToolCall, ...]:
    """Calls in the OpenAI form (a list of dicts, or its JSON text as stored), typed."""
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except ValueError:
            return ()
    if not isinstance(calls, list):
        return ()
    return tuple(ToolCall.from_llm(c, n) for n, c in enumerate(calls) if isinstance(c, Mapping))


@dataclass(frozen=True)
class ImageRef:
    """An image attached to a user message: the path as the user gave it, and the bytes Hermes keeps
    under ``HERMES_HOME/attachments/`` (named by their ``sha256``; ``agent.attachments``)."""

    path: str
    sha256: str
    mime: str
    width: int
    height: int

    def describe(self) -> str:
        """One short line for the surfaces: "shot.png (PNG, 800×600)"."""
        return f"{self.path} ({self.mime.removeprefix('image/').upper()}, {self.width}×{self.height})"


@dataclass(frozen=True)
class ChatMessage:
    """One stored message of a session, its calls parsed and its status read from the column."""

    id: int
    session_id: int
    role: str
    content: str | None
    calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    created: float = 0.0
    status: Status = Status.OK
    images: tuple[ImageRef, ...] = ()

    def to_llm(self) -> dict[str, Any]:
        """The OpenAI chat-format dict; optional keys only when set (providers reject nulls).
        Images go as references under ``_images`` (a bookkeeping key ``llm.sendable`` never sends):
        ``agent.attachments.inline`` turns them into content parts right before a request."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.images:
            out["_images"] = list(self.images)
        if self.calls:
            out["tool_calls"] = [call.to_llm() for call in self.calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out
