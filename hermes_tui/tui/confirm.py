"""ConfirmScreen: a yes/no modal, so destructive keys (delete a skill) always ask first."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce


class ConfirmScreen(DismissOnce, ModalScreen[bool]):
    """Dismisses with True for yes (``y`` or the confirm button), False for no (``n``, ``escape``).

    The cancel button has the focus at first, so a stray Enter never destroys anything.
    """

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > #confirm-dialog {
        width: 64;
        max-width: 90%;
        height: auto;
        padding: 1 2;
        border: thick $error 60%;
        background: $surface;
    }
    ConfirmScreen > #confirm-dialog.-safe {
        border: thick $accent 60%;
    }
    ConfirmScreen #confirm-question {
        margin-bottom: 1;
    }
    ConfirmScreen #confirm-buttons {
        height: auto;
        align-horizontal: right;
    }
    ConfirmScreen #confirm-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = actions.bindings("confirm")  # declared once, in actions.ACTIONS

    def __init__(self, question: str, *, confirm_label: str = "Delete", cancel_label: str = "Cancel",
                 danger: bool = True) -> None:
        """``danger`` False: nothing is lost by yes (a restore archives first), so no red button."""
        super().__init__()
        self._question = question
        self._confirm_label = confirm_label
        self._cancel_label = cancel_label
        self._danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="" if self._danger else "-safe"):
            # markup=False: the question may quote names or text the user wrote.
            yield Static(self._question, id="confirm-question", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(self._confirm_label, variant="error" if self._danger else "primary", id="confirm-yes")
                yield Button(self._cancel_label, id="confirm-no")
        yield Footer()  # the dialog's keys, not those of the screen underneath

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
