"""Configuration: every setting declared once, read from the environment and ``.env`` files into one ``Config``.

Each setting is one field of ``Config`` declared with ``setting()``: its variable, kind, default,
whether it is privileged, and one line of doc. ``SETTINGS`` lists them; ``.env.example``,
``docs/settings.md`` and the tests' isolation list are generated from it (cog), so none drifts.

Order of precedence (first wins): real environment variables, ``./.env`` in the working
directory, ``HERMES_HOME/.env``. Settings that widen what Hermes may do, or choose where the
conversation goes and on whose account (provider, model, endpoint, API keys: privileged), are
never taken from ``./.env``: the agent can write files in the working folder, and a cloned
repository may ship a ``.env``; neither must become a setting. Nothing here checks API keys at load time, so every
surface can start without one and explain what to set (``Config.require_api_key``).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dotenv import dotenv_values

from hermes_tui.private import private_dir
from hermes_tui.providers import KEY_ENV_VARS, PROVIDER_TABLE, PROVIDERS, Provider
from hermes_tui.redaction import is_secret_variable, process_environment

# Derived from the provider table (hermes_tui.providers), kept here for the code that reads them.
DEFAULT_MODELS = {name: p.default_model for name, p in PROVIDER_TABLE.items()}
KEY_VARIABLES = {name: p.key_env_var for name, p in PROVIDER_TABLE.items()}

APPROVAL_MODES = ("ask", "always")
LEARN_MODES = ("auto", "review", "off")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ConfigError(ValueError):
    """A configuration value is unusable; the message names the variable and the fix."""


class MissingKeyError(ConfigError):
    """The configured provider needs an API key that is not set."""

    def __init__(self, provider: str, variable: str) -> None:
        super().__init__(
            f"{variable} is not set: Hermes needs it to talk to {provider}. "
            f"Set it in your environment or in HERMES_HOME/.env (or pick another HERMES_PROVIDER)."
        )
        self.provider = provider
        self.variable = variable


# -- kinds: how a value's text is read (each raises ConfigError naming the variable) ---------------


@dataclass(frozen=True)
class Kind:
    """What a setting's value is: its name in the docs and how its (non-blank) text is read."""

    label: str
    parse: Callable[[str, str], Any]  # (variable, text) -> value
    secret: bool = False  # never in repr(), so never in a log line


def _text(name: str, value: str) -> str:
    return value.strip()


def _lower(name: str, value: str) -> str:
    return value.strip().lower()


def _as_typed(name: str, value: str) -> str:
    return value  # a password is used as typed, spaces and all


def _path(name: str, value: str) -> Path:
    return Path(value.strip()).expanduser()


def _check_provider(value: str) -> str:
    provider = value.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigError(f"HERMES_PROVIDER={value!r} is not known: use one of {', '.join(PROVIDERS)}.")
    return provider


def _provider(name: str, value: str) -> str:
    return _check_provider(value)


def _approval(name: str, value: str) -> str:
    approval = value.strip().lower()
    if approval not in APPROVAL_MODES:
        raise ConfigError(f"{name}={approval!r} is not valid: use 'ask' or 'always'.")
    return approval


def _learn(name: str, value: str) -> str:
    mode = value.strip().lower()
    if mode not in LEARN_MODES:
        raise ConfigError(f"{name}={mode!r} is not valid: use 'auto', 'review' or 'off'.")
    return mode


def _flag(name: str, value: str) -> bool:
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ConfigError(f"{name}={word!r} is not a yes/no value: use true or false.")


def _count(name: str, value: str) -> int:
    value = value.strip()
    if not value.isdigit():
        raise ConfigError(f"{name}={value!r} is not a whole number: use 0 (no proxy) or the number of proxies in front.")
    return int(value)


def _positive_count(name: str, value: str) -> int:
    value = value.strip()
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name}={value!r} is not a whole number of at least 1: use e.g. 3.")
    return int(value)


def _hosts(name: str, value: str) -> tuple[str, ...]:
    """Host names separated by commas or spaces; ``.example.com`` also matches its subdomains."""
    hosts = tuple(h.lower() for h in value.replace(",", " ").split())
    for host in hosts:
        if host == "*" or not re.fullmatch(r"\.?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]", host):
            raise ConfigError(f"{name} has {host!r}, which is not a host name: list names like "
                              "hermes.example.com (no '*', scheme, port or path).")
    return hosts


def _api_base(name: str, value: str) -> str:
    """The endpoint URL, checked now: without a scheme every request would fail later as a "server error"."""
    value = value.strip()
    if "://" not in value:
        raise ConfigError(f"{name}={value!r} has no scheme: write it with http:// or https:// in front, "
                          f"e.g. http://{value}.")
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{name}={value!r} is not an http:// or https:// URL: use e.g. http://localhost:8000/v1.")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1 or port == 0:
        raise ConfigError(f"{name}={value!r} has no valid host and port: use e.g. http://localhost:8000/v1.")
    return value


def _tokens(name: str, value: str) -> int:
    value = value.strip().replace("_", "")
    if not value.isdigit() or int(value) < 1000:
        raise ConfigError(f"{name}={value!r} is not a token count: use a whole number of at least 1000, e.g. 128000.")
    return int(value)


def _days(name: str, value: str) -> int:
    value = value.strip()
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name}={value!r} is not a number of days: use a whole number of at least 1, e.g. 30.")
    return int(value)


def _share(name: str, value: str) -> float:
    value = value.strip()
    try:
        share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        share = -1.0
    if not 0.1 <= share <= 1.0:
        raise ConfigError(f"{name}={value!r} is not a share of the context window: use e.g. 0.8 or 80%.")
    return share


def _seconds(name: str, value: str) -> float:
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise ConfigError(f"{name}={value!r} is not a number of seconds: use e.g. 10 (0: do not wait).")
    return seconds


def _positive_seconds(name: str, value: str) -> float:
    seconds = _seconds(name, value)
    if seconds == 0:
        raise ConfigError(f"{name}={value.strip()!r} is not a positive number of seconds: use e.g. 600.")
    return seconds


def _port(name: str, value: str) -> int:
    value = value.strip()
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ConfigError(f"{name}={value!r} is not a port number: use e.g. 8000.")
    return int(value)


TEXT = Kind("text", _text)
HOST = Kind("host name", _lower)
SECRET = Kind("secret", _text, secret=True)
PASSWORD = Kind("secret", _as_typed, secret=True)
PATH = Kind("path", _path)
PROVIDER = Kind(" | ".join(PROVIDERS), _provider)
APPROVAL = Kind(" | ".join(APPROVAL_MODES), _approval)
FLAG = Kind("true | false", _flag)
LEARN = Kind(" | ".join(LEARN_MODES), _learn)
COUNT = Kind("whole number", _count)
POSITIVE_COUNT = Kind("whole number (1 or more)", _positive_count)
HOSTS = Kind("host names", _hosts)
URL = Kind("URL", _api_base)
TOKENS = Kind("tokens", _tokens)
DAYS = Kind("days", _days)
SHARE = Kind("share (0.1-1)", _share)
SECONDS = Kind("seconds", _seconds)
POSITIVE_SECONDS = Kind("seconds", _positive_seconds)
PORT = Kind("port", _port)


# -- the declaration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One variable: what it is, its default as the docs show it, whether ./.env may set it, and why it exists."""

    name: str
    kind: Kind
    shown: str  # the default as written in .env.example ("": unset)
    doc: str
    section: str
    privileged: bool = False  # read only from the environment or HERMES_HOME/.env, never from ./.env

    def read(self, env: Mapping[str, str]) -> Any:
        """The parsed value, or ``MISSING`` when the variable is unset or blank (the field's default)."""
        raw = env.get(self.name) or ""
        return self.kind.parse(self.name, raw) if raw.strip() else MISSING


_SETTING = "setting"  # dataclass field metadata: the field's Setting
_GATHERED = "gathered"  # ... or the Settings gathered into one mapping by variable (the API keys)


def _shown(default: Any) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    if default is None:
        return ""
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def setting(name: str, kind: Kind, doc: str, section: str, *, default: Any = None, factory: Any = MISSING,
            shown: str | None = None, privileged: bool = False) -> Any:
    """A ``Config`` field read from ``name``; ``shown`` is the default as the docs say it (else ``default``)."""
    declared = Setting(name, kind, _shown(default) if shown is None else shown, doc, section, privileged)
    if factory is not MISSING:
        return field(default_factory=factory, repr=not kind.secret, metadata={_SETTING: declared})
    return field(default=default, repr=not kind.secret, metadata={_SETTING: declared})


def _windows() -> str:
    return ", ".join(f"{p.context_window} for {p.name}" for p in PROVIDER_TABLE.values())


def _key_doc(variable: str) -> str:
    users = [p.name for p in PROVIDER_TABLE.values() if p.key_env_var == variable]
    return f"The API key for {' and '.join(users)}; only the one for HERMES_PROVIDER is needed."


MODEL, KEYS, PLACES, APPROVALS, SANDBOX, FETCH, SKILLS, SUBAGENTS, MCP, HELPER, WEB = (
    "Model", "Keys", "Where things live", "Approvals", "Shell sandbox (Linux, bubblewrap)", "The web_fetch tool",
    "Skills", "Sub-agents (the delegate tool)", "MCP servers", "The warm helper (-p runs, the web)",
    "Web dashboard (hermes-web) only")


@dataclass(frozen=True)
class Config:
    """Every setting, one field each (``setting``: its variable, kind, help and group); loaded
    from the environment and ``HERMES_HOME/.env`` by ``load``, checked there, never changed
    after."""

    provider: str = setting("HERMES_PROVIDER", PROVIDER, "Which company the conversation goes to.", MODEL,
                            default="anthropic", privileged=True)
    model: str = setting(
        "HERMES_MODEL", TEXT, "Model id for that provider; any LiteLLM model string works (e.g. gemini/gemini-2.5-pro). "
        f"Defaults: {', '.join(f'{n} {m}' for n, m in DEFAULT_MODELS.items())}.", MODEL,
        default=DEFAULT_MODELS["anthropic"], shown="", privileged=True)
    api_base: str | None = setting(
        "HERMES_API_BASE", URL, "Endpoint override (a local server, a proxy): where requests, and the API key, go. "
        "Required for openai-compatible (e.g. http://localhost:8000/v1); ollama defaults to http://localhost:11434.",
        MODEL, privileged=True)
    context_tokens: int | None = setting(
        "HERMES_CONTEXT_TOKENS", TOKENS, "Context window in tokens when LiteLLM's model table (or a local server) "
        f"does not say (default: the provider's fallback: {_windows()}).", MODEL)
    compact_at: float = setting("HERMES_COMPACT_AT", SHARE, "Compact the conversation when a request reaches this "
                                "share of the window.", MODEL, default=0.8)
    # Secrets never appear in repr() so they cannot leak into logs by accident.
    api_keys: Mapping[str, str] = field(default_factory=dict, repr=False, metadata={_GATHERED: tuple(
        Setting(variable, SECRET, "", _key_doc(variable), KEYS, privileged=True) for variable in sorted(KEY_ENV_VARS))})
    home: Path = setting(  # noqa: RUF009 (setting() is a dataclasses.field)
        "HERMES_HOME", PATH, "memory.sqlite3, skills/ and this .env (created with mode 0700). Set it in the "
        "environment: the .env that would name it is the one inside it.", PLACES,
        factory=lambda: Path.home() / ".hermes", shown="~/.hermes", privileged=True)
    workspace: Path = setting(  # noqa: RUF009 (setting() is a dataclasses.field)
        "HERMES_WORKSPACE", PATH, "Root folder the file and shell tools are confined to (default: the current "
        "folder).", PLACES, factory=Path.cwd, shown="", privileged=True)
    approval: str = setting("HERMES_APPROVAL", APPROVAL, "ask: run_bash and write_file ask before running (headless: "
                            "only with --yes); always: never ask.", APPROVALS, default="ask", privileged=True)
    sandbox: bool = setting(
        "HERMES_SANDBOX", FLAG, "run_bash runs in bubblewrap where it works (own PID namespace, read-only system, "
        "HERMES_HOME and credential folders hidden); false: without it, and without the notice when bubblewrap "
        "is missing.", SANDBOX, default=True, privileged=True)
    sandbox_network: bool = setting(
        "HERMES_SANDBOX_NETWORK", FLAG, "Commands in the sandbox share the machine's network (default false: what a "
        "command reads cannot be sent anywhere; pip install, git fetch, curl fail).", SANDBOX, default=False,
        privileged=True)
    fetch_allow_private: bool = setting(
        "HERMES_FETCH_ALLOW_PRIVATE", FLAG, "web_fetch may fetch private, loopback and link-local addresses (a "
        "local server; default false: a page or a redirect cannot reach your router, cloud metadata or localhost).",
        FETCH, default=False, privileged=True)
    skill_stale_days: int = setting("HERMES_SKILL_STALE_DAYS", DAYS, "Days unused before a learned skill leaves the "
                                    "prompt's skill index (pinned and guest skills never age).", SKILLS, default=30)
    skill_archive_days: int = setting("HERMES_SKILL_ARCHIVE_DAYS", DAYS, "Days unused before a learned skill moves "
                                      "to HERMES_HOME/skills-archive/ (never deleted).", SKILLS, default=90)
    learn: str = setting("HERMES_LEARN", LEARN, "auto: after a turn that worked (an answer, no unrecovered tool "
                         "failure) the curator may save a skill, and at a session's end facts; review: they wait for "
                         "approval (`hermes-tui inbox`; facts also in `hermes-tui facts`) and reach no prompt "
                         "until accepted; off: nothing is learned.", SKILLS, default="auto")
    delegates: int = setting("HERMES_DELEGATES", POSITIVE_COUNT, "Sub-agents that run at once when the model "
                             "delegates several tasks in one step; the others wait for a free place.", SUBAGENTS,
                             default=3)
    mcp_wait: float = setting("HERMES_MCP_WAIT", SECONDS, "Seconds a -p turn (and `hermes-tui mcp list`) waits for "
                              "the MCP servers to be ready; a server still starting is named and left out.", MCP,
                              default=10.0)
    helper: bool = setting("HERMES_HELPER", FLAG, "Keep LiteLLM loaded in one background helper per user, for "
                           "-p runs, the app, the web dashboard and editors; false: each loads its own.", HELPER,
                           default=True)
    helper_idle: float = setting("HERMES_HELPER_IDLE", POSITIVE_SECONDS, "Seconds without a request after which "
                                 "the warm helper exits (set by the run that starts it).", HELPER, default=600.0)
    flask_secret_key: str | None = setting(
        "FLASK_SECRET_KEY", SECRET, "Required, at least 32 random characters; a known key would let its writer forge "
        "session cookies. Generate: python -c \"import secrets; print(secrets.token_hex(32))\"", WEB, privileged=True)
    web_password: str | None = setting(
        "HERMES_WEB_PASSWORD", PASSWORD, "Required unless HERMES_WEB_ALLOW_NO_AUTH=true; at least 12 characters and "
        "not a well-known password. Changing it (and restarting) ends every session.", WEB, privileged=True)
    web_allow_no_auth: bool = setting("HERMES_WEB_ALLOW_NO_AUTH", FLAG, "Open the dashboard without a password "
                                      "(trusted local networks only).", WEB, default=False, privileged=True)
    web_allowed_hosts: tuple[str, ...] = setting(
        "HERMES_WEB_ALLOWED_HOSTS", HOSTS, "Host names the dashboard answers to (comma-separated; .example.com "
        "includes subdomains). Default: localhost, 127.0.0.1, the --host address and RAILWAY_PUBLIC_DOMAIN. "
        "Required for no-auth mode.", WEB, default=(), shown="", privileged=True)
    web_enable_shell: bool = setting("HERMES_WEB_ENABLE_SHELL", FLAG, "Give the web model run_bash.", WEB,
                                     default=False, privileged=True)
    web_enable_write: bool = setting("HERMES_WEB_ENABLE_WRITE", FLAG, "Give the web model write_file.", WEB,
                                     default=False, privileged=True)
    web_enable_mcp: bool = setting("HERMES_WEB_ENABLE_MCP", FLAG, "Offer every MCP server's tools on the web, run "
                                   "without asking (default false: only servers with \"trust\": true in mcp.json).",
                                   WEB, default=False, privileged=True)
    web_trusted_proxies: int = setting("HERMES_WEB_TRUSTED_PROXIES", COUNT, "Number of reverse proxies in front "
                                       "whose X-Forwarded-For is trusted (Railway: 1); 0: the socket's peer address.",
                                       WEB, default=0, privileged=True)
    railway_public_domain: str | None = setting("RAILWAY_PUBLIC_DOMAIN", HOST, "One more host the dashboard answers "
                                                "(Railway sets it).", WEB, privileged=True)
    port: int = setting("PORT", PORT, "Port hermes-web listens on when --port is not given (Railway sets it).", WEB,
                        default=8000)
    # Not settings: what loading found.
    secret_values: Mapping[str, str] = field(default_factory=dict, repr=False)  # every secret-named variable
    ignored_local: tuple[str, ...] = ()  # privileged variables found in ./.env and not used
    # (provider, HERMES_API_BASE): the endpoint belongs to the provider it was configured with, so
    # a switch to another provider (/model) never sends that provider's key there (switched_to).
    configured_endpoint: tuple[str, str] | None = None

    @property
    def secrets(self) -> dict[str, str]:
        """Every configured secret value by variable name (kept from the shell; what output scrubbing
        redacts is ``redaction.Secrets.from_config``: these, less secret-named values that do not look like keys)."""
        return {**self.secret_values, **self.declared_secrets}

    @property
    def declared_secrets(self) -> dict[str, str]:
        """The secrets of declared, privileged settings (API keys, Flask key, web password)."""
        found = dict(self.api_keys)
        if self.flask_secret_key:
            found["FLASK_SECRET_KEY"] = self.flask_secret_key
        if self.web_password:
            found["HERMES_WEB_PASSWORD"] = self.web_password
        return found

    @property
    def warnings(self) -> list[str]:
        """One line per setting that was found but not used, for the surfaces to show."""
        if not self.ignored_local:
            return []
        return [(f"Ignored {', '.join(self.ignored_local)} in ./.env: the provider, model, API keys and settings "
                 "that widen what Hermes may do are read only from the environment or HERMES_HOME/.env.")]

    @property
    def provider_info(self) -> Provider:
        return PROVIDER_TABLE[self.provider]

    @property
    def api_key(self) -> str | None:
        variable = self.provider_info.key_env_var
        return self.api_keys.get(variable) if variable else None

    @property
    def key_variable(self) -> str | None:
        return self.provider_info.key_env_var

    @property
    def effective_api_base(self) -> str | None:
        """HERMES_API_BASE, else the provider's default endpoint (None: litellm's own default)."""
        return self.api_base or self.provider_info.default_base

    @property
    def db_path(self) -> Path:
        return self.home / "memory.sqlite3"

    @property
    def skills_dir(self) -> Path:
        return self.home / "skills"

    @property
    def env_file(self) -> Path:
        return self.home / ".env"

    @property
    def has_api_key(self) -> bool:
        return self.api_key is not None or not self.provider_info.needs_key

    def require_api_key(self) -> None:
        """Raise ``MissingKeyError`` when the provider needs a key that is not configured."""
        if not self.has_api_key:
            raise MissingKeyError(self.provider, self.key_variable or "API key")

    def with_overrides(self, *, provider: str | None = None, model: str | None = None) -> Config:
        """A copy with another provider and/or model (the CLI flags, ``/model``)."""
        if provider is None and model is None:
            return self
        new_provider = _check_provider(provider or self.provider)
        if model is None:
            model = DEFAULT_MODELS[new_provider] if new_provider != self.provider else self.model
        endpoint = (new_provider, self.api_base) if self.api_base else None
        return replace(self, provider=new_provider, model=model, configured_endpoint=endpoint)

    def switched_to(self, *, provider: str | None = None, model: str | None = None) -> Config:
        """A copy for a switch while running (``/model``): another provider uses its own endpoint,
        and the configured one comes back with its provider. Raises ``ConfigError``."""
        new_provider = _check_provider(provider or self.provider)
        if new_provider == self.provider:
            return self.with_overrides(model=model)
        owner, base = self.configured_endpoint or (None, None)
        base = base if new_provider == owner else None
        if base is None and PROVIDER_TABLE[new_provider].requires_base:
            raise ConfigError(f"The {new_provider} provider needs its server's URL: choose it in /setup "
                              "(or set HERMES_API_BASE with it).")
        return replace(self, provider=new_provider, api_base=base,
                       model=model or DEFAULT_MODELS[new_provider])

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Config:
        """Build a Config; raises ``ConfigError`` for an invalid value. Creates HERMES_HOME (0700)."""
        cwd = cwd or Path.cwd()
        env, ignored = _merged_environment(process_environment() if environ is None else dict(environ), cwd)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if _SETTING in f.metadata:
                value = f.metadata[_SETTING].read(env)
                if value is not MISSING:
                    values[f.name] = value
            elif _GATHERED in f.metadata:
                values[f.name] = {s.name: v for s in f.metadata[_GATHERED] if (v := s.read(env)) is not MISSING}
        provider = values.setdefault("provider", cls.provider)
        values.setdefault("model", DEFAULT_MODELS[provider])
        api_base = values.get("api_base")
        if PROVIDER_TABLE[provider].requires_base and not api_base:
            raise ConfigError(
                f"HERMES_API_BASE is not set: the {provider} provider needs the server's URL "
                "(for example http://localhost:8000/v1)."
            )
        values["home"] = _private_home(values.get("home") or default_home({}))
        values["workspace"] = _workspace(values.get("workspace"), cwd)
        return cls(
            **values,
            secret_values={k: v for k, v in env.items() if is_secret_variable(k) and v.strip()},
            ignored_local=ignored,
            configured_endpoint=(provider, api_base) if api_base else None,
        )


def _settings_of(f: Field[Any]) -> tuple[Setting, ...]:
    if _SETTING in f.metadata:
        return (f.metadata[_SETTING],)
    return tuple(f.metadata.get(_GATHERED, ()))


SETTINGS: tuple[Setting, ...] = tuple(s for f in fields(Config) for s in _settings_of(f))
"""Every setting, in the order the docs list them."""

PRIVILEGED = frozenset(s.name for s in SETTINGS if s.privileged)
"""Read only from the process environment or HERMES_HOME/.env, never from ./.env."""


def default_home(env: Mapping[str, str]) -> Path:
    """HERMES_HOME as ``env`` names it, else ~/.hermes (not resolved, not created)."""
    return Path(env.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def _merged_environment(env: dict[str, str], cwd: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """The merged variables, and the privileged ones ./.env tried to set (left out)."""
    home = default_home(env)
    same = (cwd / ".env").resolve() == (home / ".env").resolve()  # started inside HERMES_HOME
    local = {} if same else _read_env_file(cwd / ".env")
    ignored = tuple(sorted(name for name in local if name in PRIVILEGED and name not in env))
    merged = _read_env_file(home / ".env")
    merged.update({k: v for k, v in local.items() if k not in PRIVILEGED})
    merged.update(env)
    return merged, ignored


def _read_env_file(path: Path) -> dict[str, str]:
    try:
        if not path.is_file():
            return {}
        return {k: v for k, v in dotenv_values(path).items() if v is not None}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}. Fix or remove that file.") from exc


def _private_home(path: Path) -> Path:
    home = path.resolve()
    try:
        private_dir(home)
    except OSError as exc:
        raise ConfigError(f"HERMES_HOME={str(home)!r} cannot be created ({exc.strerror}): point it at a writable folder.") from exc
    if not home.is_dir():
        raise ConfigError(f"HERMES_HOME={str(home)!r} is not a folder: point it at a writable folder.")
    return home


def _workspace(path: Path | None, cwd: Path) -> Path:
    path = cwd / path if path is not None else cwd
    if not path.is_dir():
        raise ConfigError(f"HERMES_WORKSPACE={str(path)!r} does not exist or is not a folder: create it or point it elsewhere.")
    return path.resolve()


# -- generated documents (cog: .env.example, docs/settings.md; tests/conftest.py reads SETTINGS) ----


def env_example() -> str:
    """Every setting as a commented line under its doc, by section: the body of ``.env.example``."""
    lines: list[str] = []
    section = ""
    for s in SETTINGS:
        if s.section != section:
            section = s.section
            lines += [""] if lines else []
            lines.append(f"# --- {section} " + "-" * max(3, 92 - len(section)))
        lines += textwrap.wrap(s.doc, 98, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
        if s.privileged:
            lines.append("# [privileged]")
        lines.append(f"# {s.name}={s.shown}")
    return "\n".join(lines) + "\n"


def settings_table() -> str:
    """Every setting as a markdown table: the body of ``docs/settings.md``."""
    rows = ["| variable | kind | default | privileged | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        cells = (f"`{s.name}`", s.kind.label, f"`{s.shown}`" if s.shown else "", "yes" if s.privileged else "",
                 s.doc)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"
