"""Short, stable text for the screen: paths, durations, token counts, tool arguments, widget ids."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SPACE = re.compile(r"\s+")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"



def short_path(path: Path | str, home: str | None = None) -> str:
    """``path`` with the user's home folder written as ``~`` (stable in screenshots across machines)."""
    text = str(path)
    home = home if home is not None else os.environ.get("HOME") or str(Path.home())
    home = home.rstrip("/")
    if home and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home):]
    return text


def one_line(text: str, width: int) -> str:
    """Whitespace collapsed to single spaces, cut to ``width`` characters with an ellipsis."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def short_args(name: str, arguments: dict[str, Any], width: int = 60) -> str:
    """The gist of a tool call's arguments on one line."""
    # The tool registry (and the skills and memory modules it loads) stays off the start-up path.
    from hermes_tui.agent.tools import summary_argument

    main = summary_argument(name, arguments)  # declared per tool (Tool.summary_arg)
    if main is not None:
        return one_line(main, width)
    parts = [f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items()]
    return one_line(" ".join(parts), width)


def plural(count: int, word: str) -> str:
    """``1 line``, ``2 lines``, ``1,200 lines``."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def elapsed(seconds: float) -> str:
    """Whole seconds while something runs: ``3 s``, ``2 m 05 s``."""
    whole = max(int(seconds), 0)
    return f"{whole} s" if whole < 60 else f"{whole // 60} m {whole % 60:02d} s"


def duration(seconds: float) -> str:
    """A finished duration: ``0.4 s`` below ten seconds, then like ``elapsed``."""
    return f"{max(seconds, 0.0):.1f} s" if seconds < 10 else elapsed(seconds)


def spinner_frame(now: float) -> str:
    return SPINNER[int(now * 10) % len(SPINNER)]


def usage_text(prompt_tokens: int, completion_tokens: int, cost_usd: float | None,
               context: tuple[int, int] | None = None, *, estimated: bool = False, assumed: bool = False) -> str:
    """Session tokens and cost; an unpriced model shows ``cost —``, never a made-up $0.00.
    ``context`` (tokens sent last, window) adds how full the context window is. ``~`` marks
    estimates: counts the server did not send, and a share of a window nobody stated."""
    cost = "cost —" if cost_usd is None else f"${cost_usd:.4f}"
    mark = "~" if estimated else ""
    share = f"~{{}}% of an assumed {context[1]:,}" if assumed and context else "{}%"
    fill = (" · context " + share.format(min(999, round(100 * context[0] / context[1])))) if context and context[1] else ""
    return f"{mark}{prompt_tokens:,} in · {mark}{completion_tokens:,} out · {cost}{fill}"


def widget_id(prefix: str, raw: str) -> str:
    """A valid Textual id from arbitrary text (tool call ids come from the provider)."""
    return f"{prefix}-{_ID_UNSAFE.sub('_', raw) or 'x'}"
