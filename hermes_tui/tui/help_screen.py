"""The /help and F1 card as a screen of its own: asking for help twice no longer leaves two long
cards in the chat, and the conversation is where it was when the card closes."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer

from hermes_tui.tui import actions
from hermes_tui.tui.answer import HelpText
from hermes_tui.tui.dismiss_once import DismissOnce


class HelpScreen(DismissOnce, ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > #help-body {
        width: 100;
        max-width: 96%;
        height: 90%;
        padding: 0 1;
        border: thick $accent 60%;
        background: $surface;
    }
    """

    BINDINGS = actions.bindings("help")

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self._markdown = markdown

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):  # ↑ ↓ PgUp PgDn Home End scroll it
            yield HelpText(self._markdown, classes="help")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)
