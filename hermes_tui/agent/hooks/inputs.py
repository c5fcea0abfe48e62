"""What a hook reads on stdin beyond the event's own fields, in Claude Code's terms: a tool
call as Claude Code names it, a finished call's result, and the session as a transcript file."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.agent.hooks.events import CLAUDE_TOOL_NAMES
from hermes_tui.agent.mcp.names import CALL
from hermes_tui.agent.toolkit import ToolResult
from hermes_tui.conversation import ChatMessage
from hermes_tui.memory import exports

if TYPE_CHECKING:
    from hermes_tui.config import Config
    from hermes_tui.memory.store import MemoryStore

log = logging.getLogger(__name__)


def tool_fields(name: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """A call as a hook reads it, in Claude Code's terms so its hooks work unchanged: ``tool_name``
    is Claude Code's name for the tool where it has one (``Bash``; Hermes' own in
    ``hermes_tool_name``), and ``tool_input`` has Claude Code's field names beside Hermes' own
    (``file_path`` as an absolute path, ``old_string``/``new_string``). A call through the MCP
    bridge (``mcp_call``) is shown as the MCP tool it calls."""
    if name == CALL and isinstance(arguments.get("name"), str):
        inner = arguments.get("arguments")
        name, arguments = arguments["name"], inner if isinstance(inner, dict) else {}
    shown = dict(arguments)
    path = arguments.get("path")
    if isinstance(path, str) and name in ("read_file", "write_file", "edit_file"):
        shown["file_path"] = os.path.normpath(os.path.join(workspace, path))
    if name == "edit_file":
        for ours, theirs in (("old", "old_string"), ("new", "new_string")):
            if ours in arguments:
                shown[theirs] = arguments[ours]
    if name == "delegate" and "task" in arguments:
        shown["prompt"] = arguments["task"]  # Claude Code's Task tool calls it so
    return {"tool_name": CLAUDE_TOOL_NAMES.get(name, name), "hermes_tool_name": name, "tool_input": shown}


def tool_response(fields: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """A finished call's result as a PostToolUse hook reads it."""
    response: dict[str, Any] = {"output": result.output, "success": result.ok}
    if fields.get("hermes_tool_name") == "run_bash":
        response["stdout"] = result.output  # Claude Code's Bash field; Hermes keeps one stream
    return response


TRANSCRIPTS = "transcripts"  # in HERMES_HOME: the sessions as hooks read them (``transcript_path``)


def transcript(messages: Sequence[ChatMessage]) -> str:
    """A session as JSONL, one stored message a line in the shape Claude Code's transcripts use
    (``{"type": role, "message": {...}}``)."""
    return "".join(json.dumps({"type": m.role, "message": m.to_llm()}, ensure_ascii=False) + "\n" for m in messages)


def write_transcript(config: Config, memory: MemoryStore, session_id: int) -> str:
    """The session as JSONL for a hook that reads ``transcript_path``, written before each hook
    runs and recorded as the session's, so forgetting the session deletes it; "" when it cannot be."""
    path = config.home / TRANSCRIPTS / f"{session_id}.jsonl"
    try:
        if memory.get_session(session_id) is None:  # forgotten: nothing is written from it
            return ""
        return str(exports.write(config.db_path, session_id, path, transcript(memory.get_messages(session_id))))
    except (OSError, sqlite3.Error) as exc:
        log.warning("hook transcript not written: %s", exc)
        return ""
