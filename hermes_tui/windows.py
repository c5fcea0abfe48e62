"""The context window of the configured model, and where that number comes from.

Cloud models are in litellm's model table. A local server's window is whatever it was started
with (llama.cpp's ``--ctx-size``, Ollama's ``num_ctx``), so it is asked when it says: llama.cpp's
``GET /props`` (``default_generation_settings.n_ctx``), vLLM's ``GET /v1/models``
(``max_model_len``), Ollama's ``GET /api/ps`` (the loaded model's ``context_length``) or
``POST /api/show`` (a ``num_ctx`` parameter). llama-cpp-python's server (``python -m
llama_cpp.server --n_ctx N``) has none of these: its window is only in the refusal of a prompt
longer than it, which it sends after tokenizing and before evaluating anything, so it is asked
with a prompt longer than any window it can hold (see ``_llama_cpp_python``). Otherwise
HERMES_CONTEXT_TOKENS, else the provider table's conservative fallback, which surfaces show as
*assumed*. Standard library only: this runs before litellm is needed, with a short timeout. An
OpenAI-style server's answer is kept for the life of the process (a new session or sub-agent does
not ask again); no answer is not kept, so a server started later is still asked.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_tui.config import Config

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 2.0  # seconds per request to a local server's introspection endpoints
OVERFLOW_TIMEOUT = 5.0  # seconds for llama-cpp-python to tokenize and refuse the overlong probe (~1 s on 2 cores)
# More tokens than any window a llama-cpp-python server holds (its KV cache is allocated up front:
# 2**20 tokens is tens of GB even for a 135M model). Sent as " a" repeated, one token per word in
# every tokenizer, ~2 MB. A server whose window were larger would evaluate it, so it is only sent to
# a server that identified itself as llama-cpp-python.
OVERFLOW_TOKENS = 2**20
_REFUSAL = re.compile(r"maximum context length is (\d+) tokens")

SERVER, SETTING, TABLE, ASSUMED = "the server", "HERMES_CONTEXT_TOKENS", "litellm's model table", "assumed"


@dataclass(frozen=True)
class Window:
    """A window in tokens and its source: one of SERVER, SETTING, TABLE, ASSUMED."""

    tokens: int
    source: str

    @property
    def assumed(self) -> bool:
        return self.source == ASSUMED


def window_of(config: Config, table_tokens: int | None) -> Window:
    """The window for ``config``; ``table_tokens`` is litellm's model table entry (None: unknown).

    A local server's own answer beats everything: it is the number it refuses prompts by.
    """
    if config.provider_info.window_probe:
        asked = ask_server(config)
        if asked:
            return Window(asked, SERVER)
    elif table_tokens:
        return Window(table_tokens, TABLE)
    if config.context_tokens:
        return Window(config.context_tokens, SETTING)
    return Window(config.provider_info.context_window, ASSUMED)


_answers: dict[tuple[str, str, str], int] = {}  # (api base, probe kind, model) -> the window it reported
_answers_lock = threading.Lock()


def ask_server(config: Config) -> int | None:
    """The window a local server reports, or None (it does not say, or cannot be reached).

    An OpenAI-style server is asked once per model in a process: its window is fixed when it starts,
    and the llama-cpp-python probe costs about a second. Ollama is asked each time (two cheap
    requests): its window changes as it loads the model with another ``num_ctx``.
    """
    base = config.effective_api_base
    kind = config.provider_info.window_probe
    if not base or not kind:
        return None
    key = (base.rstrip("/"), kind, config.model)
    with _answers_lock:
        known = _answers.get(key)
    if known:
        return known
    found = _ask(base, kind, config.model, config.api_key)
    if found and kind != "ollama":
        with _answers_lock:
            _answers[key] = found
    return found


def forget_answers() -> None:
    """Drop every kept answer (a server restarted with another window, or a test's server)."""
    with _answers_lock:
        _answers.clear()


def _ask(base: str, kind: str, model: str, key: str | None) -> int | None:
    try:
        if kind == "ollama":
            return _ollama(_root(base), model)
        return (_llama_cpp(_root(base)) or _vllm(base.rstrip("/"), model)
                or _llama_cpp_python(_root(base), base.rstrip("/"), key))
    except Exception:  # any odd answer means "the server does not say"
        log.debug("asking %s for its context window failed", base, exc_info=True)
        return None


def _root(base: str) -> str:
    """``http://host:port`` of an API base such as ``http://host:port/v1``."""
    parts = urlsplit(base)
    path = re.sub(r"/(v1|api)/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _get(url: str, body: dict[str, Any] | None = None, key: str | None = None,
         timeout: float = PROBE_TIMEOUT) -> Any:
    import urllib.request  # http.client, email, ssl: only for a local server's window (~10 ms)

    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:  # the configured base
        return json.load(response)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_cpp(root: str) -> int | None:
    try:
        props = _get(root + "/props")
    except OSError:  # llama-cpp-python, vLLM, LM Studio: no such endpoint
        return None
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    nested = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return nested or _positive(props.get("n_ctx"))  # older builds said it at the top level


def _vllm(base: str, model: str) -> int | None:
    import urllib.error

    try:
        listed = _get(base + "/models")
    except urllib.error.HTTPError:  # no such endpoint (or it needs a key we do not have)
        return None
    models = [m for m in listed.get("data", []) if isinstance(m, dict)] if isinstance(listed, dict) else []
    chosen = [m for m in models if m.get("id") == model] or (models if len(models) == 1 else [])
    return _positive(chosen[0].get("max_model_len")) if chosen else None


def _llama_cpp_python(root: str, base: str, key: str | None) -> int | None:
    """llama-cpp-python's window, from its refusal of a prompt longer than any window it can hold.

    Only a server that answers ``/extras/tokenize/count`` (llama-cpp-python's own endpoint) is
    sent the probe; it refuses after tokenizing, before evaluating, with OpenAI's
    context_length_exceeded message, which names the window.
    """
    try:
        counted = _get(root + "/extras/tokenize/count", {"input": " a"}, key)
    except OSError:  # not llama-cpp-python
        return None
    if not isinstance(counted, dict) or not _positive(counted.get("count")):
        return None
    import urllib.error

    probe = {"prompt": " a" * OVERFLOW_TOKENS, "max_tokens": 1}
    try:
        _get(base + "/completions", probe, key, timeout=OVERFLOW_TIMEOUT)
    except urllib.error.HTTPError as refused:
        match = _REFUSAL.search(refused.read(4096).decode("utf-8", "replace"))
        return _positive(int(match.group(1))) if match else None
    return None  # answered: the window is larger than the probe


def _ollama(root: str, model: str) -> int | None:
    names = {model, model if ":" in model else f"{model}:latest"}
    loaded = _get(root + "/api/ps")
    for entry in loaded.get("models", []) if isinstance(loaded, dict) else []:
        if isinstance(entry, dict) and (entry.get("name") in names or entry.get("model") in names):
            found = _positive(entry.get("context_length"))
            if found:
                return found
    shown = _get(root + "/api/show", {"model": model})
    match = re.search(r"^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""), re.M) if isinstance(shown, dict) else None
    return int(match.group(1)) if match else None
