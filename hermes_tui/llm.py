"""The LLM layer: the only module that imports litellm, and only when first needed.

``import litellm`` costs seconds and hundreds of MB, so it happens lazily (``warm()`` does it in
the background after a surface has painted). Every provider problem becomes one ``LLMError``
with a one-line message that says what to do (``llm_errors``). Reading a stream (the pump thread,
the tool call fragments) is ``llm_stream``. Where the calls run is a ``ModelHost``: this process
(``LocalHost``), or a helper process (``llm_host.StreamHost``, ``warm.WarmHost``).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hermes_tui import heap, lazy_imports
from hermes_tui.clock import Clock, wait_for
from hermes_tui.config import Config
from hermes_tui.events import Notice, TextDelta, Usage
from hermes_tui.llm_errors import EMPTY_CAUSES, LLMError, cut_error, map_error, retry_delay
from hermes_tui.llm_stream import Pump, StreamItem, StreamResult, ToolCallAccumulator

if TYPE_CHECKING:
    from types import ModuleType

log = logging.getLogger(__name__)

MAX_TRIES = 3
READ_TIMEOUT = 120.0  # seconds without a byte before a request counts as timed out

_import_lock = threading.Lock()
_litellm: Any = None


def _lib() -> ModuleType:
    """Import litellm once, quietly and without network."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # In its default DEV mode the import calls load_dotenv(): a process started with
            # ``python -c`` (the helpers are) would load the current folder's .env into its
            # environment, so a workspace could plant a proxy, an endpoint or a key.
            os.environ["LITELLM_MODE"] = "PRODUCTION"
            # No pydantic plugin scan over every installed distribution at each model class.
            os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
            started = time.perf_counter()
            # Its ~3,100 modules make objects by the hundred thousand that all live on: the cyclic
            # collections they trigger only walk them again, ~8 % of the import's CPU. Frozen after
            # it, no later collection walks them either: the first one after a paused import did,
            # ~190 ms inside the first completion.
            lazy_imports.install()  # the SDK type packages a completion never reads stay unloaded
            with heap.importing():
                import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # Else litellm hands every streamed chunk to a thread pool that runs its logging
            # callbacks in a fresh asyncio loop: Hermes registers none, and at hundreds of chunks
            # a second that work took the GIL from the app (bench/stream_render.py).
            litellm.disable_streaming_logging = True
            # litellm aborts a stream after 100 identical chunks in a row; a long "----" rule or
            # a column of repeated table cells is a legitimate answer, so allow far more.
            litellm.REPEATED_STREAMING_CHUNK_LIMIT = 10_000  # type: ignore[misc]  # Final there; raising it is the point
            _quiet_loggers()
            _defer_default_encoding(litellm.__file__)
            _litellm = litellm
            log.info("litellm imported in %.3f s", time.perf_counter() - started)  # bench/headless_turn.py
        return _litellm


_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx")


def _quiet_loggers() -> None:
    """No litellm log line may reach the terminal (it would corrupt the TUI and headless stderr).

    litellm attaches its own stdout/stderr handler to its loggers at import: drop every stream
    handler that is not a file, keep propagating to the root (Hermes' log file, when set up),
    and add a NullHandler so Python's last-resort stderr handler never fires either.
    """
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        for handler in list(logger.handlers):
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                logger.removeHandler(handler)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = True


_DEFAULT_ENCODING_MODULE = "litellm.litellm_core_utils.default_encoding"


class _DeferredEncoding:
    """litellm's default encoding (cl100k_base), loaded by tiktoken on its first use.

    litellm's module ``default_encoding`` loads cl100k_base (44 MB) when first imported, and
    every count imports it: picking the tokenizer of an OpenAI-family model fetches it for a type
    tag, and the encoding lookup imports it before loading the model's own one. So a gpt-4o
    request (litellm counts its prompt for a cost estimate) held cl100k_base *and* o200k_base
    (79 MB). Standing in for the module, this object answers its ``name`` without loading and
    loads the encoding the first time anything reads it (a cl100k model, litellm.encoding).
    """

    name = "cl100k_base"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoding: Any = None

    def __getattr__(self, attribute: str) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken  # litellm's dependency: loaded with it

                self._encoding = tiktoken.get_encoding(self.name)
        return getattr(self._encoding, attribute)


def _defer_default_encoding(litellm_file: str) -> None:
    """Put a stand-in for litellm's ``default_encoding`` module in ``sys.modules`` (once).

    The module also points tiktoken at the encodings litellm ships (so no count downloads one),
    which the stand-in does the same way: ``CUSTOM_TIKTOKEN_CACHE_DIR`` if set, else litellm's copy.
    """
    if _DEFAULT_ENCODING_MODULE in sys.modules:
        return
    cache_dir = os.getenv("CUSTOM_TIKTOKEN_CACHE_DIR")
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir or str(Path(litellm_file).parent / "litellm_core_utils" / "tokenizers")
    module = types.ModuleType(_DEFAULT_ENCODING_MODULE, _DeferredEncoding.__doc__)
    module.__dict__["encoding"] = _DeferredEncoding()  # the one name litellm imports from it
    sys.modules[_DEFAULT_ENCODING_MODULE] = module


def warm(config: Config | None = None) -> threading.Thread:
    """Import litellm in a daemon thread so the first request does not pay for it.

    With ``config``, also run one offline call (litellm's ``mock_response``: no network) for its
    model: litellm defers a second of imports and loading the model's tokenizer (it counts each
    prompt) to the first completion.
    """

    def run() -> None:
        lib = _lib()
        if config is None:
            return
        started = time.perf_counter()
        try:
            for _chunk in lib.completion(model=litellm_model(config), messages=[{"role": "user", "content": "hi"}],
                                         mock_response="ok", stream=True, stream_options={"include_usage": True}):
                pass
        except Exception:  # only a warm-up; the real call reports real problems
            log.debug("warm-up call failed", exc_info=True)
        log.info("litellm first call warmed in %.3f s", time.perf_counter() - started)  # bench/headless_turn.py

    thread = threading.Thread(target=run, name="litellm-warm", daemon=True)
    thread.start()
    return thread


def forget_clients() -> None:
    """Drop litellm's cached HTTP clients: each keeps the API key it was made with, and a
    long-lived process (the warm helper) must hold no key longer than its request."""
    if _litellm is not None:
        _litellm.in_memory_llm_clients_cache.flush_cache()


class ModelHost(Protocol):
    """Where model calls run: this process (``LocalHost``), the TUI's stream helper
    (``llm_host.StreamHost``) or the per-user warm helper (``warm.WarmHost``).

    A host serves every provider and model of its process (``/model`` switches them), so each
    call carries its ``config``; ``messages`` are already ``sendable``. Every failure is an
    ``LLMError``. tests/test_model_host_contract.py runs the same calls against each host.
    """

    def stream(self, config: Config, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               cancel: threading.Event) -> Iterator[StreamItem]:
        """Text deltas and retry notices as they arrive, then one ``StreamResult``."""
        ...

    def complete(self, config: Config, messages: list[dict[str, Any]], *, timeout: float,
                 cancel: threading.Event) -> str:
        """One answer as a whole, within ``timeout`` seconds (retries included)."""
        ...

    def count_tokens(self, config: Config, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None) -> int:
        """Tokens of a request as litellm counts them for the model."""
        ...

    def count_many(self, config: Config, message_lists: list[list[dict[str, Any]]]) -> list[int]:
        """``count_tokens`` of each list (no tools), in one call: the context meter counts
        message by message, and a helper answers them all in one round trip."""
        ...

    def max_input_tokens(self, config: Config) -> int | None:
        """The model's input window in litellm's model table, or None when unknown."""
        ...


class LLMClient:
    """Talks to the configured provider through a ``ModelHost`` (by default ``LocalHost``: this
    process, its retries waiting on ``clock``)."""

    def __init__(self, config: Config, host: ModelHost | None = None, clock: Clock = time.monotonic) -> None:
        self.config = config
        self.host: ModelHost = host if host is not None else LocalHost(clock)

    def with_config(self, config: Config) -> LLMClient:
        """The same kind of client for another provider or model (``/model``)."""
        return LLMClient(config, self.host)

    @property
    def model_string(self) -> str:
        return litellm_model(self.config)

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[StreamItem]:
        """Yield text deltas (and retry notices) as they arrive, then one ``StreamResult``.

        Retries 429/5xx/timeouts/refused connections before the first chunk; after it, a failure
        raises ``LLMError`` (the caller keeps the text it already received). Cancelling closes
        the stream and ends with ``StreamResult(cancelled=True)`` within a fraction of a second; a
        request cancelled before it is sent is never sent (a provider would bill it).
        """
        cancel = cancel or threading.Event()
        if cancel.is_set():  # cancelled before it was sent (Esc right after Enter): send nothing
            yield StreamResult(cancelled=True)
            return
        yield from self.host.stream(self.config, sendable(messages), tools, cancel)

    def complete(self, messages: list[dict[str, Any]], *, timeout: float = READ_TIMEOUT,
                 cancel: threading.Event | None = None) -> str:
        """One answer as a whole (skill authoring, summaries, compaction). Raises ``LLMError``.

        ``timeout`` bounds the whole call, retries and their waits included, so a caller closing
        a session against an unreachable provider is never held longer than it asked.
        """
        return self.host.complete(self.config, sendable(messages), timeout=timeout, cancel=cancel or threading.Event())

    def count_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Tokens of a request as litellm counts them for this model (its tokenizer, or tiktoken)."""
        return self.host.count_tokens(self.config, messages, tools)

    def count_many(self, message_lists: list[list[dict[str, Any]]]) -> list[int]:
        """``count_tokens`` of each list, in one call to the host."""
        return self.host.count_many(self.config, message_lists) if message_lists else []

    def max_input_tokens(self) -> int | None:
        """The model's input window according to litellm's model table, or None when unknown."""
        return self.host.max_input_tokens(self.config)


def _kept(opened: list[Any], stream: Any) -> Any:
    """``stream``, also kept in ``opened`` for a look at its chunks once it has ended."""
    opened.append(stream)
    return stream


def _provider_counted(opened: list[Any]) -> bool:
    """Whether a chunk the provider sent carried usage. litellm keeps a stream's chunks; when the
    provider sent no usage, none of them carries any and litellm counts a stand-in at the end."""
    chunks = getattr(opened[-1], "chunks", None) if opened else None
    return isinstance(chunks, list) and any(getattr(chunk, "usage", None) is not None for chunk in chunks)


class LocalHost:
    """The ``ModelHost`` of this process: litellm imported here, retries waiting on ``clock``."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock

    def stream(self, config: Config, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               cancel: threading.Event) -> Iterator[StreamItem]:
        lib = _lib()
        kwargs = request_args(config, READ_TIMEOUT) | {
            "messages": messages, "stream": True, "stream_options": {"include_usage": True},
        }
        if tools:
            kwargs["tools"] = tools
        if config.provider_info.caches(config.model):
            kwargs["cache_control_injection_points"] = cache_points(messages, tools)
        for attempt in range(1, MAX_TRIES + 1):
            result = StreamResult()  # a retry starts from nothing: no half tool calls carried over
            calls = ToolCallAccumulator()
            usage: Any = None
            opened: list[Any] = []
            chunks = Pump(lambda kept=opened: _kept(kept, lib.completion(**kwargs)))
            try:
                for chunk in chunks.iterate(cancel):
                    usage = getattr(chunk, "usage", None) or usage
                    for choice in getattr(chunk, "choices", None) or []:
                        delta = getattr(choice, "delta", None)
                        text = getattr(delta, "content", None)
                        if text:
                            result.text += text
                            yield TextDelta(text)
                        for fragment in getattr(delta, "tool_calls", None) or []:
                            calls.add(fragment)
                if not (cancel.is_set() or result.text or calls.calls or usage):
                    # litellm makes up a "stop" chunk for a 200 stream that sent no event at all.
                    # Not retried: the same request meets the same template or window again.
                    raise LLMError(f"{_where(config)} closed the response without sending any data (HTTP 200, "
                                   f"empty body): {EMPTY_CAUSES}.", empty=True)
                break
            except Exception as exc:  # every provider failure is mapped below
                error = map_error(exc, config)
                if result.text:  # the user saw part of the answer: report the cut, do not repeat it
                    raise cut_error(error, exc, len(result.text), _where(config)) from exc
                if not error.retryable or attempt == MAX_TRIES or cancel.is_set():
                    raise error from exc
                wait = retry_delay(exc, attempt)
                yield Notice(f"{error.message} Retrying in {wait:.1f} s (try {attempt + 1} of {MAX_TRIES}).")
                if wait_for(cancel, wait, self.clock):
                    break
            finally:
                chunks.close()
        result.cancelled = cancel.is_set()
        result.tool_calls = [] if result.cancelled else calls.finish()
        result.usage = self._usage(config, usage, messages, tools, reported=_provider_counted(opened))
        yield result

    def _usage(self, config: Config, usage: Any, messages: list[dict[str, Any]] | None = None,
               tools: list[dict[str, Any]] | None = None, *, reported: bool = False) -> Usage | None:
        """Token counts (cache reads and writes included) and their cost, from litellm's usage.

        A server that sends no usage in streams (llama.cpp's) gets litellm's stand-in, counted
        from the messages alone; it is recognised by being exactly that count, and replaced by a
        count that includes the tool schemas, marked ``estimated``. ``reported``: the provider's
        own chunks carried usage, so there is nothing to recognise (and no tokenizer to load).
        """
        if not usage:
            return None
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        if (messages and tools and prompt and not reported
                and prompt == self._count_quietly(config, messages, None)):
            return Usage(self._count_quietly(config, messages, tools) or prompt,
                         getattr(usage, "completion_tokens", 0) or 0, None, estimated=True)
        completion = getattr(usage, "completion_tokens", 0) or 0
        details = getattr(usage, "prompt_tokens_details", None)
        read = getattr(usage, "cache_read_input_tokens", 0) or getattr(details, "cached_tokens", 0) or 0
        write = (getattr(usage, "cache_creation_input_tokens", 0) or getattr(details, "cache_write_tokens", 0)
                 or getattr(details, "cache_creation_tokens", 0) or 0)
        if not (prompt or completion):
            return None
        return Usage(prompt, completion, _cost(config, prompt, completion, read, write), read, write)

    def complete(self, config: Config, messages: list[dict[str, Any]], *, timeout: float,
                 cancel: threading.Event) -> str:
        """The answer is streamed: giving up (the deadline, or ``cancel`` set) closes the
        connection at once, and a one-at-a-time local server, which notices a closed connection
        only between the tokens of a stream, stops working for a request nobody waits for any more.
        """
        lib = _lib()
        deadline = time.monotonic() + timeout
        last: LLMError | None = None
        for attempt in range(1, MAX_TRIES + 1):
            left = max(deadline - time.monotonic(), 0.1)
            kwargs = request_args(config, min(left, READ_TIMEOUT)) | {"messages": messages, "stream": True}
            chunks = Pump(functools.partial(lib.completion, **kwargs))
            parts: list[str] = []
            try:
                for chunk in chunks.iterate(cancel, deadline):
                    for choice in getattr(chunk, "choices", None) or []:
                        parts.append(getattr(getattr(choice, "delta", None), "content", None) or "")
                if cancel.is_set():
                    raise LLMError(f"{_where(config)}: the request was abandoned.")
                if time.monotonic() >= deadline:
                    raise LLMError(f"{_where(config)} did not finish answering within {timeout:g} s.")
                return "".join(parts)
            except Exception as exc:  # noqa: BLE001 - every provider failure is mapped here
                last = map_error(exc, config)
                if parts:  # some text came: the answer was cut, a retry would pay for it again
                    break
                wait = retry_delay(exc, attempt)
                if not last.retryable or attempt == MAX_TRIES or time.monotonic() + wait >= deadline:
                    break
                if wait_for(cancel, wait, self.clock):
                    break
            finally:
                chunks.abandon()
        assert last is not None
        raise last

    def _count_quietly(self, config: Config, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None) -> int | None:
        try:
            return self.count_tokens(config, messages, tools)
        except Exception:  # a count is a nicety; never fail an answer for it
            log.debug("token count failed", exc_info=True)
            return None

    def count_tokens(self, config: Config, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None) -> int:
        return int(_lib().token_counter(model=litellm_model(config), messages=messages, tools=tools or None))

    def count_many(self, config: Config, message_lists: list[list[dict[str, Any]]]) -> list[int]:
        return [self.count_tokens(config, messages, None) for messages in message_lists]

    def max_input_tokens(self, config: Config) -> int | None:
        try:
            info = _lib().get_model_info(litellm_model(config))
        except Exception:  # noqa: BLE001 - unmapped model: litellm raises
            return None
        value = info.get("max_input_tokens") or info.get("max_tokens")
        return int(value) if value else None


def request_args(config: Config, timeout: float) -> dict[str, Any]:
    """What every litellm request of ``config`` passes: model, endpoint, key, no litellm retries."""
    args: dict[str, Any] = {"model": litellm_model(config), "max_retries": 0, "timeout": timeout}
    if config.effective_api_base:
        args["api_base"] = config.effective_api_base
    key = config.api_key or config.provider_info.placeholder_key  # the OpenAI client insists on some key
    if key:
        args["api_key"] = key
    return args


def _where(config: Config) -> str:
    return f"{config.provider} ({config.model})"


def _cost(config: Config, prompt_tokens: int, completion_tokens: int, cache_read: int = 0,
          cache_write: int = 0) -> float | None:
    """Cost in USD, or None when litellm has no (non-zero) price for this model.

    ``prompt_tokens`` includes the cached tokens; litellm prices the read ones at the cache-hit
    rate and the written ones at the cache-write rate.
    """
    try:
        prompt_cost, completion_cost = _lib().cost_per_token(
            model=litellm_model(config), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            cache_read_input_tokens=cache_read, cache_creation_input_tokens=cache_write)
    except Exception:  # noqa: BLE001 - unpriced model
        return None
    total = prompt_cost + completion_cost
    return total if total > 0 else None


def sendable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages in the form every OpenAI-compatible server accepts: the one model boundary.

    The OpenAI spec lets an assistant message with ``tool_calls`` leave out ``content`` or send
    null, and lets optional keys be null; llama.cpp's chat templates read ``message.content``
    strictly (a missing key fails after HTTP 200 with an empty body, null is a validation error),
    and OpenAI itself refuses an empty ``tool_calls`` list. So: ``content`` is always a string
    ("" when there is no text), keys whose value is None or an empty ``tool_calls`` are left
    out, and Hermes' own bookkeeping keys (``_id``...) never leave the process.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        sent = {k: v for k, v in message.items() if v is not None and not k.startswith("_")}
        if not sent.get("tool_calls"):
            sent.pop("tool_calls", None)
        content = sent.get("content")
        if not isinstance(content, (str, list)):
            sent["content"] = "" if content is None else str(content)
        out.append(sent)
    return out


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


def cache_points(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Where litellm puts Anthropic ``cache_control`` marks (at most 4 are allowed).

    The system prompt (byte-stable for the whole session), the tool definitions (litellm marks the
    last one, which caches them all), the latest user message, and, in the middle of a multi-step
    turn, the latest message too, so each step reads what the one before it wrote.
    """
    points: list[dict[str, Any]] = [{"location": "message", "role": "system"}]
    if tools:
        points.append({"location": "tool_config"})
    users = [n for n, m in enumerate(messages) if m.get("role") == "user"]
    if users:
        points.append({"location": "message", "index": users[-1]})
    if messages and (not users or users[-1] != len(messages) - 1) and messages[-1].get("role") != "system":
        points.append({"location": "message", "index": len(messages) - 1})
    return points
