"""What the small subcommands (``checkpoints``, ``permissions``) write: one line at a time, made
printable first, since workspace paths, prompts and rule texts may hold control characters; and
the two exit codes every command line shares (``headless`` adds the turn's own)."""

from __future__ import annotations

import sys

from hermes_tui.textsafe import printable

EXIT_OK, EXIT_ERROR = 0, 1


def say(line: str) -> None:
    sys.stdout.write(printable(line) + "\n")


def fail(message: str) -> int:
    """One ``hermes:`` line on stderr; the exit code to return."""
    sys.stderr.write(f"hermes: {printable(message)}\n")
    return EXIT_ERROR
