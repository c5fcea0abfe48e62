"""The memory store's rows and their typed records: what a message row holds when written
(``message_row``, ``INSERT_MESSAGE_SQL``), and how a session row reads back (``SessionInfo``).
``conversation.py`` has the message records; this module only the store's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_tui.conversation import Status
from hermes_tui.memory.schema import INDEX_COLUMN, tool_args_sql
from hermes_tui.memory.text import ELLIPSIS
from hermes_tui.textsafe import well_formed

FIRST_LINE_CHARS = 120
ROLES = ("system", "user", "assistant", "tool")
"""The roles a message may have (the store refuses others; ``role:`` in a query filters by them)."""


@dataclass(frozen=True)
class Compaction:
    """Messages up to ``through_id`` are sent as ``summary``; tool results up to
    ``trim_through_id`` (None: none) are sent trimmed."""

    through_id: int
    trim_through_id: int | None
    summary: str


@dataclass(frozen=True)
class SessionInfo:
    """A session as the sessions pane and ``/resume`` list it."""

    id: int
    source: str
    title: str | None
    summary: str | None
    started: float
    last_activity: float
    message_count: int
    first_user_line: str | None
    parent_id: int | None = None  # a sub-agent's session: the session that delegated to it


INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, name, created, status,"
    " index_content, index_tool_args)"
    f" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {INDEX_COLUMN}(?3), {INDEX_COLUMN}({tool_args_sql('?4')}))"
)

SESSIONS_SQL = """
SELECT s.id, s.source, s.title, s.summary, s.started, s.last_activity,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
       (SELECT substr(m.content, 1, 2000) FROM messages m
         WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1),
       s.parent_id
  FROM sessions s"""

CREATED = 6  # where a _message_row holds its time


def well_formed_calls(tool_calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """``tool_calls`` with no lone surrogate, as text or as a JSON escape inside a call's
    arguments (SQLite's JSON functions, which fill the index, decode the escape to bytes no UTF-8
    reader takes); arguments without one are kept exactly as the model sent them."""
    calls = well_formed(tool_calls)
    for call in calls or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str) and "\\ud" in arguments.lower():
            try:
                parsed = json.loads(arguments)
            except ValueError:
                continue
            if (cleaned := well_formed(parsed)) != parsed:
                function["arguments"] = json.dumps(cleaned)
    return calls


def message_row(session_id: int, row: Mapping[str, Any], created: float) -> tuple[Any, ...]:
    role = row["role"]
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    tool_calls = well_formed_calls(row.get("tool_calls"))  # a hostile model's lone surrogates: U+FFFD
    return (
        session_id,
        role,
        well_formed(row.get("content")),
        json.dumps(tool_calls) if tool_calls is not None else None,
        well_formed(row.get("tool_call_id")),
        well_formed(row.get("name")),
        float(created),
        Status(row.get("status", Status.OK)).value,
    )


def status_of(stored: str) -> Status:
    """The column's text; a value written by some other client reads as ``OK``."""
    try:
        return Status(stored)
    except ValueError:
        return Status.OK


def first_line(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            if len(line) > FIRST_LINE_CHARS:
                line = line[: FIRST_LINE_CHARS - 1] + ELLIPSIS
            return line
    return None


def session_info(row: tuple[Any, ...]) -> SessionInfo:
    return SessionInfo(
        id=row[0],
        source=row[1],
        title=row[2],
        summary=row[3],
        started=row[4],
        last_activity=row[5],
        message_count=row[6],
        first_user_line=first_line(row[7]),
        parent_id=row[8],
    )
