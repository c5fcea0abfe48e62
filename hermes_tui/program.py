"""The ``hermes-tui`` command (``[project.scripts]`` in pyproject.toml): ``cli.tui_main`` with the
collector paused from before its first import (``heap``)."""

from __future__ import annotations

from hermes_tui import heap


def main() -> int:
    heap.pause()
    from hermes_tui.cli import tui_main

    return tui_main()
