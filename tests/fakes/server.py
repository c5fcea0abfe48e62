"""A fake LLM server that speaks the real OpenAI and Anthropic streaming wire formats.

It lets LiteLLM's own parsing run in tests (and lets a developer try the app without a key):

* OpenAI chat completions: ``POST /v1/chat/completions`` -> SSE ``data: {chunk}`` ... ``data: [DONE]``
  when ``"stream": true``, a plain ``chat.completion`` JSON object otherwise.
* Anthropic Messages: ``POST /v1/messages`` -> SSE ``event: <type>`` / ``data: {json}`` (``message_start``,
  ``ping``, ``content_block_start/delta/stop``, ``message_delta``, ``message_stop``), plain JSON otherwise.

Answers come from a FIFO queue of ``Reply`` / ``Fault`` items (one per HTTP request, whatever the wire
format), then from ``responder``. Streams use HTTP/1.1 chunked encoding like the real APIs, so a cut
stream (``Reply.cut_after``) is an incomplete chunked body, not a clean end of response.

``strict_local`` makes it answer like llama.cpp's server (llama-cpp-python 0.3.36, measured): its chat
templates read ``message.content`` strictly, and its errors after HTTP 200 arrive as an empty stream.

Run by hand: ``python -m tests.fakes.server --script tests/fakes/example_script.json [--port 8900]``.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

Wire = Literal["openai", "anthropic"]
WIRES: tuple[Wire, ...] = ("openai", "anthropic")

MALFORMED_EVENT = b"data: {this is not json\n\n"  # what Reply.malformed_at sends


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is a dict (sent as JSON) or a raw JSON string."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # None: generated per wire format (call_... / toolu_...)

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """A successful model answer.

    Streamed text goes out in pieces of ``chunk_size`` characters and tool-call arguments in pieces of
    ``chunk_size // 2`` (at least 1), so one call spans many events. Events are counted from 0 and
    include every SSE event (``ping``, ``[DONE]``...). ``malformed_at=N`` sends a garbage ``data:`` line
    after N good events (the rest follow it); ``cut_after=N`` closes the connection abruptly after N
    events (no effect if the stream has no more than N); ``chunk_delay`` is slept between events.
    These three only apply to streamed replies.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: tuple[int, int] = (12, 7)  # (prompt/input tokens, completion/output tokens)
    chunk_delay: float = 0.0
    cut_after: int | None = None
    malformed_at: int | None = None
    chunk_size: int = 8
    cache_read: int = 0
    cache_write: int = 0

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")


@dataclass(frozen=True)
class EmptyStream:
    """A 200 streaming response that ends cleanly without a single event (a broken proxy or server)."""


@dataclass(frozen=True)
class Fault:
    """An HTTP error answer in the wire format's own error JSON shape (``body`` replaces it if given)."""

    status: int
    body: dict[str, Any] | None = None
    retry_after: float | None = None  # sent as the Retry-After header, in seconds
    delay: float = 0.0  # seconds to wait before answering


Item = Reply | Fault | EmptyStream
Responder = Callable[["RecordedRequest"], Item]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, with wire-independent views of what the client sent.

    ``messages`` is normalized to OpenAI-like dicts on both wires: ``{"role", "content": str}``, plus
    ``tool_calls`` (``[{"id", "name", "arguments"}]``, arguments decoded when they are JSON) on
    assistant messages and ``tool_call_id`` on ``"tool"`` messages. Anthropic's top-level ``system``
    becomes a leading system message; Anthropic ``tool_result`` blocks become ``"tool"`` messages.
    """

    path: str
    headers: dict[str, str]  # keys lower-cased
    body: dict[str, Any]

    @property
    def wire(self) -> Wire:
        return "anthropic" if self.path.endswith("/messages") else "openai"

    @property
    def system(self) -> str | None:
        """The system prompt text (Anthropic's ``system`` field, or OpenAI's system messages)."""
        if self.wire == "anthropic":
            system = self.body.get("system")
            return None if system is None else _text_of(system)
        parts = [_text_of(m.get("content")) for m in self.body.get("messages", []) if m.get("role") == "system"]
        return "\n\n".join(parts) if parts else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        raw = self.body.get("messages", [])
        if self.wire == "openai":
            return [_normalize_openai_message(m) for m in raw]
        system = self.system
        normalized = [{"role": "system", "content": system}] if system is not None else []
        for message in raw:
            normalized.extend(_normalize_anthropic_message(message))
        return normalized

    @property
    def cache_marks(self) -> list[tuple[str, str]]:
        """Every block the client marked with ``cache_control``, in request order, as (where, what):
        ``("tool", name)``, ``("system", text)`` or ``(role, text)`` for a message block (role
        ``"tool"`` for tool results, whose text is their tool_use_id / tool_call_id)."""
        marks: list[tuple[str, str]] = []
        for tool in self.body.get("tools", []):
            if "cache_control" in tool:
                marks.append(("tool", tool.get("name") or tool.get("function", {}).get("name", "")))
        system = self.body.get("system")
        if isinstance(system, list):
            marks += [("system", b.get("text", "")) for b in system if "cache_control" in b]
        for message in self.body.get("messages", []):
            content = message.get("content")
            blocks = content if isinstance(content, list) else [message]
            for block in blocks:
                if not isinstance(block, dict) or "cache_control" not in block:
                    continue
                if block.get("type") == "tool_result" or message.get("role") == "tool":
                    marks.append(("tool", block.get("tool_use_id") or message.get("tool_call_id") or ""))
                else:
                    marks.append((message.get("role", ""), _text_of(block.get("content", [block]))
                                  if block is message else block.get("text", "")))
        return marks

    @property
    def images(self) -> list[tuple[str, str, bytes]]:
        """Every image the request carries, in order, as (role, MIME type, bytes): OpenAI ``image_url``
        parts with a base64 data URL, Anthropic ``image`` blocks with a base64 source."""
        found: list[tuple[str, str, bytes]] = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":
                    url = str((part.get("image_url") or {}).get("url", ""))
                    head, _, data = url.partition(",")
                    found.append((message.get("role", ""), head.removeprefix("data:").removesuffix(";base64"),
                                  base64.b64decode(data)))
                elif part.get("type") == "image":
                    source = part.get("source") or {}
                    found.append((message.get("role", ""), source.get("media_type", ""),
                                  base64.b64decode(source.get("data", ""))))
        return found

    @property
    def tools(self) -> list[str]:
        """Names of the tools offered."""
        if self.wire == "anthropic":
            return [t.get("name", "") for t in self.body.get("tools", [])]
        return [t.get("function", {}).get("name", "") for t in self.body.get("tools", [])]


def _text_of(content: Any) -> str:
    """Text of a content field: a string, or a list of blocks/parts whose text ones are joined by a blank line."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _decoded(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _normalize_openai_message(message: dict[str, Any]) -> dict[str, Any]:
    normalized: dict[str, Any] = {"role": message.get("role"), "content": _text_of(message.get("content"))}
    if message.get("tool_calls"):
        normalized["tool_calls"] = [
            {"id": c.get("id"), "name": c["function"]["name"], "arguments": _decoded(c["function"].get("arguments"))}
            for c in message["tool_calls"]
        ]
    if "tool_call_id" in message:
        normalized["tool_call_id"] = message["tool_call_id"]
    return normalized


def _normalize_anthropic_message(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": message.get("role"), "content": content}]
    blocks = content or []
    results = [
        {"role": "tool", "content": _text_of(b.get("content")), "tool_call_id": b.get("tool_use_id")}
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    calls = [
        {"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input")}
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    text = _text_of(blocks)
    if results and not text:
        return results
    normalized: dict[str, Any] = {"role": message.get("role"), "content": text}
    if calls:
        normalized["tool_calls"] = calls
    return [*results, normalized]


# ---------------------------------------------------------------------------------------------------------
# Wire formats


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _argument_pieces(reply: Reply, call: ToolCall) -> list[str]:
    return _pieces(call.arguments_json, max(1, reply.chunk_size // 2))


def _new_id(prefix: str, length: int) -> str:
    return prefix + uuid.uuid4().hex[:length]


def _call_ids(reply: Reply, wire: Wire) -> list[str]:
    prefix = "toolu_01" if wire == "anthropic" else "call_"
    return [call.id or _new_id(prefix, 22) for call in reply.tool_calls]


def _sse_data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _sse_event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\n".encode() + _sse_data(payload)


def _openai_usage(reply: Reply) -> dict[str, Any]:
    """Like OpenAI: cached tokens are part of ``prompt_tokens``; writes as OpenRouter reports them."""
    prompt = reply.usage[0] + reply.cache_read + reply.cache_write
    completion = reply.usage[1]
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if reply.cache_read or reply.cache_write:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cache_read, "audio_tokens": 0}
        if reply.cache_write:
            usage["prompt_tokens_details"]["cache_write_tokens"] = reply.cache_write
    return usage


def _anthropic_input_usage(reply: Reply) -> dict[str, int]:
    """Like Anthropic: ``input_tokens`` counts only the uncached tokens after the last breakpoint."""
    return {"input_tokens": reply.usage[0], "cache_creation_input_tokens": reply.cache_write,
            "cache_read_input_tokens": reply.cache_read}


def openai_events(reply: Reply, model: str, include_usage: bool) -> list[bytes]:
    """The SSE events of a streamed chat completion, ``[DONE]`` included."""
    base = {"id": _new_id("chatcmpl-", 24), "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "system_fingerprint": None}
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _sse_data({**base, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": "" if reply.text else None, "refusal": None})]
    events += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.chunk_size)]
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, _call_ids(reply, "openai"), strict=True)):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _argument_pieces(reply, call)
        ]
    events.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if include_usage:
        events.append(_sse_data({**base, "choices": [], "usage": _openai_usage(reply)}))
    events.append(b"data: [DONE]\n\n")
    return events


def openai_completion(reply: Reply, model: str) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
            for call, call_id in zip(reply.tool_calls, _call_ids(reply, "openai"), strict=True)
        ]
    return {
        "id": _new_id("chatcmpl-", 24), "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": _openai_usage(reply), "system_fingerprint": None,
    }


def anthropic_events(reply: Reply, model: str) -> list[bytes]:
    """The SSE events of a streamed Anthropic message, ``message_stop`` included."""
    message = {"id": _new_id("msg_01", 22), "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {**_anthropic_input_usage(reply), "output_tokens": 1}}
    events = [_sse_event({"type": "message_start", "message": message}), _sse_event({"type": "ping"})]
    blocks = itertools.count()

    def block(start: dict[str, Any], deltas: Iterable[dict[str, Any]]) -> list[bytes]:
        index = next(blocks)
        return [
            _sse_event({"type": "content_block_start", "index": index, "content_block": start}),
            *(_sse_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas),
            _sse_event({"type": "content_block_stop", "index": index}),
        ]

    if reply.text:
        pieces = _pieces(reply.text, reply.chunk_size)
        events += block({"type": "text", "text": ""}, ({"type": "text_delta", "text": p} for p in pieces))
    for call, call_id in zip(reply.tool_calls, _call_ids(reply, "anthropic"), strict=True):
        # Like the real API: the first input_json_delta carries an empty string.
        pieces = ["", *_argument_pieces(reply, call)]
        start = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        events += block(start, ({"type": "input_json_delta", "partial_json": p} for p in pieces))
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    events.append(_sse_event({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                              "usage": {"output_tokens": reply.usage[1]}}))
    events.append(_sse_event({"type": "message_stop"}))
    return events


def anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    """A non-streamed Anthropic message (string arguments that are not JSON are sent as the raw string)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": call_id, "name": call.name, "input": _decoded(call.arguments_json or "{}")}
        for call, call_id in zip(reply.tool_calls, _call_ids(reply, "anthropic"), strict=True)
    ]
    return {
        "id": _new_id("msg_01", 22), "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
        "usage": {**_anthropic_input_usage(reply), "output_tokens": reply.usage[1]},
    }


# (anthropic error type, openai error type, openai error code) per status
_ERROR_KINDS: dict[int, tuple[str, str, str | None]] = {
    400: ("invalid_request_error", "invalid_request_error", None),
    401: ("authentication_error", "invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "invalid_request_error", "permission_denied"),
    404: ("not_found_error", "invalid_request_error", "model_not_found"),
    413: ("request_too_large", "invalid_request_error", None),
    429: ("rate_limit_error", "requests", "rate_limit_exceeded"),
    529: ("overloaded_error", "server_error", None),
}


def error_body(status: int, wire: Wire, message: str | None = None) -> dict[str, Any]:
    """The error JSON a real API of this wire format returns for ``status``."""
    anthropic_type, openai_type, code = _ERROR_KINDS.get(status, ("api_error", "server_error", None))
    message = message or f"fake {status} error ({anthropic_type}) from the test server"
    if wire == "anthropic":
        return {"type": "error", "error": {"type": anthropic_type, "message": message}}
    return {"error": {"message": message, "type": openai_type, "param": None, "code": code}}


# ---------------------------------------------------------------------------------------------------------
# Context length and strict ordering rules (what the real APIs refuse with a 400)

BYTES_PER_TOKEN = 4  # how the fake server turns a body size into the token counts of its errors


def context_length_body(wire: Wire, tokens: int, maximum: int) -> dict[str, Any]:
    """The real 400 body each API sends for a prompt longer than the model's window."""
    if wire == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error",
                                           "message": f"prompt is too long: {tokens} tokens > {maximum} maximum"}}
    return {"error": {"message": f"This model's maximum context length is {maximum} tokens. However, your messages "
                                 f"resulted in {tokens} tokens. Please reduce the length of the messages.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


TEXT_ONLY_REFUSAL: dict[Wire, str] = {
    # OpenAI's answer to image_url parts sent to a model without vision; Anthropic's wording for a
    # model that takes no image input (as OpenAI-compatible and Anthropic-compatible servers say it).
    "openai": "Invalid content type. image_url is only supported by certain models.",
    "anthropic": "messages.0.content.1.type: this model does not support image input",
}


def strict_violation(request: RecordedRequest) -> str | None:
    """Why the real API of the request's wire format would refuse its conversation, or None."""
    messages = request.body.get("messages") or []
    if not messages:
        return "messages: at least one message is required"
    if request.wire == "anthropic":
        return _anthropic_violation(messages)
    return _openai_violation(messages)


def _openai_violation(messages: list[dict[str, Any]]) -> str | None:
    pending: list[str] = []
    seen: set[str] = set()
    for n, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (f"Invalid parameter: messages[{n}]: messages with role 'tool' must be a response to a "
                        f"preceeding message with 'tool_calls' (tool_call_id {call_id!r}).")
            pending.remove(call_id)
            continue
        if pending:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}")
        if role not in ("system", "user", "assistant", "developer"):
            return f"messages[{n}].role: {role!r} is not one of system, user, assistant, tool"
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                call_id = call.get("id")
                if not call_id or call_id in seen:
                    return f"messages[{n}].tool_calls: duplicate or missing id {call_id!r}"
                seen.add(call_id)
                try:
                    json.loads(call.get("function", {}).get("arguments") or "")
                except ValueError:
                    return f"messages[{n}].tool_calls: arguments of {call_id} are not valid JSON"
                pending.append(call_id)
            if not message.get("tool_calls") and not message.get("content"):
                return f"messages[{n}]: an assistant message needs content or tool_calls"
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}")
    return None


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _anthropic_violation(messages: list[dict[str, Any]]) -> str | None:
    if messages[0].get("role") != "user":
        return "messages.0.role: the first message must use the \"user\" role"
    seen: set[str] = set()
    expected: list[str] = []  # tool_use ids of the previous assistant message
    for n, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{n}.role: Input should be 'user' or 'assistant'"
        if n and messages[n - 1].get("role") == role:
            return f"messages.{n}: roles must alternate between \"user\" and \"assistant\""
        blocks = _blocks(message.get("content"))
        if not blocks:
            return f"messages.{n}: all messages must have non-empty content"
        for b, block in enumerate(blocks):
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"messages.{n}.content.{b}: text content blocks must contain non-whitespace text"
        if role == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            kinds = [b.get("type") for b in blocks]
            if results and kinds[: len(results)] != ["tool_result"] * len(results):
                return f"messages.{n}: tool_result blocks must come first in the user message"
            for call_id in results:
                if call_id not in expected:
                    return (f"messages.{n}.content: unexpected `tool_use_id` found in `tool_result` blocks: {call_id}. "
                            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
            missing = [c for c in expected if c not in results]
            if missing:
                return (f"messages.{n - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                        f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                        "in the next message.")
            expected = []
        else:
            expected = []
            for block in blocks:
                if block.get("type") != "tool_use":
                    continue
                call_id = block.get("id")
                if not call_id or call_id in seen:
                    return f"messages.{n}: `tool_use` ids must be unique ({call_id!r})"
                if not isinstance(block.get("input"), dict):
                    return f"messages.{n}: tool_use.input: Input should be a valid dictionary"
                seen.add(call_id)
                expected.append(call_id)
    if expected:
        return (f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(expected)}.")
    return None


# ---------------------------------------------------------------------------------------------------------
# A strict local server (what llama.cpp's server does with what its chat templates cannot render)


@dataclass(frozen=True)
class LocalRefusal:
    """How llama.cpp's server refuses a request: an error body (``status``), or, for a template error
    after HTTP 200, an empty stream (``status`` None) with ``reason`` in its log only."""

    reason: str
    status: int | None = None
    body: dict[str, Any] | None = None


def local_violation(request: RecordedRequest) -> LocalRefusal | None:
    """What llama-cpp-python's server does with a message its templates reject, or None.

    ``"content": null`` fails its request validation (500 with the validation errors, before any
    stream); a message without a ``content`` key passes validation, and its template raises while
    rendering: a stream then ends without a single event (HTTP 200, empty body).
    """
    for n, message in enumerate(request.body.get("messages") or []):
        if "content" in message and message["content"] is None:
            text = (f"1 validation error:\n  {{'type': 'string_type', 'loc': ('body', 'messages', {n}, "
                    f"'content'), 'msg': 'Input should be a valid string', 'input': None}}")
            return LocalRefusal(f"messages[{n}].content is null", 500,
                                {"error": {"message": text, "type": "internal_server_error", "param": None,
                                           "code": None}})
        if "content" not in message:
            reason = f"messages[{n}]: jinja2 UndefinedError: 'dict object' has no attribute 'content'"
            if request.body.get("stream"):
                return LocalRefusal(reason)
            return LocalRefusal(reason, 500, {"error": {"message": reason, "type": "internal_server_error",
                                                        "param": None, "code": None}})
    return None


# ---------------------------------------------------------------------------------------------------------
# HTTP


_LLAMA_CPP_PYTHON_PATHS = ("/extras/tokenize/count", "/v1/completions")


def llama_cpp_python_refusal(tokens: int, window: int) -> dict[str, Any]:
    """llama-cpp-python's 400 body for a prompt of ``tokens`` tokens (max_tokens 1) over its ``window``."""
    return {"error": {"message": f"This model's maximum context length is {window} tokens, however you requested "
                                 f"{tokens + 1} tokens ({tokens} in your prompt; 1 for the completion). Please "
                                 "reduce your prompt; or completion length.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def _wire_of(path: str) -> Wire | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive + chunked streams, like the real APIs
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, open_=False)

    def log_message(self, format: str, *args: Any) -> None:  # signature of the base class
        """Quiet: tests and the TUI must not get access logs on stderr."""

    def do_GET(self) -> None:
        """What a local server says about itself: llama.cpp's ``/props``, vLLM's ``/v1/models``."""
        path = self.path.split("?", 1)[0]
        answer = self.server.owner._introspection(path)
        if answer is None:
            self._send_json(404, error_body(404, "openai", f"the fake server has no endpoint {path}"))
        else:
            self._send_json(200, answer)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        wire = _wire_of(path)
        if wire is None and path in _LLAMA_CPP_PYTHON_PATHS and self.server.owner.llama_cpp_python_window:
            status, payload = self.server.owner._llama_cpp_python(path, raw)
            self._send_json(status, payload)
            return
        if wire is None:
            self._send_json(404, error_body(404, "openai", f"the fake server has no endpoint {path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, error_body(400, wire, "request body is not JSON"))
            return
        request = RecordedRequest(path=path, headers={k.lower(): v for k, v in self.headers.items()}, body=body)
        local = self.server.owner._local_refusal(request, len(raw))
        if local is not None:
            if local.status is None:
                self._send_stream(Reply(), [])
            else:
                self._send_json(local.status, local.body or error_body(local.status, wire, local.reason))
            return
        refusal = self.server.owner._refusal(request, len(raw))
        if refusal is not None:
            self._send_json(400, refusal)
            return
        item = self.server.owner._next_item(request)
        model = str(body.get("model", "fake-model"))
        if isinstance(item, Fault):
            self._send_fault(item, wire)
        elif isinstance(item, EmptyStream):
            self._send_stream(Reply(), [])
        elif body.get("stream") and wire == "anthropic":
            self._send_stream(item, anthropic_events(item, model))
        elif body.get("stream"):
            include_usage = (bool((body.get("stream_options") or {}).get("include_usage"))
                             and self.server.owner.stream_usage)
            self._send_stream(item, openai_events(item, model, include_usage))
        elif wire == "anthropic":
            self._send_json(200, anthropic_message(item, model))
        else:
            self._send_json(200, openai_completion(item, model))

    def _send_json(self, status: int, payload: dict[str, Any], headers: Sequence[tuple[str, str]] = ()) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_fault(self, fault: Fault, wire: Wire) -> None:
        if self.server.owner._wait(fault.delay):
            return
        headers = [] if fault.retry_after is None else [("Retry-After", f"{fault.retry_after:g}")]
        self._send_json(fault.status, fault.body or error_body(fault.status, wire), headers)

    def _send_stream(self, reply: Reply, events: list[bytes]) -> None:
        if reply.malformed_at is not None:
            events.insert(reply.malformed_at, MALFORMED_EVENT)
        cut = reply.cut_after is not None and reply.cut_after < len(events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for number, event in enumerate(events[: reply.cut_after] if cut else events):
                if number and reply.chunk_delay and self.server.owner._wait(reply.chunk_delay):
                    cut = True
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
        except OSError:
            self.server.owner._hung_up()
            raise
        if cut:  # end the response without its final chunk, as a dying server or proxy would
            self.close_connection = True
            _hang_up(self.connection)
        else:
            self.wfile.write(b"0\r\n\r\n")


def _hang_up(connection: socket.socket) -> None:
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the other side


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: FakeLLMServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (cancelled streams, stop()) are normal here; anything else is a bug."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """The fake server: ``start()``/``stop()`` or ``with FakeLLMServer() as server:``; thread-safe."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._lock = threading.Lock()
        self._queue: deque[Item] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.responder: Responder = lambda request: Reply(text="ok")
        self.wire_under_test: Wire | None = None  # set by the fake_llm_env fixture
        self.strict = False
        """Refuse (400, like the real API) a conversation the wire format's ordering rules reject."""
        self.text_only = False
        """Refuse a request that carries an image (400) with the words a text-only model's API uses."""
        self.max_request_bytes: int | None = None
        """Refuse larger request bodies with the wire format's real "context length exceeded" error."""
        self.strict_local = False
        """Refuse like llama.cpp's server (``local_violation``); a request over ``max_request_bytes`` then
        gets an empty 200 stream when streamed, as llama.cpp's does, and its 400 otherwise."""
        self.stream_usage = True
        """Send the usage chunk asked for with ``stream_options``; llama.cpp's server never does."""
        self.violations: list[str] = []  # why strict mode refused requests
        self.hang_ups = 0  # streams whose client closed the connection before their end
        self.refused: list[RecordedRequest] = []  # requests answered by a strict or context-length refusal
        self.props: dict[str, Any] | None = None
        """What ``GET /props`` answers, as llama.cpp's llama-server; None: 404 (every other server)."""
        self.models: list[dict[str, Any]] | None = None
        """The ``data`` of ``GET /v1/models`` (vLLM's entries carry ``max_model_len``); None: 404."""
        self.llama_cpp_python_window: int | None = None
        """Act as llama-cpp-python's server about its window: answer ``/extras/tokenize/count`` (one token
        per word) and refuse a ``/v1/completions`` prompt of this many tokens or more with its real 400."""
        self.introspections: list[str] = []  # paths of the GET and llama-cpp-python requests above

    # lifecycle

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            raise RuntimeError("FakeLLMServer already started")
        self._stopping.clear()
        self._httpd = _HTTPServer(self._address, self)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, hang up on open connections (streams in progress end) and free the port."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _hang_up(connection)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # addresses

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic ``api_base`` (LiteLLM appends ``/v1/messages``)."""
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base(self) -> str:
        """The OpenAI ``api_base`` (ends in ``/v1``)."""
        return self.url + "/v1"

    # script and records

    def queue(self, *items: Item) -> None:
        """Answer the next requests with these items, in order, one per request."""
        with self._lock:
            self._queue.extend(items)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def open_connections(self) -> int:
        """Client connections being served now (a client that hangs up leaves this set)."""
        with self._lock:
            return len(self._connections)

    def reset(self) -> None:
        """Forget queued items and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.violations.clear()
            self.refused.clear()

    # used by the handler threads

    def _next_item(self, request: RecordedRequest) -> Item:
        with self._lock:
            self._requests.append(request)
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self.responder(request)

    def _refusal(self, request: RecordedRequest, size: int) -> dict[str, Any] | None:
        """The error body refusing ``request`` (too long, an image to a text-only model, or breaking the
        rules in strict mode), or None."""
        if self.text_only and request.images:
            body = error_body(400, request.wire, TEXT_ONLY_REFUSAL[request.wire])
        elif self.max_request_bytes is not None and size > self.max_request_bytes:
            body = context_length_body(request.wire, size // BYTES_PER_TOKEN, self.max_request_bytes // BYTES_PER_TOKEN)
        else:
            problem = strict_violation(request) if self.strict else None
            if problem is None:
                return None
            body = error_body(400, request.wire, problem)
            with self._lock:
                self.violations.append(problem)
        with self._lock:
            self._requests.append(request)
            self.refused.append(request)
        return body

    def _local_refusal(self, request: RecordedRequest, size: int) -> LocalRefusal | None:
        """In ``strict_local`` mode: how llama.cpp's server would refuse ``request``, or None."""
        if not self.strict_local or request.wire != "openai":
            return None
        refusal = local_violation(request)
        if refusal is None and self.max_request_bytes is not None and size > self.max_request_bytes:
            if not request.body.get("stream"):
                return None  # answered by _refusal with the real 400 context_length_exceeded
            refusal = LocalRefusal(f"Requested tokens ({size // BYTES_PER_TOKEN}) exceed context window of "
                                   f"{self.max_request_bytes // BYTES_PER_TOKEN}")
        if refusal is None:
            return None
        with self._lock:
            self._requests.append(request)
            self.refused.append(request)
            self.violations.append(refusal.reason)
        return refusal

    def _introspection(self, path: str) -> dict[str, Any] | None:
        with self._lock:
            self.introspections.append(path)
        if path == "/props":
            return self.props
        if path == "/v1/models" and self.models is not None:
            return {"object": "list", "data": self.models}
        return None

    def _llama_cpp_python(self, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.introspections.append(path)
        window = self.llama_cpp_python_window or 0
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return 400, error_body(400, "openai", "request body is not JSON")
        if path == "/extras/tokenize/count":
            return 200, {"count": len(str(body.get("input", "")).split())}
        tokens = len(str(body.get("prompt", "")).split())
        if tokens >= window:
            return 400, llama_cpp_python_refusal(tokens, window)
        return 200, {"object": "text_completion", "choices": [{"index": 0, "text": "ok", "finish_reason": "length"}]}

    def _hung_up(self) -> None:
        with self._lock:
            self.hang_ups += 1

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            if not open_:
                self._connections.discard(connection)
                return
            if not self._stopping.is_set():
                self._connections.add(connection)
                return
        _hang_up(connection)  # accepted while stop() runs

    def _wait(self, seconds: float) -> bool:
        """Sleep; True if the server is stopping meanwhile."""
        return self._stopping.wait(seconds) if seconds > 0 else self._stopping.is_set()


# ---------------------------------------------------------------------------------------------------------
# Scripts and the command line


def item_from_json(entry: dict[str, Any]) -> Item:
    """``{"text", "tool_calls": [{"name", "arguments", "id"?}], ...Reply fields}``, ``{"fault": 429, ...}``
    or ``{"empty_stream": true}``."""
    entry = dict(entry)
    if entry.get("empty_stream"):
        return EmptyStream()
    if "fault" in entry:
        return Fault(status=int(entry.pop("fault")), **entry)
    calls = [ToolCall(**call) for call in entry.pop("tool_calls", [])]
    if "usage" in entry:
        entry["usage"] = tuple(entry["usage"])
    return Reply(tool_calls=calls, **entry)


def load_script(path: str | Path) -> list[Item]:
    """Read a JSON script: a list of entries as ``item_from_json`` takes them."""
    return [item_from_json(entry) for entry in json.loads(Path(path).read_text(encoding="utf-8"))]


def cycling_responder(items: Sequence[Item]) -> Responder:
    """A responder that answers with ``items`` in turn, starting over after the last one."""
    cycle: Iterator[Item] = itertools.cycle(items)
    lock = threading.Lock()

    def respond(request: RecordedRequest) -> Item:
        with lock:
            return next(cycle)

    return respond


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.server",
        description="Serve a fake LLM (OpenAI and Anthropic wire formats) from a JSON script.",
    )
    parser.add_argument("--script", type=Path, help="JSON list of replies/faults (see example_script.json)")
    parser.add_argument("--port", type=int, default=8900, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--once", action="store_true",
                        help="play the script once, then answer 'ok' (default: start over after the last entry)")
    args = parser.parse_args(argv)
    server = FakeLLMServer(port=args.port)
    if args.script:
        items = load_script(args.script)
        if args.once:
            server.queue(*items)
        elif items:
            server.responder = cycling_responder(items)
    with server:
        print(f"Fake LLM server on {server.url}  (Ctrl-C to stop)\n"
              f"  OpenAI wire:    api_base {server.openai_base}\n"
              f"  Anthropic wire: api_base {server.url}\n\n"
              "Try Hermes against it with either:\n"
              f"  HERMES_PROVIDER=openai HERMES_MODEL=test-model HERMES_API_BASE={server.openai_base} "
              "OPENAI_API_KEY=sk-test hermes-tui\n"
              f"  HERMES_PROVIDER=anthropic HERMES_MODEL=claude-sonnet-4-5 HERMES_API_BASE={server.url} "
              "ANTHROPIC_API_KEY=sk-ant-test hermes-tui", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("\nstopped")


if __name__ == "__main__":
    main()
