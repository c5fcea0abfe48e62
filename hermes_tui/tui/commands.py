"""The slash commands: their table, parsing and completion (no Textual; the app runs them)."""

from __future__ import annotations

from dataclasses import dataclass

from hermes_tui.slash import SlashCommand, as_message, split_command  # noqa: F401 - as_message: the app sends with it

COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "", "show the commands and keys"),
    SlashCommand("new", "", "end this session (its summary is saved) and start a new one"),
    SlashCommand("model", "[provider:]model", "show the model, or switch to another one"),
    SlashCommand("skills", "[filter]", "open the Skills pane, optionally filtered"),
    SlashCommand("memory", "<query>", "search every past message in the Memory pane"),
    SlashCommand("remember", "[project:] <fact>", "keep a fact about you (or, with project:, this workspace) for future sessions"),
    SlashCommand("image", "[path | clear]", "attach an image (PNG, JPEG, GIF, WebP) to your next message; "
                 "list or drop what is attached (a pasted image path attaches too)"),
    SlashCommand("learn", "", "distil the last turn into a skill now"),
    SlashCommand("plan", "", "plan mode on/off: read-only tools only, the answer is a plan; then carry it out, keep planning or discard"),
    SlashCommand("compact", "[focus]", "summarise older turns to free the context window (optional focus)"),
    SlashCommand("sessions", "", "open the Sessions pane"),
    SlashCommand("resume", "<id>", "continue an earlier session in the chat"),
    SlashCommand("undo", "", "take the last turn out of the conversation (memory keeps it, marked undone); "
                 "asks first to restore the files it changed"),
    SlashCommand("rewind", "", "put the workspace's files back as they were before an earlier turn (pick it; asks first)"),
    SlashCommand("retry", "", "send your last message again; the last answer is left out of what is sent"),
    SlashCommand("cost", "", "tokens in, out and cached, and the cost, per model for this session"),
    SlashCommand("context", "[approve N]", "the fixed prompt part by part with token counts; approve a held-back instruction file"),
    SlashCommand("copy", "[N]", "copy the last answer, or its Nth code block (OSC 52, else a file)"),
    SlashCommand("export", "[path]", "write this session as a Markdown transcript"),
    SlashCommand("setup", "", "provider, key, model and endpoint (checks the endpoint)"),
    SlashCommand("mcp", "", "the MCP servers: status, tools, schema tokens; enable, disable, approve"),
    SlashCommand("jobs", "[N | stop N]", "the background jobs: list them, show job N's latest output, or stop it"),
    SlashCommand("hooks", "", "the hooks of the settings files: what runs, from where, and whether approved"),
    SlashCommand("permissions", "", "what runs without asking: this session's rules and this workspace's lasting ones; revoke them"),
    SlashCommand("forget", "[id]", "delete a session for good (this one by default); asks first"),
    SlashCommand("exit", "", "save the session summary and quit"),
)
BY_NAME = {command.name: command for command in COMMANDS}


@dataclass(frozen=True)
class Invocation:
    """A typed slash command split into its name and its argument."""

    name: str  # without the slash; may be unknown
    argument: str

    @property
    def command(self) -> SlashCommand | None:
        return BY_NAME.get(self.name)


def parse(text: str) -> Invocation | None:
    """A command line (``/name rest``), or None for a chat message (the rule: ``slash.split_command``).
    An unknown name that is not a path is still an invocation: the runner keeps it in the prompt."""
    found = split_command(text, BY_NAME)
    return Invocation(*found) if found is not None else None


def completions(text: str) -> list[SlashCommand]:
    """Commands whose name starts with what is typed, while the command word is being typed."""
    if not text.startswith("/") or text.startswith("//") or " " in text or "\n" in text:
        return []
    prefix = text[1:].lower()
    return [command for command in COMMANDS if command.name.startswith(prefix)]


SLASH_ESCAPE = "start a message with `//` to send a line that begins with `/` (`//etc` sends `/etc`); " \
    "a first word that looks like a path (`/var/log/syslog …`) is sent as a message too"


def help_markdown(keys: list[tuple[str, str]]) -> str:
    """The /help text: every command, then the keys (``keys`` as (keys, Markdown help))."""
    lines = ["**Commands**", ""]
    lines += [f"- `{c.title}` — {c.help}" for c in COMMANDS]
    lines += [f"- {SLASH_ESCAPE}", "", "**Keys**", ""]
    lines += [f"- `{key}` — {what}" for key, what in keys]
    return "\n".join(lines)
