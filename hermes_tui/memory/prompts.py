"""The prompt history file (HERMES_HOME/tui_history.jsonl, one JSON string per line): what the
terminal app's ↑ browses (``tui/history.py``). Its format lives here because forgetting a session
from any surface (``forget.forget_session``) takes that session's prompts out of it too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from pathlib import Path

from hermes_tui.private import write_private
from hermes_tui.slash import as_message

log = logging.getLogger(__name__)

HISTORY_FILE = "tui_history.jsonl"


def read(path: Path) -> list[str]:
    """Every entry, oldest first; a line cut by a crash is skipped, an unreadable file is empty."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("prompt history unreadable (%s); starting empty", exc)
        return []
    entries: list[str] = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash; the others are still good
        if isinstance(value, str) and value:
            entries.append(value)
    return entries


def rewrite(path: Path, entries: list[str]) -> None:
    """Replace the file with ``entries`` (whole, so removed lines are gone from it)."""
    write_private(path, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))


def sent_one_of(prompts: Collection[str]) -> Callable[[str], bool]:
    """Whether an entry is one of ``prompts`` as sent (``//`` escapes a typed slash)."""
    return lambda entry: entry in prompts or as_message(entry) in prompts


def forget(path: Path, prompts: Collection[str]) -> int:
    """Remove the entries that sent one of ``prompts`` from the file; how many went."""
    if not prompts or not path.exists():
        return 0
    entries = read(path)
    sent = sent_one_of(prompts)
    kept = [entry for entry in entries if not sent(entry)]
    if len(kept) != len(entries):
        rewrite(path, kept)
    return len(entries) - len(kept)
