"""Workspace confinement: every path a tool touches must resolve inside HERMES_WORKSPACE.

Resolution follows symlinks (dangling ones too, through ``os.path.realpath``), so a link that
points out, or a path through a symlinked folder that leads out, is refused like ``..`` is.
"""

from __future__ import annotations

import os
from pathlib import Path


class PathError(ValueError):
    """A path the tools refuse; the message tells the model what is allowed."""


def resolve_in_workspace(workspace: Path, raw: object) -> Path:
    """Return the real absolute path for ``raw`` or raise ``PathError`` if it leaves ``workspace``."""
    if not isinstance(raw, str):
        raise PathError("path must be a string relative to the workspace")
    if "\x00" in raw:
        raise PathError("path contains a NUL byte")
    text = raw.strip() or "."
    if text.startswith("~"):
        raise PathError(f"{raw!r}: '~' is not expanded; use a path relative to the workspace")
    root = os.path.realpath(workspace)
    candidate = text if os.path.isabs(text) else os.path.join(root, text)
    try:
        real = os.path.realpath(candidate)
    except (OSError, ValueError) as exc:
        raise PathError(f"{raw!r}: {exc}") from exc
    if real != root and not real.startswith(root + os.sep):
        raise PathError(f"{raw!r} is outside the workspace; only paths inside {root} are allowed")
    return Path(real)


def display_path(workspace: Path, path: Path) -> str:
    """The path as the model should see it: relative to the workspace."""
    rel = os.path.relpath(path, os.path.realpath(workspace))
    return "." if rel == "." else rel
