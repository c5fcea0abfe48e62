"""What the Skills pane's keys do, mixed into ``SkillsPane`` (``skills_pane.py``): use, edit,
delete, versions, accept a proposal, restore a version, approve a quarantined skill. Each change
runs off the app thread (``workers.off_thread``) and is said in one notification.

An action key pressed before the list for the filter as typed has arrived waits for it
(``_waits_for_list``), so it acts on the skill the new list highlights.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.containers import VerticalScroll
from textual.widgets import DataTable

from hermes_tui.tui import actions
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.messages import EditSkill, UseSkill
from hermes_tui.tui.workers import off_thread

if TYPE_CHECKING:
    from hermes_tui.tui.skills_pane import SkillsPane

WAITING_ACTIONS: set[str] = set()  # actions kept while the first list loads (``_waits_for_list``)


def _waits_for_list(method: Callable[[SkillsPane], None]) -> Callable[[SkillsPane], None]:
    """An action whose key, pressed before the list for the filter as typed has arrived (F3 then
    F7 in a big library; ``short`` then F7 in one burst), is kept and run when it arrives, on the
    skill it highlights, instead of being dropped or acting on the list before."""
    name = method.__name__.removeprefix("action_")
    WAITING_ACTIONS.add(name)

    @functools.wraps(method)
    def run(pane: SkillsPane) -> None:
        if pane.up_to_date:
            method(pane)
        else:
            pane._waiting.append(name)

    return run


def key(action: str) -> str:
    """The key of a Skills pane action, as the action table has it."""
    return actions.main_key("skills", action)


class SkillActions:
    """The Skills pane's actions, for ``SkillsPane``."""

    def check_action(self: SkillsPane, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Skill actions need a highlighted skill; approve needs a quarantined one. Until the list
        for the filter as typed has arrived they are all on: a key pressed meanwhile waits for it."""
        if not self.up_to_date and action in WAITING_ACTIONS:
            return True
        held = self.selected_held
        if action == "approve":
            return True if held is not None and held.quarantined else None
        if action == "delete":
            return True if (held.quarantined if held is not None else self.selected is not None) else None
        if action in ("use", "edit", "versions", "accept", "restore"):
            return True if held is None and self.selected is not None else None
        return True

    @_waits_for_list
    def action_use(self: SkillsPane) -> None:
        if skill := self.selected:
            self.post_message(UseSkill(skill.name))

    @_waits_for_list
    def action_edit(self: SkillsPane) -> None:
        if skill := self.selected:
            self.post_message(EditSkill(skill.name))

    @_waits_for_list
    def action_delete(self: SkillsPane) -> None:
        held = self.selected_held
        name = held.name if held is not None else (self.selected.name if self.selected else None)
        if name is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._delete(name)

        question = f"Delete the skill “{name}”? Its folder and version history are removed from disk."
        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_reload(self: SkillsPane) -> None:
        self._load(self._query, reload=True)

    def action_move(self: SkillsPane, step: int) -> None:
        """Up/down move through the skills, from the filter box too."""
        focused = next((t for t in self.query(DataTable) if t.has_focus), None)
        table = focused or self.query_one("#skills-table", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + step)))

    @_waits_for_list
    def action_versions(self: SkillsPane) -> None:
        """F7 toggles the versions of the highlighted skill; highlighting another skill shows its
        preview again (the view is about one skill, and F8/F9 act on the highlighted one)."""
        skill = self.selected
        self._versions_of = None if skill is None or self._versions_of == skill.name else skill.name
        self._show_preview(skill)

    def action_scroll_preview(self: SkillsPane, direction: str) -> None:
        """PgUp/PgDn read the preview or the diff from anywhere in the pane (the focus stays)."""
        view = self.query_one("#skills-preview", VerticalScroll)
        if direction == "up":
            view.scroll_page_up(animate=False)
        else:
            view.scroll_page_down(animate=False)

    @_waits_for_list
    def action_accept(self: SkillsPane) -> None:
        skill = self.selected
        if skill is None:
            return
        pending = [v for v in self._manager.versions(skill.name) if v.kind == "pending"]
        if not pending:
            self.app.notify(f"{skill.name} has no pending proposal.", markup=False)
            return
        self._change(skill.name, "accept", pending[-1].label)

    @_waits_for_list
    def action_restore(self: SkillsPane) -> None:
        skill = self.selected
        if skill is None:
            return
        archived = [v for v in self._manager.versions(skill.name) if v.kind == "archived"]
        if not archived or archived[-1].number is None:
            self.app.notify(f"{skill.name} has no earlier version.", markup=False)
            return
        number = archived[-1].number

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._change(skill.name, "restore", number)

        self.app.push_screen(ConfirmScreen(f"Restore v{number} of “{skill.name}” as a new version? "
                                           "The current file is archived first.", confirm_label="Restore",
                                           danger=False), confirmed)

    def action_approve(self: SkillsPane) -> None:
        held = self.selected_held
        if held is not None and held.quarantined and held.name:
            name = held.name

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self._change(name, "approve", None)

            self.app.push_screen(ConfirmScreen(
                f"Approve the quarantined skill “{name}”? The skill guard flagged it (the preview says why); "
                "approved, this exact content is offered to the model like any skill.",
                confirm_label="Approve", danger=False), confirmed)

    def _change(self: SkillsPane, name: str, what: str, argument: object) -> None:
        def job() -> int:
            """How many places a merge found both sides changing (0 but for an accept)."""
            if what == "accept":
                return self._manager.accept(name, str(argument)).overlaps
            if what == "restore":
                self._manager.restore(name, int(str(argument)))
            else:
                self._manager.approve(name)
            return 0

        off_thread(self, job, lambda overlaps, error: self._changed(name, what, error, overlaps or 0),
                   what=f"{what} of skill {name}", group="skills-change")

    def _changed(self: SkillsPane, name: str, what: str, error: str | None, overlaps: int = 0) -> None:
        done = {"accept": "Accepted the proposal for", "restore": "Restored", "approve": "Approved"}[what]
        if error is None and overlaps:
            self.app.notify(f"{done} {name}. It and your edits changed the same lines in {overlaps} "
                            f"place{'s' if overlaps != 1 else ''}: both were kept ({key('versions')} shows them, "
                            f"{key('edit')} edits).",
                            markup=False, timeout=10)
        elif error is None:
            self.app.notify(f"{done} {name}.", markup=False)
        else:
            self.app.notify(f"Could not change {name}: {error}", severity="error", markup=False)
        self._previewed = ""
        if self.is_attached:
            self.refresh_data()

    def _delete(self: SkillsPane, name: str) -> None:
        off_thread(self, lambda: self._manager.delete(name), lambda _, error: self._deleted(name, error),
                   what=f"deleting skill {name}", group="skills-delete")

    def _deleted(self: SkillsPane, name: str, error: str | None) -> None:
        if error is None:
            self.app.notify(f"Deleted the skill {name}.", markup=False)
        else:
            self.app.notify(f"Could not delete {name}: {error}", severity="error", markup=False)
        if self.is_attached:
            self.refresh_data()
