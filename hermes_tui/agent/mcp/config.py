"""Which MCP servers are declared, and what the user decided about them.

Servers are declared in ``HERMES_HOME/mcp.json`` (the user's own) and in the workspace's
``.mcp.json`` (repository content, so each of its servers runs only after a one-time approval
of its exact entry), both in Claude Code's ``{"mcpServers": {name: entry}}`` format. Values may
say ``${NAME}`` (or ``${NAME:-default}``): they are filled in from the process environment or
``HERMES_HOME/.env`` when the server starts, never written anywhere. Approvals and the
enabled/disabled switches live in ``HERMES_HOME/mcp-state.json``, never in the repository.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values

from hermes_tui.agent.mcp import code
from hermes_tui.private import write_private
from hermes_tui.redaction import process_environment

log = logging.getLogger(__name__)

HOME_FILE = "mcp.json"
WORKSPACE_FILE = ".mcp.json"
STATE_FILE = "mcp-state.json"
DEFAULT_TIMEOUT = 60.0  # seconds one tool call may take
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Names of variables that hold secrets, for the command-line check (wider than redaction's list:
# a server's own token variables are named freely).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|(?:^|_)PAT(?:_|$)", re.IGNORECASE)
_ENTRY_KEYS = {"type", "command", "args", "env", "url", "headers", "trust", "timeout"}

Origin = Literal["home", "workspace"]


@dataclass(frozen=True)
class ServerSpec:
    """One declared server, as written (``${NAME}`` references unresolved)."""

    name: str
    origin: Origin
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    trust: bool = False  # its tools run without asking
    timeout: float = DEFAULT_TIMEOUT

    @property
    def fingerprint(self) -> str:
        """What an approval is bound to: a changed entry must be approved again."""
        entry = {"transport": self.transport, "command": self.command, "args": list(self.args),
                 "env": dict(self.env), "url": self.url, "headers": dict(self.headers), "trust": self.trust}
        return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()

    @property
    def references(self) -> list[str]:
        """The variables its values refer to (``${NAME}``), in order, once each."""
        texts = [self.command, self.url, *self.args, *self.env.values(), *self.headers.values()]
        return list(dict.fromkeys(m.group(1) for text in texts for m in _REFERENCE.finditer(text)))

    @property
    def target(self) -> str:
        """What it runs or where it connects, for listings."""
        return self.url if self.transport == "http" else " ".join([self.command, *self.args])


@dataclass(frozen=True)
class Resolved:
    """A spec with its references filled in; ``secrets`` are the values that came from them."""

    spec: ServerSpec
    command: str
    args: tuple[str, ...]
    env: dict[str, str] = field(repr=False)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Declared:
    """The MCP servers declared for a workspace, and the lines saying what could not be used."""

    specs: tuple[ServerSpec, ...]
    problems: tuple[str, ...]  # one readable line per file or entry that could not be used


class ResolveError(ValueError):
    """A ``${NAME}`` with no value; the message says where to set it."""


def declared(home: Path, workspace: Path) -> Declared:
    """Every server of ``HERMES_HOME/mcp.json`` and ``<workspace>/.mcp.json``; the user's own win a
    name both declare."""
    specs: dict[str, ServerSpec] = {}
    problems: list[str] = []
    for path, origin in ((home / HOME_FILE, "home"), (workspace / WORKSPACE_FILE, "workspace")):
        for item in _read(path, origin, problems):  # type: ignore[arg-type]  # origin is one of the two literals above
            if item.name in specs:
                problems.append(f"{path}: server {item.name!r} is also declared in {HOME_FILE}; that one is used.")
                continue
            specs[item.name] = item
    return Declared(tuple(specs.values()), tuple(problems))


def _read(path: Path, origin: Origin, problems: list[str]) -> list[ServerSpec]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot be read ({exc}); its MCP servers are not started.")
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); fix it to start its MCP servers.")
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        problems.append(f'{path}: expected {{"mcpServers": {{name: {{...}}}}}}; no MCP servers read from it.')
        return []
    found = []
    for name, entry in servers.items():
        spec = _spec(str(name), entry, origin)
        if isinstance(spec, str):
            problems.append(f"{path}: server {name!r}: {spec}")
        else:
            found.append(spec)
    return found


def _spec(name: str, entry: Any, origin: Origin) -> ServerSpec | str:
    """The spec of one entry, or what is wrong with it."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
        return "the name may hold only letters, digits, '_', '-' and '.' (at most 40); rename it."
    if not isinstance(entry, dict):
        return "the entry must be an object with a command or a url."
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        log.info("MCP server %s: ignoring keys %s", name, unknown)
    kind = str(entry.get("type") or ("http" if "url" in entry else "stdio")).lower()
    if kind in ("streamable-http", "streamable_http", "streamablehttp"):
        kind = "http"
    if kind not in ("stdio", "http"):
        return f"type {kind!r} is not supported: use stdio (a command) or http (a url)."
    strings = _strings(entry, "env") if kind == "stdio" else _strings(entry, "headers")
    if isinstance(strings, str):
        return strings
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        return "timeout must be a number of seconds above 0."
    trust = entry.get("trust", False)
    if not isinstance(trust, bool):
        return "trust must be true or false."
    if kind == "http":
        url = entry.get("url")
        if not isinstance(url, str) or not re.match(r"https?://", url):
            return "an http server needs a url starting with http:// or https://."
        return ServerSpec(name, origin, "http", url=url, headers=strings, trust=trust, timeout=float(timeout))
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command.strip():
        return "a stdio server needs a command (or give a url for an http server)."
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return "args must be a list of strings."
    return ServerSpec(name, origin, "stdio", command=command, args=tuple(args), env=strings, trust=trust,
                      timeout=float(timeout))


def _strings(entry: dict[str, Any], key: str) -> dict[str, str] | str:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return f"{key} must be an object of strings."
    return {str(k): v for k, v in value.items()}


def lookup(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where ``${NAME}`` is looked up: the process environment over ``HERMES_HOME/.env`` (never
    ``./.env``, which the agent can write). The programs withhold secret-named variables from
    ``os.environ`` at start (``secrets.withhold_from_environment``); a server is still given
    the ones its entry names."""
    found: dict[str, str] = {}
    try:
        found.update({k: v for k, v in dotenv_values(home / ".env").items() if v is not None})
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("cannot read %s for MCP variables: %s", home / ".env", exc)
    found.update(process_environment() if environ is None else environ)
    return found


def _on_command_line(spec: ServerSpec) -> list[str]:
    """Secret-named variables its command line refers to: filled in there, their values would be
    visible to every local user in ``ps``."""
    words = [spec.command, *spec.args]
    named = dict.fromkeys(m.group(1) for word in words for m in _REFERENCE.finditer(word))
    return [name for name in named if _SECRET_NAME.search(name)]


def resolve(spec: ServerSpec, values: Mapping[str, str]) -> Resolved:
    """Fill in the references; raises ``ResolveError`` naming the first variable without a value,
    or a secret-named one on the command line (it belongs in ``env``)."""
    exposed = _on_command_line(spec)
    if exposed:
        name = exposed[0]
        raise ResolveError(f"${{{name}}} is in the command line of the MCP server {spec.name!r}, where every "
                           f'local user can read it (ps): pass it in "env" instead ("env": {{"{name}": '
                           f'"${{{name}}}"}}) and let the server read it from there.')
    secrets: dict[str, str] = {}

    def fill(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in values:
                secrets[name] = values[name]
                return values[name]
            if default is not None:
                return default
            raise ResolveError(f"{name} is not set: the MCP server {spec.name!r} needs it. "
                               "Set it in your environment or in HERMES_HOME/.env.")
        return _REFERENCE.sub(one, text)

    return Resolved(spec, fill(spec.command), tuple(fill(a) for a in spec.args),
                    {k: fill(v) for k, v in spec.env.items()}, fill(spec.url),
                    {k: fill(v) for k, v in spec.headers.items()}, secrets)


class McpState:
    """The user's decisions, in ``HERMES_HOME/mcp-state.json`` (0600): which workspace servers are
    approved (per workspace, bound to the entry's fingerprint) and which servers are disabled."""

    def __init__(self, home: Path, workspace: Path) -> None:
        self.path = home / STATE_FILE
        self.workspace = str(workspace)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, Any]) -> None:
        write_private(self.path, json.dumps(data, indent=2, sort_keys=True))

    def _key(self, spec: ServerSpec) -> str:
        return spec.name if spec.origin == "home" else f"{self.workspace}::{spec.name}"

    def binding(self, spec: ServerSpec) -> str:
        """What an approval of a workspace server is bound to: its entry and the content of the
        workspace files it runs (``code.digest``). Raises ``code.TooLarge``."""
        if spec.transport == "http":
            return spec.fingerprint
        ran = code.digest(Path(self.workspace), spec.command, spec.args)
        return f"{spec.fingerprint}:{ran}" if ran else spec.fingerprint

    def approved(self, spec: ServerSpec) -> bool:
        if spec.origin == "home":
            return True
        given = self._load().get("approved", {}).get(self._key(spec))
        try:
            return given is not None and given == self.binding(spec)
        except code.TooLarge:
            return False

    def changed(self, spec: ServerSpec) -> bool:
        """Approved for this entry once, but the code it runs from the workspace changed since."""
        given = self._load().get("approved", {}).get(self._key(spec))
        return isinstance(given, str) and given.split(":", 1)[0] == spec.fingerprint and not self.approved(spec)

    def approve(self, spec: ServerSpec) -> None:
        """Approve the entry and the workspace code it runs, as they are now. Raises
        ``code.TooLarge`` when that code is too large to bind an approval to."""
        with self._lock:
            bound = self.binding(spec)
            data = self._load()
            data.setdefault("approved", {})[self._key(spec)] = bound
            self._save(data)

    def enabled(self, spec: ServerSpec) -> bool:
        return self._key(spec) not in self._load().get("disabled", [])

    def set_enabled(self, spec: ServerSpec, on: bool) -> None:
        with self._lock:
            data = self._load()
            disabled = set(data.get("disabled", []))
            (disabled.discard if on else disabled.add)(self._key(spec))
            data["disabled"] = sorted(disabled)
            self._save(data)
