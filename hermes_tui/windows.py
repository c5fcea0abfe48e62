"""The context window of the configured model, and where that number comes from.

Cloud models are in litellm's model table. A local server's window is whatever it was started
with (llama.cpp's ``--ctx-size``, Ollama's ``num_ctx``), so it is asked when it says: llama.cpp's
``GET /props`` (``default_generation_settings.n_ctx``), vLLM's ``GET /v1/models``
(``max_model_len``), Ollama's ``GET /api/ps`` (the loaded model's ``context_length``) or
``POST /api/show`` (a ``num_ctx`` parameter). Otherwise HERMES_CONTEXT_TOKENS, else the
provider table's conservative fallback, which surfaces show as *assumed*. Standard library only:
this runs before litellm is needed, with a short timeout.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_tui.config import Config

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 2.0  # seconds per request to a local server's introspection endpoints

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


def ask_server(config: Config) -> int | None:
    """The window a local server reports, or None (it does not say, or cannot be reached)."""
    base = config.effective_api_base
    kind = config.provider_info.window_probe
    if not base or not kind:
        return None
    try:
        if kind == "ollama":
            return _ollama(_root(base), config.model)
        return _llama_cpp(_root(base)) or _vllm(base.rstrip("/"), config.model)
    except Exception:  # any odd answer means "the server does not say"
        log.debug("asking %s for its context window failed", base, exc_info=True)
        return None


def _root(base: str) -> str:
    """``http://host:port`` of an API base such as ``http://host:port/v1``."""
    parts = urlsplit(base)
    path = re.sub(r"/(v1|api)/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _get(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT) as response:  # the configured base
        return json.load(response)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_cpp(root: str) -> int | None:
    try:
        props = _get(root + "/props")
    except OSError:  # llama-cpp-python, vLLM, LM Studio: no such endpoint
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _vllm(base: str, model: str) -> int | None:
    listed = _get(base + "/models")
    models = [m for m in listed.get("data", []) if isinstance(m, dict)] if isinstance(listed, dict) else []
    chosen = [m for m in models if m.get("id") == model] or (models if len(models) == 1 else [])
    return _positive(chosen[0].get("max_model_len")) if chosen else None


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
