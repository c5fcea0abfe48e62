"""Every key of the app, declared once: its keys, footer label, help text and palette entry.

The widgets' ``BINDINGS``, the footer, the /help card, the command palette and the key table of
docs/tui.md all derive from ``ACTIONS`` (cog writes the table; tests/test_docs.py checks it).

Keys are chosen to reach the app through tmux's default configuration, macOS Terminal and SSH:
F-keys, ctrl+letters that the terminal does not keep, and alt+digit. Terminals send alt+digit as
``ESC digit``; Textual maps those bytes to the characters macOS' Option layer types (``ESC 2`` to
``™``), so ``restore_alt_digits`` gives them back their meaning as alt+digit.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

from hermes_tui.tui.panes import PANES


@dataclass(frozen=True)
class Action:
    """One key binding: its scope, keys and words; the footer, help card, palette and bindings
    all read this table."""

    scope: str  # who binds it: "app", "chat" (the chat pane), "prompt", a pane ("skills", "memory",
    # "sessions"), a dialog ("approval", "confirm", "setup", "restore"), a list ("mcp", "permissions",
    # "rewind"), "transcript", "help" (the F1 card), "plan" (what to do with a plan)
    action: str  # the Textual action string
    keys: tuple[str, ...]  # Textual key names; the first is the main one
    label: str  # the footer's word
    help: str  # the /help and palette text (Markdown)
    show: bool = True  # in the footer
    priority: bool = False  # before the focused widget sees the key
    palette: bool = False  # offered in the command palette (app actions only)
    bound: bool = True  # False: Textual binds it already; listed for help only

    @property
    def key_text(self) -> str:
        """The keys as people write them: ``F2 / alt+1``."""
        return " / ".join(_display(key) for key in self.keys)

    def binding(self) -> Binding:
        return Binding(",".join(self.keys), self.action, self.label, show=self.show, priority=self.priority)


def _display(key: str) -> str:
    names = {"enter": "Enter", "escape": "Esc", "tab": "Tab", "up": "↑", "down": "↓",
             "pageup": "PgUp", "pagedown": "PgDn", "slash": "/"}
    if key in names:
        return names[key]
    if key.startswith("f") and key[1:].isdigit():
        return key.upper()
    return key


ACTIONS: tuple[Action, ...] = (
    *(Action("app", f"show_pane('{pane.name}')", pane.keys, pane.title, f"show the {pane.title} pane",
             priority=True, palette=True) for pane in PANES),
    Action("app", "command('help')", ("f1",), "Help", "the commands and keys (this card)", show=False),
    Action("app", "interrupt", ("ctrl+c",), "Cancel",
           "copy the selected text; else cancel the running turn; else press twice to quit",
           show=False, priority=True),
    Action("app", "quit", ("ctrl+q",), "Quit",
           "quit (the session summary is saved first; twice quits at once)", priority=True, palette=True),
    Action("app", "command_palette", ("ctrl+p",), "Palette", "the command palette", bound=False),
    Action("chat", "cancel_turn", ("escape",), "Cancel turn",
           "close the suggestions, else take back the last queued message, else cancel the running turn"),
    Action("chat", "toggle_tool_output", ("ctrl+o",), "Tool output",
           "unfold (again: fold) the last tool result; `Tab`/`shift+Tab` reach earlier ones, `Enter` unfolds them",
           show=False),
    Action("prompt", "submit", ("enter",), "Send",
           "send the message (while Hermes works it is queued and sent when the answer ends)"),
    Action("prompt", "newline", ("ctrl+j", "alt+enter", "shift+enter"), "Newline",
           "new line (`ctrl+j` works everywhere, also inside tmux; or end the line with `\\`)"),
    Action("prompt", "complete", ("tab",), "Complete", "complete a /command", show=False),
    Action("prompt", "history_previous", ("up",), "Previous", "previous prompt (from the first line)", show=False),
    Action("prompt", "history_next", ("down",), "Next", "next prompt (from the last line)", show=False),
    Action("prompt", "scroll_chat('up')", ("pageup",), "Scroll up", "scroll the conversation up a page",
           show=False),
    Action("prompt", "scroll_chat('down')", ("pagedown",), "Scroll down", "scroll the conversation down a page",
           show=False),
    Action("skills", "use", ("enter",), "Use", "Skills pane: use the skill in the chat (letters always filter)",
           show=False, bound=False),
    Action("skills", "edit", ("f6",), "Edit", "Skills pane: edit the SKILL.md in `$EDITOR`"),
    Action("skills", "versions", ("f7",), "Versions", "Skills pane: the skill's versions and the diff"),
    Action("skills", "accept", ("f8",), "Accept",
           "Skills pane: accept the pending proposal, merged into the file as it is (your lines stay; archived first)"),
    Action("skills", "restore", ("f9",), "Restore", "Skills pane: restore the previous version as a new one (asks first)"),
    Action("skills", "approve", ("ctrl+t",), "Approve", "Skills pane: approve the quarantined skill (this exact content; asks first)"),
    Action("skills", "delete", ("f10", "shift+delete"), "Delete", "Skills pane: delete the skill (asks first)"),
    Action("skills", "reload", ("ctrl+r",), "Reload", "Skills pane: re-read the skill files"),
    Action("skills", "move(1)", ("down",), "Next", "Skills pane: next skill (from the filter box too)", show=False),
    Action("skills", "move(-1)", ("up",), "Previous", "Skills pane: previous skill", show=False),
    Action("skills", "scroll_preview('up')", ("pageup",), "Scroll up",
           "Skills pane: scroll the preview (or the F7 diff) up a page, from the filter and the list too", show=False,
           priority=True),
    Action("skills", "scroll_preview('down')", ("pagedown",), "Scroll down",
           "Skills pane: scroll the preview (or the F7 diff) down a page", show=False, priority=True),
    Action("memory", "open", ("o",), "Open", "Memory pane: open the highlighted hit's session at that message"),
    Action("memory", "focus_search", ("slash",), "Search", "Memory pane: back to the search box"),
    Action("memory", "focus_hits", ("down",), "Results", "Memory pane: from the search box to the results",
           show=False),
    Action("memory", "edit_fact", ("f6",), "Edit", "Memory pane: edit the highlighted fact's file in `$EDITOR`"),
    Action("memory", "delete_fact", ("x", "delete"), "Forget", "Memory pane: forget the highlighted fact (asks first)"),
    Action("sessions", "open", ("o",), "Open", "Sessions pane: open the transcript (Enter too)"),
    Action("sessions", "resume", ("r",), "Resume", "Sessions pane: continue the session in the chat"),
    Action("sessions", "forget", ("x",), "Forget", "Sessions pane: delete the session for good (asks first)"),
    Action("mcp", "toggle_server", ("e",), "Enable/disable", "/mcp: enable or disable the selected MCP server"),
    Action("mcp", "approve", ("a",), "Approve",
           "/mcp: approve the selected server of the workspace's .mcp.json (shows what it runs, asks first)"),
    Action("mcp", "reconnect", ("r",), "Restart", "/mcp: restart the selected MCP server"),
    Action("mcp", "close", ("escape",), "Close", "/mcp: close the list"),
    Action("approval", "choose('once')", ("y",), "Once", "approval: allow this call once"),
    Action("approval", "choose('exact')", ("c",), "This · session",
           "approval: allow this exact command (or writes to this file) for the session"),
    Action("approval", "choose('session')", ("a",), "All · session",
           "approval: allow every call of this tool (all shell, all writes) for the session"),
    Action("approval", "choose('always')", ("w",), "Always here",
           "approval: allow this exact shell command from now on, in this workspace (`/permissions` revokes it)"),
    Action("approval", "choose('program')", ("p",), "Program here",
           "approval: allow any plain call of the command's program (`pytest …`) from now on, in this workspace; "
           "offered only for a command without shell syntax (`;`, `&&`, `|`, `$(…)`…)"),
    Action("approval", "choose('deny')", ("n", "escape"), "Deny", "approval: deny; the model is told so"),
    Action("help", "close", ("escape", "f1"), "Close", "help: close this card (↑ ↓ PgUp PgDn scroll it)"),
    Action("confirm", "confirm", ("y",), "Yes", "a yes/no question (delete, forget, restore): yes"),
    Action("confirm", "cancel", ("n", "escape"), "No", "a yes/no question: no, nothing changes"),
    Action("setup", "later", ("escape",), "Later", "setup: close it and keep the current settings"),
    Action("setup", "save", ("ctrl+s",), "Save", "setup: save the provider, model and key (the key to `.env`, 0600)"),
    Action("transcript", "close", ("escape", "q"), "Close", "transcript: back to where you were"),
    Action("transcript", "resume", ("r",), "Resume", "transcript: continue this session in the chat"),
    Action("transcript", "page('up')", ("pageup",), "Page up", "transcript: scroll up a page", show=False,
           priority=True),
    Action("transcript", "page('down')", ("pagedown",), "Page down", "transcript: scroll down a page", show=False,
           priority=True),
    Action("rewind", "select", ("enter",), "Pick", "/rewind: pick the highlighted checkpoint (what it restores is shown first)",
           show=False, bound=False),
    Action("rewind", "dismiss_none", ("escape",), "Close", "/rewind: close the list of checkpoints"),
    Action("restore", "choose('yes')", ("y",), "Restore",
           "/rewind, /undo: restore the files, keeping those changed since Hermes left them", show=False),
    Action("restore", "choose('all')", ("o",), "Overwrite",
           "/rewind, /undo: restore the files, overwriting those changed since", show=False),
    Action("restore", "choose('chat')", ("c",), "Chat only", "/undo: undo the conversation only, not the files",
           show=False),
    Action("restore", "choose('')", ("n", "escape"), "Cancel", "/rewind, /undo: change nothing"),
    Action("permissions", "revoke", ("x", "delete"), "Revoke", "/permissions: revoke the selected rule"),
    Action("permissions", "close", ("escape",), "Close", "/permissions: close the list"),
    Action("plan", "choose('carry')", ("y",), "Carry out",
           "after a plan-mode answer: leave plan mode and carry the plan out"),
    Action("plan", "choose('keep')", ("k", "escape"), "Keep planning",
           "after a plan-mode answer: stay in plan mode (type what to change)"),
    Action("plan", "choose('discard')", ("d",), "Discard", "after a plan-mode answer: leave plan mode; nothing is carried out"),
)


def bindings(scope: str) -> list[BindingType]:
    """The Textual bindings of one scope, for a widget's ``BINDINGS``."""
    return [action.binding() for action in ACTIONS if action.scope == scope and action.bound]


def in_scope(scope: str) -> list[Action]:
    return [action for action in ACTIONS if action.scope == scope]


def main_key(scope: str, action: str) -> str:
    """The first key of one action as people write it (``F8``), for text that names the key."""
    return _display(find(scope, action).keys[0])


def all_keys(scope: str, action: str) -> str:
    """Every key of one action, compactly (``n/Esc``), for a button that names them."""
    return "/".join(_display(key) for key in find(scope, action).keys)


def find(scope: str, action: str) -> Action:
    return next(a for a in ACTIONS if a.scope == scope and a.action == action)


ALT_DIGITS = "1234567890"


def restore_alt_digits() -> None:
    """Make Textual's parser report ``ESC <digit>`` as alt+digit (see the module docstring).

    Textual's table maps these sequences to WezTerm-on-macOS Option characters; without the
    entries the parser reads them as an escape-prefixed key, which is alt+digit.
    """
    from textual._ansi_sequences import ANSI_SEQUENCES_KEYS

    for digit in ALT_DIGITS:
        ANSI_SEQUENCES_KEYS.pop(f"\x1b{digit}", None)  # type: ignore[attr-defined]  # Textual types the table read-only; it is a dict
