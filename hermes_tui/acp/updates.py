"""What an editor is sent: Hermes' events (``events.py``) and stored messages as ACP session updates.

Each event type reaches its update through one table, ``UPDATES`` (a test checks every event type
has its entry): the answer's text is ``agent_message_chunk``, a tool call ``tool_call`` then
``tool_call_update`` (completed or failed, its result as text), and what Hermes says about the turn
(a notice, a receipt, the files it changed, a learned skill) is ``agent_thought_chunk``, apart from
the answer. A loaded session is replayed from its stored messages (``replay``) in the same shapes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import SessionUpdate
from acp.schema import PermissionOption, ToolCallUpdate, ToolKind

from hermes_tui.agent.approvals import DENY, ONCE, SESSION
from hermes_tui.agent.tools import summary_argument
from hermes_tui.conversation import ChatMessage, Status
from hermes_tui.events import (
    ApprovalNeeded,
    Error,
    Event,
    FilesChanged,
    Notice,
    Receipt,
    SkillLearned,
    Subagent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Unsent,
    Usage,
)
from hermes_tui.memory import resume

RESULT_SHOWN = 8_000  # characters of a tool's result shown in the editor (the model got all of it)

# ACP's tool kinds (the editor's icon) for Hermes' own tools; any other tool (MCP) is "other".
KINDS: Mapping[str, ToolKind] = {
    "read_file": "read", "list_dir": "read", "job_output": "read",
    "glob": "search", "grep": "search", "search_memory": "search", "list_skills": "search",
    "use_skill": "read", "read_skill_file": "read",
    "edit_file": "edit", "write_file": "edit", "memory": "edit", "create_skill": "edit",
    "run_bash": "execute", "job_stop": "execute",
    "web_fetch": "fetch", "delegate": "think",
}

# The permission a call asks for: the policy's answers (agent/approvals.py) as the editor's options.
PERMISSION_OPTIONS = (
    PermissionOption(option_id=ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=SESSION, name="Allow always for this session", kind="allow_always"),
    PermissionOption(option_id=DENY, name="Reject", kind="reject_once"),
)


def title(name: str, arguments: Mapping[str, Any]) -> str:
    """A call's one line: the tool and the argument its record shows (command, path...)."""
    shown = summary_argument(name, arguments)
    return f"{name}: {shown}" if shown else name


def permission_call(event_id: str, name: str, arguments: Mapping[str, Any]) -> ToolCallUpdate:
    """The call a ``session/request_permission`` is about."""
    return ToolCallUpdate(tool_call_id=event_id, title=title(name, arguments), kind=KINDS.get(name, "other"),
                          status="pending", raw_input=dict(arguments))


def _text(event: TextDelta) -> list[SessionUpdate]:
    return [update_agent_message_text(event.text)] if event.text else []


def _started(event: ToolCallStarted) -> list[SessionUpdate]:
    return [start_tool_call(event.id, title(event.name, event.arguments), kind=KINDS.get(event.name, "other"),
                            status="in_progress", raw_input=event.arguments)]


def _finished(event: ToolCallFinished) -> list[SessionUpdate]:
    return [_result(event.id, event.result, "completed" if event.ok else "failed")]


def _result(call_id: str, result: str, status: Any) -> SessionUpdate:
    shown = result if len(result) <= RESULT_SHOWN else result[:RESULT_SHOWN] + "\n[… shortened for the editor]"
    return update_tool_call(call_id, status=status, content=[tool_content(text_block(shown))] if shown else None)


def thought(line: str) -> SessionUpdate:
    """A line of Hermes' own about the turn, shown apart from the answer."""
    return update_agent_thought_text(line + "\n")


def _thought(line: str) -> list[SessionUpdate]:
    return [thought(line)]


def _files(event: FilesChanged) -> list[SessionUpdate]:
    names = ", ".join(f"{f['path']} ({f['status']})" for f in event.files[:10])
    more = f" and {len(event.files) - 10} more" if len(event.files) > 10 else ""
    return _thought(f"Changed {len(event.files)} file(s): {names}{more}; `hermes-tui checkpoints restore "
                    f"{event.checkpoint}` undoes them.")


def _skill(event: SkillLearned) -> list[SessionUpdate]:
    return _thought(f"{'Learned' if event.created else 'Refined'} skill {event.name} (v{event.version}).")


def _subagent(event: Subagent) -> list[SessionUpdate]:
    """A sub-agent's step, as a line under the parent's ``delegate`` call: the tool it runs now
    (its answer comes back as that call's result)."""
    inner = event.event
    if isinstance(inner, ToolCallStarted):
        return _thought(f"sub-agent {event.session_id}: {title(inner.name, inner.arguments)}")
    return []


def _nothing(_event: Any) -> list[SessionUpdate]:
    return []


UPDATES: dict[type[Event], Callable[[Any], list[SessionUpdate]]] = {
    TurnStarted: _nothing,
    TextDelta: _text,
    ToolCallStarted: _started,
    ToolCallFinished: _finished,
    Receipt: lambda event: _thought(event.text),
    ApprovalNeeded: _nothing,  # the session asks the editor itself (``session/request_permission``)
    SkillLearned: _skill,
    Usage: _nothing,
    Notice: lambda event: _thought(event.message),
    TurnFinished: _nothing,  # the prompt's answer carries how it ended
    Error: _nothing,  # the prompt's answer is then a protocol error with its message
    FilesChanged: _files,
    Unsent: _nothing,  # said by the error that caused it
    Subagent: _subagent,
}
"""The updates each event type becomes: one entry per type of ``hermes_tui.events``."""


def of(event: Event) -> list[SessionUpdate]:
    return UPDATES[type(event)](event)


_STATUS: Mapping[Status, Any] = {Status.OK: "completed"}  # every other ending of a call is a failure to show


def replay(messages: list[ChatMessage]) -> Iterator[SessionUpdate]:
    """A stored session as the editor would have seen it live (``session/load``). A call whose
    result was never stored (the process died during it) shows as failed, not as still running."""
    shown = resume.shown(messages)
    answered = {m.tool_call_id for m in shown if m.role == "tool"}
    for message in shown:
        if message.role == "user" and message.content:
            yield update_user_message_text(message.content)
        elif message.role == "assistant":
            if message.content:
                yield update_agent_message_text(message.content)
            for call in message.calls:
                arguments = dict(call.arguments) if call.valid else {"raw": call.raw}
                yield start_tool_call(call.id, title(call.name, arguments), kind=KINDS.get(call.name, "other"),
                                      status="in_progress" if call.id in answered else "failed",
                                      raw_input=arguments)
        elif message.role == "tool" and message.tool_call_id:
            yield _result(message.tool_call_id, message.content or "", _STATUS.get(message.status, "failed"))


def prompt_images(blocks: list[Any]) -> list[tuple[str, bytes]]:
    """A prompt's images as (a name, their bytes), for ``AgentLoop.attach_image`` to check, fit
    and keep as any attached image; a block whose data is no base64 is named so and left out."""
    images: list[tuple[str, bytes]] = []
    for number, block in enumerate((b for b in blocks if getattr(b, "type", None) == "image"), 1):
        name = block.uri or f"image {number} from the editor"
        try:
            images.append((name, base64.b64decode(block.data, validate=True)))
        except (ValueError, TypeError):
            images.append((name, b""))  # refused by the attachment check, with its one line
    return images


def prompt_text(blocks: list[Any]) -> str:
    """The user's message from a prompt's content blocks: text as typed, a linked or embedded file
    named by its URI (its embedded text follows it); images go as attachments (``prompt_images``),
    anything else (audio) is named as left out."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(block.uri)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(f"{resource.uri}\n```\n{text}\n```" if isinstance(text, str) else resource.uri)
        elif kind != "image":
            parts.append(f"[{kind or 'unknown'} content left out: Hermes takes text, files and images]")
    return "\n".join(part for part in parts if part)
