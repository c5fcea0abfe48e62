"""Every fact Hermes knows about a model provider, declared once in ``PROVIDER_TABLE``.

Config (defaults, which key to read), the LLM layer (litellm prefix, endpoint, caching) and the
setup screen (labels, which fields it asks for) all derive from this table, so adding a provider
is one entry here. Imports nothing heavy: surfaces read it before litellm is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT_WINDOW = 128_000  # tokens, when neither litellm nor the table knows better
LOCAL_CONTEXT_WINDOW = 8_192
"""Assumed for a local server that does not say (llama.cpp starts with 4,096 by default, Ollama with 4k
to 256k by memory): conservative, and shown as assumed; HERMES_CONTEXT_TOKENS sets the real one."""


@dataclass(frozen=True)
class Provider:
    """One provider. ``key_env_var`` is the variable its key is read from (None: no key exists);
    ``needs_key`` says whether a request can work without it (local servers often accept none)."""

    name: str
    litellm_prefix: str  # "anthropic/claude-..." is how litellm picks the wire format
    default_model: str
    key_env_var: str | None = None
    needs_key: bool = True
    default_base: str | None = None  # sent when HERMES_API_BASE is not set
    public_base: str | None = None  # litellm's own endpoint when none is sent; named in error messages
    requires_base: bool = False  # HERMES_API_BASE must be set (there is no sensible default)
    context_window: int = DEFAULT_CONTEXT_WINDOW  # fallback when litellm has no model info
    cache_control: bool = False  # requests may mark blocks cacheable (Anthropic's cache_control)
    note: str = ""  # one line for the setup screen
    placeholder_key: str | None = None  # sent when no key is set but the client insists on one
    window_probe: str | None = None  # how to ask the server for its window (hermes_tui.windows): openai, ollama
    image_side: int = 2048  # pixels: an image's longer side is scaled down to this before it is sent
    image_bytes: int = 5 * 1024 * 1024 * 3 // 4  # an image over this is scaled down (5 MB once in base64)

    def caches(self, model: str) -> bool:
        """Whether requests for ``model`` should carry cache_control marks.

        OpenRouter passes Anthropic's ``cache_control`` through for ``anthropic/...`` models only.
        """
        if self.name == "openrouter":
            return model.removeprefix("openrouter/").startswith("anthropic/")
        return self.cache_control


PROVIDER_TABLE: dict[str, Provider] = {p.name: p for p in (
    Provider("anthropic", "anthropic", "claude-sonnet-5", key_env_var="ANTHROPIC_API_KEY",
             public_base="https://api.anthropic.com", context_window=200_000, cache_control=True,
             note="Claude models", image_side=1568),
    Provider("openai", "openai", "gpt-5.5", key_env_var="OPENAI_API_KEY", public_base="https://api.openai.com/v1",
             context_window=128_000, note="GPT models"),
    Provider("openrouter", "openrouter", "anthropic/claude-sonnet-5", key_env_var="OPENROUTER_API_KEY",
             public_base="https://openrouter.ai/api/v1", context_window=200_000, note="many models behind one key",
             image_side=1568),
    Provider("ollama", "ollama_chat", "llama3.2", needs_key=False, default_base="http://localhost:11434",
             context_window=LOCAL_CONTEXT_WINDOW, note="local models, no key", window_probe="ollama"),
    Provider("openai-compatible", "openai", "local-model", key_env_var="OPENAI_API_KEY", needs_key=False,
             requires_base=True, context_window=LOCAL_CONTEXT_WINDOW, note="any local or hosted OpenAI-style server",
             placeholder_key="not-needed", window_probe="openai"),
)}

PROVIDERS: tuple[str, ...] = tuple(PROVIDER_TABLE)
KEY_ENV_VARS: frozenset[str] = frozenset(p.key_env_var for p in PROVIDER_TABLE.values() if p.key_env_var)


def provider(name: str) -> Provider:
    """The table entry for ``name``; raises KeyError for an unknown provider (Config checks first)."""
    return PROVIDER_TABLE[name]
