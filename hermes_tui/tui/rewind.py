"""/undo and /rewind with files: the dialogs that show a restore and ask, and what the answers do.

``RestoreScreen`` shows what restoring a checkpoint writes, recreates and deletes, and which files
someone changed since (``RestorePlan.conflicts``); it never restores those without the user's
explicit choice. ``RewindScreen`` picks a checkpoint of the workspace. The git work runs on a
thread (``workers.in_thread``), never on the event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.agent.checkpoints import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    RestorePlan,
    describe_plan,
    headline,
)
from hermes_tui.textsafe import printable
from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.tui.app import HermesApp

Choice = Literal["all", "keep", "chat"]
"""``all``: restore every file; ``keep``: all but those changed since; ``chat``: the conversation only."""


class RestoreScreen(DismissOnce, ModalScreen["Choice | None"]):
    """The plan and the choices; Cancel has the focus, so a stray Enter changes nothing."""

    DEFAULT_CSS = """
    RestoreScreen { align: center middle; }
    RestoreScreen > #restore-dialog {
        width: 84; max-width: 95%; height: auto; max-height: 90%;
        padding: 1 2; border: thick $warning 60%; background: $surface;
    }
    RestoreScreen #restore-title { text-style: bold; margin-bottom: 1; }
    RestoreScreen #restore-conflicts { color: $warning; margin-top: 1; }
    RestoreScreen #restore-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    RestoreScreen #restore-buttons Button { margin-left: 1; }
    """

    BINDINGS = actions.bindings("restore")  # declared once, in actions.ACTIONS

    def __init__(self, plan: RestorePlan, *, undo: bool) -> None:
        super().__init__()
        self.plan = plan
        self.undo = undo  # /undo: the conversation is undone too, or alone

    def compose(self) -> ComposeResult:
        plan = self.plan
        title = ("Undo the last turn: its files too?" if self.undo
                 else f"Rewind the files to before checkpoint {plan.target.number}?")
        lines = [printable(line) for line in describe_plan(plan)]
        conflict_lines = [line for line in lines if line.startswith("Changed since")]
        with Vertical(id="restore-dialog"):
            yield Static(title, id="restore-title", markup=False)
            yield Static("\n".join(line for line in lines if line not in conflict_lines), id="restore-plan",
                         markup=False)
            if plan.conflicts:
                yield Static(f"⚠ {len(plan.conflicts)} of these files changed after Hermes left them: "
                             f"{printable(', '.join(sorted(plan.conflicts)))}. Restoring them overwrites "
                             "those changes.", id="restore-conflicts", markup=False)
            with Horizontal(id="restore-buttons"):
                if plan.conflicts:
                    if plan.safe_actions:
                        yield Button(f"Restore, keep changed ({_key('yes')})", variant="primary", id="restore-keep")
                    yield Button(f"Overwrite them too ({_key('all')})", variant="error", id="restore-all")
                else:
                    yield Button(f"Restore files ({_key('yes')})", variant="primary", id="restore-all")
                if self.undo:
                    yield Button(f"Conversation only ({_key('chat')})", id="restore-chat")
                yield Button(f"Cancel ({_key('')})", id="restore-cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#restore-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose((event.button.id or "").removeprefix("restore-").replace("cancel", ""))

    def action_choose(self, choice: str) -> None:
        """``y`` is the safe restore (keeps changed files); overwriting takes ``o`` or its button."""
        plan = self.plan
        if choice == "yes":
            choice = "keep" if plan.conflicts else "all"
        allowed = {"", "all"} | ({"keep"} if plan.conflicts and plan.safe_actions else set())
        if self.undo:
            allowed.add("chat")
        if choice in allowed:
            self.dismiss(choice or None)


class RewindScreen(DismissOnce, ModalScreen["int | None"]):
    """The workspace's checkpoints, newest first; Enter picks one, Esc closes."""

    DEFAULT_CSS = """
    RewindScreen { align: center middle; }
    RewindScreen > #rewind-dialog {
        width: 100; max-width: 95%; height: auto; max-height: 80%;
        padding: 1 2; border: thick $primary 60%; background: $surface;
    }
    RewindScreen #rewind-title { text-style: bold; margin-bottom: 1; }
    RewindScreen OptionList { height: auto; max-height: 20; }
    """

    BINDINGS = actions.bindings("rewind")

    def __init__(self, checkpoints: list[Checkpoint]) -> None:
        super().__init__()
        self.checkpoints = checkpoints

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog"):
            yield Static(f"Rewind the files to before which checkpoint? ({actions.main_key('rewind', 'select')} picks, "
                         f"{actions.main_key('rewind', 'dismiss_none')} closes)",
                         id="rewind-title", markup=False)
            yield OptionList(*[Option(printable(headline(c)), id=str(c.number)) for c in reversed(self.checkpoints)],
                             id="rewind-list", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#rewind-list", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class FileRewinder:
    """What /undo and /rewind do with files, for one app."""

    def __init__(self, app: HermesApp) -> None:
        self.app = app
        self._store: CheckpointStore | None = None

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = CheckpointStore(self.app.config.home, self.app.config.workspace)
        return self._store

    async def undo_plan(self, session_id: int, message_id: int) -> RestorePlan | None:
        """The plan that undoes the files of the turn begun by this message; None when it changed none."""
        store = self.store
        if not store.available:
            return None

        def plan() -> RestorePlan | None:
            checkpoint = store.for_message(session_id, message_id)
            return store.plan(checkpoint.number) if checkpoint is not None else None

        try:
            found = await in_thread(self.app, plan)
        except CheckpointError as exc:
            await self.app.chat.add_notice(f"{exc} Only the conversation can be undone.", "error")
            return None
        return found if found is not None and found.actions else None

    def ask(self, plan: RestorePlan, *, undo: bool, then: Callable[[Choice | None], Awaitable[None]]) -> None:
        """Show the plan; ``then`` gets the choice (None: cancelled) in a worker."""

        def answered(choice: Choice | None) -> None:
            self.app.run_worker(then(choice), group="rewind")

        self.app.push_screen(RestoreScreen(plan, undo=undo), answered)

    async def restore(self, plan: RestorePlan, choice: Choice) -> str | None:
        """Carry out the choice: the line saying what happened, or None when it failed (said in the chat)."""
        store = self.store
        try:
            result = await in_thread(self.app, store.restore, plan, overwrite=choice == "all",
                                     session_id=self.app.session.session_id)
        except CheckpointError as exc:
            await self.app.chat.add_notice(str(exc), "error")
            return None
        line = f"Restored {len(result.restored)} file(s) to how they were before checkpoint {plan.target.number}."
        if result.kept:
            line += f" Kept the changed version of {printable(', '.join(result.kept))}."
        if result.checkpoint is not None:
            line += f" The restore is checkpoint {result.checkpoint.number}: /rewind undoes it."
        return line

    async def rewind(self) -> None:
        """/rewind: pick a checkpoint, see the plan, choose."""
        store = self.store
        if not store.available:
            await self.app.chat.add_notice("git is not installed, so there are no checkpoints to rewind to.", "error")
            return
        checkpoints = await in_thread(self.app, store.list)
        if not checkpoints:
            await self.app.chat.add_notice("No checkpoints yet: they are taken when a turn changes files.")
            return

        async def picked(number: int | None) -> None:
            if number is None:
                return
            try:
                plan = await in_thread(self.app, store.plan, number)
            except CheckpointError as exc:
                await self.app.chat.add_notice(str(exc), "error")
                return
            if not plan.actions:
                await self.app.chat.add_notice(f"The files already match how they were before checkpoint {number}.")
                return

            async def chosen(choice: Choice | None) -> None:
                if choice is None:
                    await self.app.chat.add_notice("Nothing restored.")
                elif (line := await self.restore(plan, choice)) is not None:
                    await self.app.chat.add_notice(line)

            self.ask(plan, undo=False, then=chosen)

        def answered(number: int | None) -> None:
            self.app.run_worker(picked(number), group="rewind")

        self.app.push_screen(RewindScreen(checkpoints), answered)


def _key(choice: str) -> str:
    """The key a restore button names, from the action table."""
    return actions.main_key("restore", f"choose('{choice}')")
