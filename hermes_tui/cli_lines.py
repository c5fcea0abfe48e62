"""The ``hermes:`` lines the command lines write (the subcommands, a headless turn's own notes),
one at a time and made printable first, since workspace paths, prompts, rule texts and error
messages may hold control characters; and the two exit codes every command line shares
(``headless`` adds a turn's own)."""

from __future__ import annotations

import sys

from hermes_tui.textsafe import printable

EXIT_OK, EXIT_ERROR = 0, 1


def say(line: str) -> None:
    sys.stdout.write(printable(line) + "\n")


def warn(message: str) -> None:
    """One ``hermes:`` line on stderr."""
    sys.stderr.write(f"hermes: {printable(message)}\n")


def fail(message: str) -> int:
    """One ``hermes:`` line on stderr; the exit code to return."""
    warn(message)
    return EXIT_ERROR
