"""Configuration: the environment plus optional ``.env`` files, frozen into one ``Config``.

Order of precedence (first wins): real environment variables, ``./.env`` in the working
directory, ``HERMES_HOME/.env``. Settings that widen what Hermes may do, or choose where the
conversation goes and on whose account (provider, model, endpoint, API keys: ``PRIVILEGED``), are
never taken from ``./.env``: the agent can write files in the working folder, and a cloned
repository may ship a ``.env``; neither must become a setting. Nothing here checks API keys at load time, so every
surface can start without one and explain what to set (``Config.require_api_key``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from hermes_tui.private import private_dir
from hermes_tui.providers import KEY_ENV_VARS, PROVIDER_TABLE, PROVIDERS, Provider
from hermes_tui.redaction import is_secret_variable, process_environment

# Derived from the provider table (hermes_tui.providers), kept here for the code that reads them.
DEFAULT_MODELS = {name: p.default_model for name, p in PROVIDER_TABLE.items()}
KEY_VARIABLES = {name: p.key_env_var for name, p in PROVIDER_TABLE.items()}

PRIVILEGED = frozenset({
    "HERMES_WEB_ENABLE_SHELL",  # gives the web model a shell
    "HERMES_WEB_ENABLE_WRITE",  # lets the web model write files
    "HERMES_WEB_ENABLE_MCP",  # lets the web model run every MCP server's tools without asking
    "HERMES_WEB_ALLOW_NO_AUTH",  # opens the dashboard without a password
    "HERMES_WEB_TRUSTED_PROXIES",  # decides which client address the login lockout sees
    "HERMES_WEB_ALLOWED_HOSTS",  # which Host headers the dashboard answers
    "RAILWAY_PUBLIC_DOMAIN",  # one more Host the dashboard answers (Railway sets it)
    "HERMES_WEB_PASSWORD",  # a known password would let its writer log in
    "FLASK_SECRET_KEY",  # a known key would let its writer forge session cookies
    "HERMES_API_BASE",  # where requests, and with them the API key, are sent
    "HERMES_APPROVAL",  # "always" runs commands without asking
    "HERMES_HOME",  # where HERMES_HOME/.env, with all of the above, is read from
    "HERMES_WORKSPACE",  # the folder the tools are confined to
    "HERMES_SANDBOX",  # "off" lets commands read every file and setting
    "HERMES_SANDBOX_NETWORK",  # "on" lets commands reach the network
    "HERMES_PROVIDER",  # which company the conversation goes to
    "HERMES_MODEL",  # which model (and bill) answers
}) | KEY_ENV_VARS  # a key in a cloned repository's .env moves the conversation to its owner's account
"""Read only from the process environment or HERMES_HOME/.env, never from ./.env."""

APPROVAL_MODES = ("ask", "always")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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


@dataclass(frozen=True)
class Config:
    provider: str = "anthropic"
    model: str = DEFAULT_MODELS["anthropic"]
    api_base: str | None = None
    home: Path = field(default_factory=lambda: Path.home() / ".hermes")
    workspace: Path = field(default_factory=Path.cwd)
    approval: str = "ask"
    # Secrets never appear in repr() so they cannot leak into logs by accident.
    api_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    flask_secret_key: str | None = field(default=None, repr=False)
    web_password: str | None = field(default=None, repr=False)
    web_allow_no_auth: bool = False
    web_enable_shell: bool = False
    web_enable_write: bool = False
    web_enable_mcp: bool = False  # HERMES_WEB_ENABLE_MCP: untrusted MCP servers' tools on the web
    web_trusted_proxies: int = 0
    web_allowed_hosts: tuple[str, ...] = ()  # HERMES_WEB_ALLOWED_HOSTS; empty: the web's default list
    railway_public_domain: str | None = None
    secret_values: Mapping[str, str] = field(default_factory=dict, repr=False)  # every secret-named variable
    ignored_local: tuple[str, ...] = ()  # privileged variables found in ./.env and not used
    context_tokens: int | None = None  # HERMES_CONTEXT_TOKENS: the window when litellm does not know the model
    compact_at: float = 0.8  # HERMES_COMPACT_AT: share of the window that triggers compaction
    sandbox: bool = True  # HERMES_SANDBOX: run_bash in bubblewrap when it works (agent/sandbox.py)
    sandbox_network: bool = False  # HERMES_SANDBOX_NETWORK: commands in the sandbox may use the network
    skill_stale_days: int = 30  # HERMES_SKILL_STALE_DAYS: an unused learned skill leaves the prompt index
    skill_archive_days: int = 90  # HERMES_SKILL_ARCHIVE_DAYS: ... and moves to HERMES_HOME/skills-archive
    # (provider, HERMES_API_BASE): the endpoint belongs to the provider it was configured with, so
    # a switch to another provider (/model) never sends that provider's key there (switched_to).
    configured_endpoint: tuple[str, str] | None = None

    @property
    def secrets(self) -> dict[str, str]:
        """Every configured secret value by variable name (scrubbed from tool output, kept from the shell)."""
        found = {**self.secret_values, **self.api_keys}
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
        return [f"Ignored {', '.join(self.ignored_local)} in ./.env: the provider, model, API keys and settings "
                "that widen what Hermes may do are read only from the environment or HERMES_HOME/.env."]

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
        env, ignored = _merged_environment(process_environment() if environ is None else dict(environ),
                                           cwd or Path.cwd())
        provider = _check_provider(env.get("HERMES_PROVIDER") or "anthropic")
        model = (env.get("HERMES_MODEL") or "").strip() or DEFAULT_MODELS[provider]
        api_base = _api_base(env, "HERMES_API_BASE")
        if PROVIDER_TABLE[provider].requires_base and not api_base:
            raise ConfigError(
                f"HERMES_API_BASE is not set: the {provider} provider needs the server's URL "
                "(for example http://localhost:8000/v1)."
            )
        approval = (env.get("HERMES_APPROVAL") or "ask").strip().lower()
        if approval not in APPROVAL_MODES:
            raise ConfigError(f"HERMES_APPROVAL={approval!r} is not valid: use 'ask' or 'always'.")
        return cls(
            provider=provider,
            model=model,
            api_base=api_base,
            home=_home_from(env),
            workspace=_workspace_from(env, cwd),
            approval=approval,
            api_keys=_keys_from(env),
            flask_secret_key=(env.get("FLASK_SECRET_KEY") or "").strip() or None,
            web_password=env.get("HERMES_WEB_PASSWORD") or None,
            web_allow_no_auth=_flag(env, "HERMES_WEB_ALLOW_NO_AUTH"),
            web_enable_shell=_flag(env, "HERMES_WEB_ENABLE_SHELL"),
            web_enable_write=_flag(env, "HERMES_WEB_ENABLE_WRITE"),
            web_enable_mcp=_flag(env, "HERMES_WEB_ENABLE_MCP"),
            web_trusted_proxies=_count(env, "HERMES_WEB_TRUSTED_PROXIES"),
            web_allowed_hosts=_hosts(env, "HERMES_WEB_ALLOWED_HOSTS"),
            railway_public_domain=(env.get("RAILWAY_PUBLIC_DOMAIN") or "").strip().lower() or None,
            secret_values={k: v for k, v in env.items() if is_secret_variable(k) and v.strip()},
            ignored_local=ignored,
            context_tokens=_tokens(env, "HERMES_CONTEXT_TOKENS"),
            configured_endpoint=(provider, api_base) if api_base else None,
            compact_at=_share(env, "HERMES_COMPACT_AT", 0.8),
            sandbox=_flag(env, "HERMES_SANDBOX", default=True),
            sandbox_network=_flag(env, "HERMES_SANDBOX_NETWORK"),
            skill_stale_days=_days(env, "HERMES_SKILL_STALE_DAYS", 30),
            skill_archive_days=_days(env, "HERMES_SKILL_ARCHIVE_DAYS", 90),
        )


def default_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
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


def _check_provider(value: str) -> str:
    provider = value.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigError(f"HERMES_PROVIDER={value!r} is not known: use one of {', '.join(PROVIDERS)}.")
    return provider


def _keys_from(env: Mapping[str, str]) -> dict[str, str]:
    return {name: env[name].strip() for name in KEY_ENV_VARS if (env.get(name) or "").strip()}


def _home_from(env: Mapping[str, str]) -> Path:
    home = default_home(env).resolve()
    try:
        private_dir(home)
    except OSError as exc:
        raise ConfigError(f"HERMES_HOME={str(home)!r} cannot be created ({exc.strerror}): point it at a writable folder.") from exc
    if not home.is_dir():
        raise ConfigError(f"HERMES_HOME={str(home)!r} is not a folder: point it at a writable folder.")
    return home


def _workspace_from(env: Mapping[str, str], cwd: Path | None) -> Path:
    raw = env.get("HERMES_WORKSPACE")
    path = Path(raw).expanduser() if raw else (cwd or Path.cwd())
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    if not path.is_dir():
        raise ConfigError(f"HERMES_WORKSPACE={str(path)!r} does not exist or is not a folder: create it or point it elsewhere.")
    return path.resolve()


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    value = (env.get(name) or "").strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={value!r} is not a yes/no value: use true or false.")


def _count(env: Mapping[str, str], name: str) -> int:
    value = (env.get(name) or "0").strip()
    if not value.isdigit():
        raise ConfigError(f"{name}={value!r} is not a whole number: use 0 (no proxy) or the number of proxies in front.")
    return int(value)


def _hosts(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Host names separated by commas or spaces; ``.example.com`` also matches its subdomains."""
    hosts = tuple(h.lower() for h in (env.get(name) or "").replace(",", " ").split())
    for host in hosts:
        if host == "*" or not re.fullmatch(r"\.?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]", host):
            raise ConfigError(f"{name} has {host!r}, which is not a host name: list names like "
                              "hermes.example.com (no '*', scheme, port or path).")
    return hosts


def _api_base(env: Mapping[str, str], name: str) -> str | None:
    """The endpoint URL, checked now: without a scheme every request would fail later as a "server error"."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
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


def _tokens(env: Mapping[str, str], name: str) -> int | None:
    value = (env.get(name) or "").strip().replace("_", "")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1000:
        raise ConfigError(f"{name}={value!r} is not a token count: use a whole number of at least 1000, e.g. 128000.")
    return int(value)


def _days(env: Mapping[str, str], name: str, default: int) -> int:
    value = (env.get(name) or "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name}={value!r} is not a number of days: use a whole number of at least 1, e.g. {default}.")
    return int(value)


def _share(env: Mapping[str, str], name: str, default: float) -> float:
    value = (env.get(name) or "").strip()
    if not value:
        return default
    try:
        share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        share = -1.0
    if not 0.1 <= share <= 1.0:
        raise ConfigError(f"{name}={value!r} is not a share of the context window: use e.g. 0.8 or 80%.")
    return share
