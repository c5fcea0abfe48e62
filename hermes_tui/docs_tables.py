"""Markdown tables for docs/ made from the tables the code declares, run by cog in the docs pages.

The pages' cog blocks pass in the surfaces' own tables (``tui.actions.ACTIONS``,
``tui.commands.COMMANDS``, ``web.commands``, ``cli.SUBCOMMANDS``); this module imports none of
them, so the core does not depend on a surface, and Textual or Flask load only while cog runs.
``tests/test_docs.py`` fails when a page's table no longer matches what the code declares.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

# Keys of these scopes work wherever they say here, so their help text names no place;
# every other action's help starts with where it works ("Skills pane: ...", "/mcp: ...").
UNPREFIXED_SCOPES: dict[str, str] = {"app": "anywhere", "chat": "chat", "prompt": "prompt"}


class KeyAction(Protocol):
    @property
    def scope(self) -> str: ...
    @property
    def key_text(self) -> str: ...
    @property
    def help(self) -> str: ...


class Command(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def help(self) -> str: ...


def _cell(text: str) -> str:
    """Text for one table cell: a ``|`` would end the cell, even inside a code span."""
    return text.replace("|", "\\|")


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _code(text: str) -> str:
    return f"`{text}`"


def where_and_what(action: KeyAction) -> tuple[str, str]:
    """Where a key works and what it does: the scope's place, or the help text's ``place: `` prefix."""
    if action.scope in UNPREFIXED_SCOPES:
        return UNPREFIXED_SCOPES[action.scope], action.help
    where, sep, what = action.help.partition(": ")
    if not sep:
        raise ValueError(f"the help of a {action.scope!r} key must start with where it works: {action.help!r}")
    return where, what


def keys_table(actions: Iterable[KeyAction]) -> str:
    """The terminal app's keys: each key in its own code span (``F2`` / ``alt+1``)."""
    rows = []
    for action in actions:
        where, what = where_and_what(action)
        rows.append((" / ".join(_code(key) for key in action.key_text.split(" / ")), where, what))
    return _table(("keys", "where", "what"), rows)


def commands_table(commands: Iterable[Command]) -> str:
    """A surface's slash commands with their argument hints."""
    return _table(("command", "what"), ((_code(c.title), c.help) for c in commands))


def pairs_table(header: tuple[str, str], pairs: Iterable[tuple[str, str]], prefix: str = "") -> str:
    """Two columns, the first as code (``prefix`` before it): the web's keys, the subcommands."""
    return _table(header, ((_code(prefix + first), second) for first, second in pairs))


class ProviderRow(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def litellm_prefix(self) -> str: ...
    @property
    def key_env_var(self) -> str | None: ...
    @property
    def needs_key(self) -> bool: ...
    @property
    def default_model(self) -> str: ...
    @property
    def default_base(self) -> str | None: ...
    @property
    def requires_base(self) -> bool: ...
    @property
    def context_window(self) -> int: ...


def providers_table(providers: Iterable[ProviderRow]) -> str:
    """``providers.PROVIDER_TABLE``: what each provider needs and assumes."""
    rows = []
    for p in providers:
        key = "none" if p.key_env_var is None else _code(p.key_env_var) + ("" if p.needs_key else " (optional)")
        endpoint = (_code("HERMES_API_BASE") + " required" if p.requires_base
                    else _code(p.default_base) if p.default_base else "litellm's")
        rows.append((_code(p.name), _code(p.litellm_prefix + "/"), key, _code(p.default_model), endpoint,
                     f"{p.context_window:,}"))
    return _table(("provider", "litellm prefix", "key variable", "default model", "endpoint", "context fallback"), rows)


class HookEventRow(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def when(self) -> str: ...
    @property
    def matched(self) -> str: ...
    @property
    def blocks(self) -> str: ...
    @property
    def context(self) -> bool: ...


def hook_events_table(events: Iterable[HookEventRow]) -> str:
    """``agent.hooks.events.EVENTS``: when each event fires and what its hooks may do."""
    rows = ((_code(e.name), e.when, _code(e.matched) if e.matched else "—", e.blocks,
             "added to the model's context" if e.context else "—") for e in events)
    return _table(("event", "fires", "matcher tests", "exit 2 (or a block decision)", "stdout on exit 0"), rows)
