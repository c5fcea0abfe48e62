"""Approvals of exact file contents (flagged instruction files, a project's hooks), kept in
HERMES_HOME and never in the repository: one JSON object per kind, a file's path to what was
approved of it (its sha256, or a digest binding its content to the code it runs)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from hermes_tui.private import write_private

log = logging.getLogger(__name__)


def read(home: Path, name: str, unreadable: str) -> dict[str, str]:
    """The approvals kept in ``home/name``; none when it is missing or unreadable (logged with
    ``unreadable``: what that means for the user), so nothing runs on a damaged file."""
    try:
        data = json.loads((home / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s unreadable (%s): %s", name, exc, unreadable)
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def record(home: Path, name: str, path: Path, value: str, unreadable: str) -> None:
    """Keep ``value`` as what was approved of ``path`` (written whole, private)."""
    approvals = read(home, name, unreadable)
    approvals[str(path)] = value
    write_private(home / name, json.dumps(approvals, indent=1, sort_keys=True))
