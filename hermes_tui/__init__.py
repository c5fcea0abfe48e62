"""Hermes: a self-improving personal AI agent for the terminal."""

__version__ = "0.1.0"

import logging as _logging

# Library code never prints: without a handler, Python's last-resort handler would write
# warnings to stderr and corrupt the full-screen app. Surfaces attach a file handler.
_logging.getLogger("hermes_tui").addHandler(_logging.NullHandler())
