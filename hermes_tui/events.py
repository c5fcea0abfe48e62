"""The event vocabulary every surface consumes (TUI, headless, web NDJSON).

Plain frozen dataclasses; ``to_dict()`` gives the JSON-ready form with a ``type`` key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    """The base of every event: ``type`` names it on every wire (JSON lines, NDJSON, ACP updates),
    ``to_dict`` gives its JSON form."""

    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass(frozen=True)
class TurnStarted(Event):
    """A turn began in session ``session_id`` (the id a surface shows, so it can be continued)."""

    type: ClassVar[str] = "turn_started"
    session_id: int = 0


@dataclass(frozen=True)
class TextDelta(Event):
    """The next piece of the model's answer, as it streams."""

    type: ClassVar[str] = "text_delta"
    text: str = ""


@dataclass(frozen=True)
class ToolCallStarted(Event):
    """The model called a tool; ``id`` pairs it with its ``ToolCallFinished``."""

    type: ClassVar[str] = "tool_call_started"
    id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCallFinished(Event):
    """A tool call's result as the model gets it, whether it worked, and how long it took."""

    type: ClassVar[str] = "tool_call_finished"
    id: str = ""
    name: str = ""
    result: str = ""
    ok: bool = True
    seconds: float = 0.0


@dataclass(frozen=True)
class Receipt(Event):
    """Something a tool call really did that the user should see ("remembered: …"): emitted only
    after it succeeded, never from what an answer merely says."""

    type: ClassVar[str] = "receipt"
    tool: str = ""
    text: str = ""


@dataclass(frozen=True)
class ApprovalNeeded(Event):
    """``target``: the real path a write or edit goes to when it is not the path given (a
    symlinked folder), relative to the workspace; what the approval allows."""

    type: ClassVar[str] = "approval_needed"
    id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    agent: str = ""  # a sub-agent's call: who asks ("sub-agent 2: <its task>"); "" for the agent itself


@dataclass(frozen=True)
class SkillLearned(Event):
    """The curator wrote a skill after the turn: a new one (``created``) or a refined ``version``."""

    type: ClassVar[str] = "skill_learned"
    name: str = ""
    version: int = 1
    created: bool = True


@dataclass(frozen=True)
class Usage(Event):
    """Token counts of one model call; ``cost_usd`` is None when the model is not priced.

    ``prompt_tokens`` counts every input token, the cached ones included: ``cache_read_tokens``
    were read from the provider's prompt cache (billed at a fraction), ``cache_write_tokens``
    were written to it (billed at a premium). ``cost_usd`` already accounts for both.
    """

    type: ClassVar[str] = "usage"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    context_tokens: int | None = None  # what the request sent counted, against...
    context_limit: int | None = None  # ...the model's input window (surfaces show the share)
    estimated: bool = False  # the server sent no counts: these are Hermes' own (tool schemas included)
    context_assumed: bool = False  # nobody said what the window is: context_limit is a conservative guess


@dataclass(frozen=True)
class Notice(Event):
    """A one-line, non-fatal message for the user (retrying, approval denied, ...)."""

    type: ClassVar[str] = "notice"
    message: str = ""


@dataclass(frozen=True)
class TurnFinished(Event):
    """The turn is over: its whole answer, how many tools it called, and why it stopped."""

    type: ClassVar[str] = "turn_finished"
    text: str = ""
    tool_calls: int = 0
    stopped_reason: str = "done"  # done | cancelled | max_steps | error | blocked (a UserPromptSubmit hook)


@dataclass(frozen=True)
class Error(Event):
    """What ended a model call, in one readable line; ``retryable``: trying again may work (a rate
    limit, a timeout, a server error)."""

    type: ClassVar[str] = "error"
    message: str = ""
    retryable: bool = False


@dataclass(frozen=True)
class FilesChanged(Event):
    """The files a turn changed (its tools, ``run_bash`` included), recorded as ``checkpoint``.

    ``files``: ``{"path": relative path, "status": "added" | "modified" | "deleted"}`` each.
    """

    type: ClassVar[str] = "files_changed"
    checkpoint: int = 0
    files: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Unsent(Event):
    """The turn failed before any answer: its message is out of the conversation (never sent
    again, silently merged into the next one) and is offered back to the user to retry or edit."""

    type: ClassVar[str] = "unsent"
    text: str = ""


@dataclass(frozen=True)
class Subagent(Event):
    """An event of a sub-agent (``delegate``) running for the parent's call ``call_id``, in the
    sub-agent's session ``session_id``. ``event`` is its own event, as the sub-agent yielded it."""

    type: ClassVar[str] = "subagent"
    call_id: str = ""
    session_id: int = 0
    event: Event = field(default_factory=Event)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "call_id": self.call_id, "session_id": self.session_id,
                "event": self.event.to_dict()}
