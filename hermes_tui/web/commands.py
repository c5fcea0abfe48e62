"""The slash commands and keys of the dashboard: what ``/help`` shows, and what the page runs itself.

The page runs these (it finds their names in the help card the template draws from this table);
any other command line reaches ``/api/chat``, which refuses it with one line instead of sending it
to the model (``slash.split_command`` decides what is a command line, as in the terminal app).
"""

from __future__ import annotations

from hermes_tui.slash import SlashCommand, split_command

COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "", "show these commands and keys"),
    SlashCommand("compact", "[focus]", "summarise older turns to free the context window (optional focus)"),
    SlashCommand("new", "", "end this conversation (its summary is saved) and start a new session"),
)
BY_NAME = {command.name: command for command in COMMANDS}

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message (while Hermes works it is queued and sent when the answer ends)"),
    ("Shift+Enter", "a new line in the message"),
    ("//", "at the start of a message: send a line that begins with / (//etc sends /etc)"),
)


def unknown_command(text: str) -> str | None:
    """The one line that refuses ``text`` when it is a command line the page does not run, else None."""
    found = split_command(text, BY_NAME)
    if found is None:
        return None
    if found[0] in BY_NAME:
        return f"/{found[0]} is run by the page: not sent to the model."
    return (f"Unknown command /{found[0]}: not sent. /help lists the commands of the web; "
            "start with // to send a line that begins with / as a message.")
