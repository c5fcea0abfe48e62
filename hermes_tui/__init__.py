"""Hermes: a self-improving personal AI agent for the terminal.

Packages: ``agent`` (the loop and its tools), ``memory`` (sessions in SQLite), ``skills``,
``learning`` (curators), ``tui``, ``web``; ``cli`` and ``headless`` are the command lines, ``warm``
and ``warm_helper`` the helper process of ``-p`` runs. Shared:
``conversation`` (the typed messages), ``db`` (SQLite connections and migrations),
``llm``/``llm_stream``/``llm_errors``/``providers`` (models), ``config``, ``clock`` and ``background`` (work off
a surface's thread)."""

__version__ = "0.1.0"

import logging as _logging

# Library code never prints: without a handler, Python's last-resort handler would write
# warnings to stderr and corrupt the full-screen app. Surfaces attach a file handler.
_logging.getLogger("hermes_tui").addHandler(_logging.NullHandler())
