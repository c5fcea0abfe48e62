"""Repair a conversation so that both wire formats accept it, whatever was stored.

A stored session can hold anything a crash, a full disk or a sloppy model left behind: tool
calls without results (Hermes was killed mid-tool), duplicate call ids, arguments that are not
JSON, results whose call is gone, two user messages in a row (a turn that failed before the
model answered). OpenAI and Anthropic reject all of these, and a session they reject once is
rejected on every later try. ``repair`` turns any such list into one they accept; it never
touches what is stored (memory keeps every original message), only what is sent.
"""

from __future__ import annotations

from typing import Any

from hermes_tui.conversation import ToolCall

INTERRUPTED = "interrupted: Hermes stopped before this tool finished"
EMPTY_USER = "(empty message)"
CONTINUE_USER = "(continuing the conversation)"


def repair(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A sendable copy of ``messages`` (OpenAI chat format, without the system prompt).

    * every assistant tool call is followed, right after that message, by exactly one result
      with its id (a missing one says ``INTERRUPTED``); results without a call are dropped;
    * call ids are unique across the conversation;
    * arguments are a JSON object's text; bad ones become ``{}`` and their result says why;
    * roles alternate the way Anthropic needs: consecutive user messages are merged, as are
      consecutive text-only assistant messages; empty messages are dropped or filled;
    * the conversation starts with a user message.
    """
    out: list[dict[str, Any]] = []
    used_ids: set[str] = set()
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message.get("role")
        i += 1
        if role == "assistant" and message.get("tool_calls"):
            results = []
            while i < len(messages) and messages[i].get("role") == "tool":
                results.append(messages[i])
                i += 1
            if out and out[-1]["role"] == "assistant" and not out[-1].get("tool_calls"):
                before = _text(out.pop())  # text-only assistant message: joined to this one
                message = {**message, "content": f"{before}\n\n{_text(message)}".strip()}
            out.extend(_answered_step(message, results, used_ids))
        elif role == "assistant":
            if _text(message):
                _append_text(out, message)
        elif role == "user":
            _append_text(out, {**message, "content": _text(message) or EMPTY_USER})
        # a tool result not right after its call, or a system message: not sendable, dropped
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": CONTINUE_USER})
    return out


def _answered_step(message: dict[str, Any], results: list[dict[str, Any]],
                   used_ids: set[str]) -> list[dict[str, Any]]:
    """One assistant message with tool calls, and one result per call in the calls' order."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_id.setdefault(str(result.get("tool_call_id")), []).append(result)
    calls: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    for n, call in enumerate(message.get("tool_calls") or []):
        parsed = ToolCall.from_llm(call, n)
        new_id = _unique(parsed.id, used_ids)
        calls.append({**call, "id": new_id, "type": "function",
                      "function": {**(call.get("function") or {}), "name": parsed.name, "arguments": parsed.json}})
        pending = by_id.get(parsed.id) or []
        result = pending.pop(0) if pending else {"role": "tool", "content": INTERRUPTED, "name": parsed.name}
        content = _text(result) or "(no output)"
        if parsed.error and parsed.raw not in content:
            content = parsed.note() + "\n\n" + content
        answers.append({**result, "role": "tool", "tool_call_id": new_id, "name": parsed.name, "content": content})
    step = {**message, "tool_calls": calls}
    if not _text(step):
        step["content"] = None
    return [step, *answers]


def _unique(call_id: str, used: set[str]) -> str:
    candidate, n = call_id, 1
    while candidate in used:
        n += 1
        candidate = f"{call_id}_{n}"
    used.add(candidate)
    return candidate


def _append_text(out: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Append a text message, merged into the previous one when it has the same role."""
    previous = out[-1] if out else None
    if (previous is not None and previous["role"] == message["role"]
            and not previous.get("tool_calls") and previous["role"] in ("user", "assistant")):
        out[-1] = {**previous, "content": f"{_text(previous)}\n\n{_text(message)}"}
        if images := [*(previous.get("_images") or ()), *(message.get("_images") or ())]:
            out[-1]["_images"] = images  # a merged message keeps both messages' images
        return
    out.append(dict(message))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
