"""PlanScreen: after a plan-mode answer, what to do with the plan (carry it out, keep planning, discard)."""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce

PlanChoice = Literal["carry", "keep", "discard"]
CHOICES: tuple[PlanChoice, ...] = ("carry", "keep", "discard")


class PlanScreen(DismissOnce, ModalScreen[PlanChoice]):
    """Dismisses with the choice; "keep" has the focus, so a stray Enter changes nothing."""

    DEFAULT_CSS = """
    PlanScreen {
        align: center middle;
    }
    PlanScreen > #plan-dialog {
        width: 72;
        max-width: 90%;
        height: auto;
        padding: 1 2;
        border: thick $accent 60%;
        background: $surface;
    }
    PlanScreen #plan-question {
        margin-bottom: 1;
    }
    PlanScreen #plan-buttons {
        height: auto;
        align-horizontal: right;
    }
    PlanScreen #plan-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = actions.bindings("plan")  # declared once, in actions.ACTIONS

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-dialog"):
            yield Static("The plan is the answer above. Carry it out now (plan mode ends and Hermes "
                         "may run and write), keep planning, or discard it?", id="plan-question")
            with Horizontal(id="plan-buttons"):
                for choice in CHOICES:
                    action = actions.find("plan", f"choose('{choice}')")
                    yield Button(f"{action.label} ({actions.all_keys('plan', action.action)})",
                                 variant="primary" if choice == "carry" else "default", id=f"plan-{choice}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#plan-keep", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice = (event.button.id or "").removeprefix("plan-")
        self.action_choose(choice if choice in CHOICES else "keep")

    def action_choose(self, choice: str) -> None:
        self.dismiss(next((c for c in CHOICES if c == choice), "keep"))
