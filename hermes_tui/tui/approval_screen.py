"""The question asked before run_bash / write_file: the command, or the path and the start of
the content; allow once (y), allow for this session (a), deny (n or Esc)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from hermes_tui.tui.approval import DENY

PREVIEW_LINES = 12


def describe(name: str, arguments: dict[str, Any], workspace: str) -> tuple[str, str]:
    """(question, details) for a call: the command, or the path and the start of the content."""
    if name == "run_bash":
        return f"Run this command in {workspace}?", str(arguments.get("command", ""))
    if name == "write_file":
        content = str(arguments.get("content", ""))
        lines = content.splitlines()
        preview = "\n".join(lines[:PREVIEW_LINES])
        if len(lines) > PREVIEW_LINES:
            preview += f"\n… ({len(lines) - PREVIEW_LINES} more lines)"
        size = f"{len(content.encode()):,} bytes"
        return f"Write {arguments.get('path', '?')} ({size}) in {workspace}?", preview or "(empty file)"
    return f"Allow {name}?", "\n".join(f"{k}: {v}" for k, v in arguments.items())


class ApprovalScreen(ModalScreen[str]):
    """Dismisses with "once", "session" or "deny" (Esc denies)."""

    # Here rather than in hermes.tcss: parsed when first shown, not at start-up.
    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
        background: $background 60%;
    }
    #approval-dialog {
        width: 84;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $warning 70%;
        background: $surface;
    }
    #approval-question {
        margin: 1 0;
    }
    #approval-details {
        height: auto;
        max-height: 16;
        padding: 0 1;
        background: $panel;
        color: $foreground;
        overflow-y: auto;
    }
    #approval-buttons {
        height: auto;
        margin-top: 1;
        align-horizontal: right;
    }
    #approval-buttons Button {
        margin-left: 1;
    }
    """

    BINDINGS = [
        Binding("y", "choose('once')", "Allow once"),
        Binding("a", "choose('session')", "Allow for this session"),
        Binding("n,escape", "choose('deny')", "Deny"),
    ]

    def __init__(self, name: str, arguments: dict[str, Any], workspace: str) -> None:
        super().__init__(classes="approval")
        self.tool_name = name
        self.question, self.details = describe(name, arguments, workspace)

    def compose(self) -> ComposeResult:
        with Vertical(id="approval-dialog"):
            yield Static(Content.assemble(("Approval needed · ", "$text-warning bold"), (self.tool_name, "bold")),
                         id="approval-title")
            yield Static(self.question, markup=False, id="approval-question")
            yield Static(self.details, markup=False, id="approval-details")
            with Horizontal(id="approval-buttons"):
                yield Button(Content("Allow once (y)"), id="once", variant="primary")
                yield Button(Content("Allow for this session (a)"), id="session")
                yield Button(Content("Deny (n/Esc)"), id="deny", variant="error")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()  # a stray Enter never runs anything

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or DENY)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)
