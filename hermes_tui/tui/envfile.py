"""Writing HERMES_HOME/.env for the first-run setup: update our lines, keep the others, mode 0600."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from hermes_tui.private import write_private

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
_BARE = re.compile(r"[A-Za-z0-9_\-./:@+=,]*")


def quote(value: str) -> str:
    """A dotenv value that python-dotenv reads back unchanged."""
    if "\n" in value or "\r" in value:
        raise ValueError("a value in .env cannot span several lines")
    if _BARE.fullmatch(value):
        return value
    if "'" not in value:
        return f"'{value}'"  # single quotes: taken literally
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def update_env_file(path: Path, values: Mapping[str, str | None]) -> None:
    """Set (or, for None, remove) variables in a .env file atomically, readable by the owner only.

    Existing assignments of those variables are replaced in place (later duplicates dropped);
    every other line, comments included, is kept as it was.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    pending = dict(values)
    out: list[str] = []
    for line in lines:
        match = _ASSIGNMENT.match(line)
        name = match.group(1) if match else None
        if name is None or name not in values:
            out.append(line)
        elif name in pending:
            value = pending.pop(name)
            if value is not None:
                out.append(f"{name}={quote(value)}")
    out += [f"{name}={quote(value)}" for name, value in pending.items() if value is not None]
    write_private(path, "\n".join(out) + "\n")
