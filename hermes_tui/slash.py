"""What counts as a slash command in a typed line, for every surface (the TUI and the web know
different commands, but a line means the same on both)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    """One row of a surface's command table (the TUI's ``tui/commands.py``, the web's ``web/commands.py``)."""

    name: str
    usage: str  # argument hint, "" when the command takes none
    help: str

    @property
    def takes_argument(self) -> bool:
        return bool(self.usage)

    @property
    def title(self) -> str:
        return f"/{self.name} {self.usage}".rstrip()


def split_command(text: str, known: Container[str]) -> tuple[str, str] | None:
    """``(name, argument)`` of a command line (``/name rest``), or None for a chat message.

    ``//x`` sends ``/x`` as text, and so does a line whose first word looks like a path
    (``/var/log/syslog shows errors, why?``): a command name never holds ``/``, ``.`` or ``~``.
    An unknown name that is not a path is still a command line: the surface says it is unknown
    instead of sending it to the model. ``name`` is lower-cased; ``known`` holds lower-case names.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, argument = ([*stripped[1:].split(None, 1), ""])[:2] if stripped[1:] else ("", "")
    if name.lower() not in known and any(mark in name for mark in "/.~"):
        return None
    return name.lower(), argument.strip()


def as_message(text: str) -> str:
    """The text to send for a chat message: a leading ``//`` escapes a literal slash."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text
