"""A dialog of one keyboard-driven list with notes under it: ``/mcp`` and ``/permissions``.

Subclasses declare their title, the ids of their notes and their keys (``actions.bindings``), fill
the list with ``show_options`` and react to the highlighted entry; Esc closes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.textsafe import printable
from hermes_tui.tui.dismiss_once import DismissOnce


class ListDialog(DismissOnce, ModalScreen[None]):
    DEFAULT_CSS = """
    ListDialog {
        align: center middle;
    }
    ListDialog > #dialog {
        width: 96;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $accent 60%;
        background: $surface;
    }
    ListDialog #dialog-list {
        height: auto;
        max-height: 20;
    }
    ListDialog .dialog-note {
        margin-top: 1;
        color: $text-muted;
    }
    """

    HEADING = ""
    NOTES: tuple[str, ...] = ()  # the ids of the lines under the list, top to bottom

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.HEADING, id="dialog-title")
            yield OptionList(id="dialog-list", markup=False)
            for note in self.NOTES:
                yield Static("", id=note, classes="dialog-note", markup=False)
        yield Footer()  # the dialog's keys, not those of the screen underneath

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @property
    def highlighted(self) -> int | None:
        return self.query_one(OptionList).highlighted

    def show_options(self, labels: list[str], ids: list[str] | None = None) -> None:
        """Replace the entries (hostile text made printable), keeping the highlight where it was."""
        listing = self.query_one(OptionList)
        index = listing.highlighted
        listing.clear_options()
        listing.add_options([Option(Content(printable(label)), id=ids[n] if ids else None)
                             for n, label in enumerate(labels)])
        if labels:
            listing.highlighted = min(index or 0, len(labels) - 1)

    def note(self, note_id: str, text: str) -> None:
        self.query_one(f"#{note_id}", Static).update(Content(printable(text)))

    def action_close(self) -> None:
        self.dismiss(None)
