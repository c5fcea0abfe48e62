"""What went wrong with a provider, said in one line that names the fix: ``LLMError``, how a
litellm exception maps to one (``map_error``), and how long a retry waits (``retry_delay``).

Apart from ``llm`` because it is a table of failures, not a client: each branch is one case a
real provider or server produced. litellm's exception classes are read from ``llm._lib`` when
an error is mapped, so this module never imports litellm itself.
"""

from __future__ import annotations

import json
import random
import re

from hermes_tui.config import Config

MAX_RETRY_WAIT = 30.0


class LLMError(Exception):
    """A provider problem, already phrased for the user."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 too_long: bool = False, max_tokens: int | None = None, empty: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.too_long = too_long  # the provider said the request exceeds the context window
        self.max_tokens = max_tokens  # the window the provider named in that refusal, if any
        self.empty = empty  # HTTP 200 and then no data: how llama.cpp reports template and context errors


EMPTY_CAUSES = ("local servers do this when their chat template fails on the conversation or the prompt "
                "does not fit their context window: see the server's log")


def retry_delay(exc: Exception, attempt: int) -> float:
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
    from hermes_tui.llm import _lib  # loaded by the call that failed

    lib = _lib()
    where = f"{config.provider} ({config.model})"
    chain = _causes(exc)
    status = getattr(exc, "status_code", None)
    if any(getattr(e, "status_code", None) == 413 for e in chain):
        status = 413  # Anthropic's 413 arrives as a BadRequestError (400) around the real status
    if status == 413:
        return LLMError(f"{where} refused the request as too large (413): {_provider_message(chain)}. "
                        "Start a new session (/new) or leave big files out.", status=413,
                        too_long=True)  # compacting the history is what can help
    if isinstance(exc, (lib.AuthenticationError, lib.PermissionDeniedError)) or status in (401, 403):
        variable = config.key_variable or "the API key"
        return LLMError(f"{where} rejected the API key ({status or 401}): check {variable}.", status=status)
    if isinstance(exc, lib.RateLimitError) or status == 429:
        return LLMError(f"{where} is rate limiting requests (429).", retryable=True, status=429)
    unreachable = _unreachable_reason(chain)
    if unreachable:
        base = config.effective_api_base or config.provider_info.public_base or f"the {config.provider} API"
        return LLMError(f"Cannot reach {base} ({unreachable}). Check that it is running and reachable, "
                        f"or set HERMES_API_BASE / HERMES_PROVIDER (now {config.provider}).", retryable=True)
    if isinstance(exc, lib.Timeout):
        return LLMError(f"{where} did not answer in time.", retryable=True)
    if _stream_cut(chain):
        return LLMError(f"{where} closed the connection before the answer was complete, without sending any "
                        f"text (HTTP 200): a network problem, or {EMPTY_CAUSES}.", retryable=True)
    if isinstance(exc, lib.APIConnectionError) and status in (None, 500):
        base = config.effective_api_base or config.provider_info.public_base or f"the {config.provider} API"
        return LLMError(f"Cannot reach {base}: {_first_line(exc)}. Check the network or HERMES_API_BASE.",
                        retryable=True)
    if isinstance(exc, lib.NotFoundError) or status == 404:
        return LLMError(f"{where}: model or endpoint not found (404). Check HERMES_MODEL and HERMES_API_BASE.",
                        status=404)
    if isinstance(exc, lib.ContextWindowExceededError):
        return LLMError(f"{where}: the conversation is too long for this model, even compacted. Start a new "
                        "session (/new) or lower HERMES_CONTEXT_TOKENS.", status=status, too_long=True,
                        max_tokens=_window_named_in(str(exc)))
    if isinstance(status, int) and status >= 500:
        return LLMError(f"{where} had a server error ({status}): {_provider_message(chain)}.", retryable=True,
                        status=status)
    if isinstance(exc, lib.BadRequestError) or status == 400:
        return LLMError(f"{where} refused the request: {_provider_message(chain)}", status=status)
    return LLMError(f"{where} failed: {_provider_message(chain)}", status=status if isinstance(status, int) else None)


def cut_error(error: LLMError, exc: Exception, chars: int, where: str) -> LLMError:
    """The error for a stream that failed after some text was shown (that text is kept)."""
    reason = ("the connection closed mid-stream" if _stream_cut(_causes(exc))
              else error.message.rstrip("."))
    return LLMError(f"The answer from {where} was cut off after {chars:,} characters of text: {reason}. "
                    "What arrived is kept; ask again to continue.", retryable=True, status=error.status)


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and everything it was raised from (litellm wraps httpx wraps the socket error)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 20:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _unreachable_reason(chain: list[BaseException]) -> str | None:
    """Why no connection could be made (refused, unknown host...), or None if one was."""
    import socket

    import httpx  # already loaded by litellm

    for error in chain:
        if isinstance(error, socket.gaierror):
            return "the host name was not found"
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
    for error in chain:
        if isinstance(error, httpx.ConnectTimeout):
            return "the connection timed out"
        if isinstance(error, httpx.ConnectError):
            return _first_line(error)
    return None


def _stream_cut(chain: list[BaseException]) -> bool:
    """The server hung up in the middle of a response (an incomplete chunked body)."""
    import httpx

    # litellm reports a stream that stopped without its end as MidStreamFallbackError ("Stream
    # ended before a finish_reason was received"), a 500 whose text helps nobody.
    return any(isinstance(e, (httpx.RemoteProtocolError, httpx.ReadError))
               or type(e).__name__ == "MidStreamFallbackError" for e in chain)


def _provider_message(chain: list[BaseException]) -> str:
    """The provider's own words: ``error.message`` of a JSON body if any, else the innermost line.

    litellm nests its wrappers ("APIError: APIError: OpenAIException - ..."); none of that helps.
    """
    for error in chain:
        body = getattr(error, "body", None)  # the openai client keeps the decoded error body
        if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip():
            return body["message"].strip()[:300]
        for text in (getattr(error, "message", None), str(error)):
            message = _json_error_message(text) if isinstance(text, str) else None
            if message:
                return message[:300]
    for error in chain:
        line = _first_line(error)  # type: ignore[arg-type]  # the chain holds exceptions; typed as BaseException
        for wrapper in ("APIError:", "OpenAIException -", "AnthropicException -", "BadRequestError:",
                        "InternalServerError:", "APIConnectionError:"):
            line = line.replace(wrapper, "")
        line = line.strip(" :-")
        if line:
            return line
    return type(chain[0]).__name__


def _json_error_message(text: str) -> str | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        body = json.loads(text[start:text.rfind("}") + 1])
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message.strip() if isinstance(message, str) and message.strip() else None


_WINDOW_PATTERNS = (
    re.compile(r"(\d+) tokens > (\d+) maximum"),  # Anthropic: "prompt is too long: N tokens > M maximum"
    re.compile(r"maximum context length is (\d+) tokens"),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"exceed context window of (\d+)"),  # llama-cpp-python's own words
    re.compile(r"\"n_ctx\"\s*:\s*(\d+)"),  # llama.cpp's llama-server error body
)


def _window_named_in(text: str) -> int | None:
    """The context window a "too long" refusal names, e.g. 200000 in "... 210345 tokens > 200000 maximum"."""
    for pattern in _WINDOW_PATTERNS:
        match = pattern.search(text)
        if match:
            return int(match.group(match.lastindex or 1))
    return None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("litellm.", "LiteLLM."):
        text = text.replace(prefix, "")
    return text[:300]
