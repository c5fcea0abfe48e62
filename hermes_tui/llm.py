"""The LLM layer: the only module that imports litellm, and only when first needed.

``import litellm`` costs seconds and hundreds of MB, so it happens lazily (``warm()`` does it in
the background after a surface has painted). Every provider problem becomes one ``LLMError``
with a one-line message that says what to do.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_tui.config import Config
from hermes_tui.events import Notice, TextDelta, Usage

if TYPE_CHECKING:
    import litellm as litellm_module

log = logging.getLogger(__name__)

MAX_TRIES = 3
READ_TIMEOUT = 120.0  # seconds without a byte before a request counts as timed out
MAX_RETRY_WAIT = 30.0

_import_lock = threading.Lock()
_litellm: Any = None


def _lib() -> litellm_module:
    """Import litellm once, quietly and without network."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # litellm aborts a stream after 100 identical chunks in a row; a long "----" rule or
            # a column of repeated table cells is a legitimate answer, so allow far more.
            litellm.REPEATED_STREAMING_CHUNK_LIMIT = 10_000
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
                logging.getLogger(name).setLevel(logging.WARNING)
            _litellm = litellm
        return _litellm


def warm() -> threading.Thread:
    """Import litellm in a daemon thread so the first request does not pay for it."""
    thread = threading.Thread(target=_lib, name="litellm-warm", daemon=True)
    thread.start()
    return thread


class LLMError(Exception):
    """A provider problem, already phrased for the user."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status


@dataclass
class ToolCallRequest:
    """One tool call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str = ""

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments or "{}"}}


@dataclass
class StreamResult:
    """What one model call produced, once its stream has ended."""

    text: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    cancelled: bool = False


class _ToolCallAccumulator:
    """Assembles streamed tool-call fragments by index *and* id.

    A fragment with a new id at an index already in use starts a new call (some providers reuse
    index 0 for every parallel call); fragments without an id extend the call at their index.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCallRequest] = []
        self._by_index: dict[int, ToolCallRequest] = {}

    def add(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        index = len(self.calls) if index is None else index
        call_id = getattr(fragment, "id", None) or ""
        function = getattr(fragment, "function", None)
        name = getattr(function, "name", None) or ""
        arguments = getattr(function, "arguments", None) or ""
        current = self._by_index.get(index)
        if current is None or (call_id and current.id and call_id != current.id):
            current = ToolCallRequest(id=call_id, name=name)
            self.calls.append(current)
            self._by_index[index] = current
        if call_id and not current.id:
            current.id = call_id
        if name and not current.name:
            current.name = name
        current.arguments += arguments

    def finish(self) -> list[ToolCallRequest]:
        for n, call in enumerate(self.calls):
            call.id = call.id or f"call_{n}_{random.getrandbits(32):08x}"
            call.arguments = call.arguments.strip() or "{}"
        return [c for c in self.calls if c.name]


class LLMClient:
    """Talks to the configured provider through litellm."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @property
    def model_string(self) -> str:
        return litellm_model(self.config)

    def _request_args(self, timeout: float) -> dict[str, Any]:
        cfg = self.config
        args: dict[str, Any] = {"model": self.model_string, "max_retries": 0, "timeout": timeout}
        if cfg.effective_api_base:
            args["api_base"] = cfg.effective_api_base
        key = cfg.api_key or cfg.provider_info.placeholder_key  # the OpenAI client insists on some key
        if key:
            args["api_key"] = key
        return args

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[TextDelta | Notice | StreamResult]:
        """Yield text deltas (and retry notices) as they arrive, then one ``StreamResult``.

        Retries 429/5xx/timeouts/refused connections before the first chunk; after it, a failure
        raises ``LLMError`` (the caller keeps the text it already received). Cancelling closes
        the stream and ends with ``StreamResult(cancelled=True)`` within a fraction of a second.
        """
        cancel = cancel or threading.Event()
        lib = _lib()
        kwargs = self._request_args(READ_TIMEOUT) | {
            "messages": messages, "stream": True, "stream_options": {"include_usage": True},
        }
        if tools:
            kwargs["tools"] = tools
        result = StreamResult()
        calls = _ToolCallAccumulator()
        prompt_tokens = completion_tokens = 0
        for attempt in range(1, MAX_TRIES + 1):
            chunks = _Pump(lambda: lib.completion(**kwargs))
            try:
                received = False
                for chunk in chunks.iterate(cancel):
                    received = True
                    usage = getattr(chunk, "usage", None)
                    if usage:
                        prompt_tokens = getattr(usage, "prompt_tokens", 0) or prompt_tokens
                        completion_tokens = getattr(usage, "completion_tokens", 0) or completion_tokens
                    for choice in getattr(chunk, "choices", None) or []:
                        delta = getattr(choice, "delta", None)
                        text = getattr(delta, "content", None)
                        if text:
                            result.text += text
                            yield TextDelta(text)
                        for fragment in getattr(delta, "tool_calls", None) or []:
                            calls.add(fragment)
                break
            except Exception as exc:  # noqa: BLE001 - every provider failure is mapped below
                error = map_error(exc, self.config)
                if received or not error.retryable or attempt == MAX_TRIES or cancel.is_set():
                    if received:
                        error = LLMError(f"The answer was cut off: {error.message}", retryable=True,
                                         status=error.status)
                    raise error from exc
                wait = _retry_delay(exc, attempt)
                yield Notice(f"{error.message} Retrying in {wait:.1f} s (try {attempt + 1} of {MAX_TRIES}).")
                if cancel.wait(wait):
                    break
            finally:
                chunks.close()
        result.cancelled = cancel.is_set()
        result.tool_calls = [] if result.cancelled else calls.finish()
        if prompt_tokens or completion_tokens:
            result.usage = Usage(prompt_tokens, completion_tokens, self._cost(prompt_tokens, completion_tokens))
        yield result

    def complete(self, messages: list[dict[str, Any]], *, timeout: float = READ_TIMEOUT) -> str:
        """One non-streamed answer (skill authoring, session summaries). Raises ``LLMError``.

        ``timeout`` bounds the whole call, retries and their waits included, so a caller closing
        a session against an unreachable provider is never held longer than it asked.
        """
        lib = _lib()
        deadline = time.monotonic() + timeout
        last: LLMError | None = None
        for attempt in range(1, MAX_TRIES + 1):
            try:
                response = lib.completion(messages=messages, **self._request_args(max(deadline - time.monotonic(), 0.1)))
                return response.choices[0].message.content or ""
            except Exception as exc:  # noqa: BLE001
                last = map_error(exc, self.config)
                wait = _retry_delay(exc, attempt)
                if not last.retryable or attempt == MAX_TRIES or time.monotonic() + wait >= deadline:
                    break
                time.sleep(wait)
        assert last is not None
        raise last

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Cost in USD, or None when litellm has no (non-zero) price for this model."""
        try:
            prompt_cost, completion_cost = _lib().cost_per_token(
                model=self.model_string, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        except Exception:  # noqa: BLE001 - unpriced model
            return None
        total = prompt_cost + completion_cost
        return total if total > 0 else None


class _Pump:
    """Reads a litellm stream on its own thread so that cancel never waits for the network.

    The consumer waits on a queue with a short timeout and checks ``cancel`` in between; on
    cancel the reader thread closes the stream at its next chunk and ends by itself.
    """

    _END = object()

    def __init__(self, open_stream: Any) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stream: Any = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(open_stream,), name="llm-stream", daemon=True)
        self._thread.start()

    def _run(self, open_stream: Any) -> None:
        try:
            self._stream = open_stream()
            for chunk in self._stream:
                if self._closed.is_set():
                    break
                self._queue.put(chunk)
            self._queue.put(self._END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
            self._queue.put(exc)
        finally:
            self._close_stream()

    def iterate(self, cancel: threading.Event) -> Iterator[Any]:
        while not cancel.is_set():
            try:
                item = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None and hasattr(stream, "close"):
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - best effort, the connection is being dropped
                log.debug("closing the stream failed", exc_info=True)

    def close(self) -> None:
        """Ask the reader thread to close the stream; it does so at its next chunk or at once
        when it is done. Closing from here would race its ``for`` loop over the same stream."""
        self._closed.set()


def litellm_model(config: Config) -> str:
    """The litellm model string for the configured provider and model."""
    model = config.model
    prefix = config.provider_info.litellm_prefix
    if model.startswith(prefix + "/"):
        return model
    head = model.split("/", 1)[0]
    if prefix != "openrouter" and "/" in model and head in _provider_names():
        return model  # already a full litellm model string, e.g. "gemini/gemini-2.5-pro"
    return f"{prefix}/{model}"


def _provider_names() -> set[str]:
    return {getattr(p, "value", p) for p in _lib().provider_list}


def _retry_delay(exc: Exception, attempt: int) -> float:
    """Retry-After when the provider sent one, else exponential backoff with jitter."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None) or {}
    try:
        value = headers.get("retry-after") if hasattr(headers, "get") else None
        if value is not None:
            return min(max(float(value), 0.0), MAX_RETRY_WAIT)
    except (TypeError, ValueError):
        pass
    return min(0.5 * 2 ** (attempt - 1) + random.uniform(0, 0.25), MAX_RETRY_WAIT)


def map_error(exc: Exception, config: Config) -> LLMError:
    """One readable line for any provider failure, with whether retrying may help."""
    if isinstance(exc, LLMError):
        return exc
    lib = _lib()
    where = f"{config.provider} ({config.model})"
    status = getattr(exc, "status_code", None)
    if isinstance(exc, (lib.AuthenticationError, lib.PermissionDeniedError)) or status in (401, 403):
        variable = config.key_variable or "the API key"
        return LLMError(f"{where} rejected the API key ({status or 401}): check {variable}.", status=status)
    if isinstance(exc, lib.RateLimitError) or status == 429:
        return LLMError(f"{where} is rate limiting requests (429).", retryable=True, status=429)
    if isinstance(exc, lib.Timeout):
        return LLMError(f"{where} did not answer in time.", retryable=True)
    if isinstance(exc, lib.APIConnectionError) and status in (None, 500):
        base = config.api_base or "the provider"
        return LLMError(f"Cannot reach {base}: {_first_line(exc)}. Check the network or HERMES_API_BASE.",
                        retryable=True)
    if isinstance(exc, lib.NotFoundError) or status == 404:
        return LLMError(f"{where}: model or endpoint not found (404). Check HERMES_MODEL and HERMES_API_BASE.",
                        status=404)
    if isinstance(exc, lib.ContextWindowExceededError):
        return LLMError(f"{where}: the conversation is too long for this model. Start a new session (/new).",
                        status=status)
    if isinstance(status, int) and status >= 500:
        return LLMError(f"{where} had a server error ({status}).", retryable=True, status=status)
    if isinstance(exc, lib.BadRequestError) or status == 400:
        return LLMError(f"{where} refused the request: {_first_line(exc)}", status=status)
    return LLMError(f"{where} failed: {_first_line(exc)}", status=status if isinstance(status, int) else None)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("litellm.", "LiteLLM."):
        text = text.replace(prefix, "")
    return text[:300]
