"""SkillsPane: browse, filter, preview, use, edit, version and delete skills; see what is held back.

Typing always filters: letters (and Backspace) never run actions, whichever table has focus
(they are sent to the filter box). Actions use Enter, F-keys and ctrl keys the filter box does not
use; PgUp/PgDn scroll the preview from anywhere in the pane. Below the skills, a second table lists
what the library does not offer — quarantined skills with the guard's reason (ctrl+t approves that
exact content, F10 deletes) and skipped files with theirs. F7 shows the highlighted skill's
versions and the diff of its newest pending proposal as F8 would merge it, or of its last change
(F9 restores the version before it); highlighting another skill ends it. An action key pressed
before the first list has loaded runs when it arrives.

The preview is its own component (``skill_preview``). Skill files are read, and changed, in
thread workers (``workers.off_thread``), each change said in one notification; tables are rebuilt
on the app thread. Table cells are Rich ``Text`` objects: a plain string cell would be
parsed as markup, and descriptions are written by a model or a stranger.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.content import Content
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static

from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import HeldBack, SkillManager
from hermes_tui.skills.schema import Skill
from hermes_tui.tui import actions
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.messages import EditSkill, UseSkill
from hermes_tui.tui.skill_preview import SkillPreview, key
from hermes_tui.tui.transcript import printable
from hermes_tui.tui.workers import off_thread

SEARCH_LIMIT = 200
NAME_WIDTH_MAX = 28
USES_WIDTH = 4
VERSION_WIDTH = 4
DESCRIPTION_WIDTH_MIN = 12
HELD_ROWS = 5  # rows of the held-back table shown before it scrolls


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


class SkillsPane(Widget):
    """Filter box, skills table, held-back table and Markdown preview."""

    DEFAULT_CSS = """
    SkillsPane {
        height: 1fr;
        layout: vertical;
    }
    SkillsPane > #skills-status {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    SkillsPane > #skills-table {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-gutter: stable;
    }
    SkillsPane > #skills-held {
        overflow-x: hidden;
        border-top: solid $warning 40%;
    }
    SkillsPane > #skills-held.-empty {
        display: none;
    }
    SkillsPane > #skills-preview {
        height: 1fr;
        border-top: solid $primary 40%;
    }
    """

    BINDINGS = actions.bindings("skills")  # declared once, in actions.ACTIONS

    def __init__(self, *, memory: MemoryStore, skills: SkillManager, **widget_kwargs: Any) -> None:
        super().__init__(**widget_kwargs)
        del memory  # every pane takes both stores; this one only needs the skills
        self._manager = skills
        self._skills: list[Skill] = []
        self._held: list[HeldBack] = []
        self._query = ""
        self._table_width = 0
        self._loaded = False  # the first list has arrived
        self._waiting: list[str] = []  # action keys pressed before it did, run when it arrives

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Filter skills: type what you want to do", id="skills-filter", select_on_focus=False)
        yield Static(id="skills-status")
        table: DataTable[Text] = DataTable(id="skills-table", cursor_type="row", zebra_stripes=True)
        yield table
        held: DataTable[Text] = DataTable(id="skills-held", cursor_type="row", classes="-empty")
        yield held
        yield SkillPreview(self._manager, id="skills-preview")

    def on_mount(self) -> None:
        self.refresh_data()

    # -- public API

    def refresh_data(self) -> None:
        """Re-read the skills for the current filter (files may have changed on disk)."""
        self._load(self.query_one("#skills-filter", Input).value)

    def focus_main(self) -> None:
        self.screen.set_focus(self.query_one("#skills-filter", Input))  # at once, not after queued keys

    def set_filter(self, text: str) -> None:
        """Show the skills matching ``text`` (the ``/skills filter`` command)."""
        box = self.query_one("#skills-filter", Input)
        if box.value == text:
            self.refresh_data()
        else:
            box.value = text  # Input.Changed reloads

    @property
    def up_to_date(self) -> bool:
        """Whether the list shown is the one for the filter as typed (no load on its way)."""
        boxes = self.query("#skills-filter")
        return self._loaded and bool(boxes) and self._query == boxes.first(Input).value

    def _mounted_table(self, selector: str) -> DataTable[Text] | None:
        """One of the pane's tables; None while the pane is still composing (a key or a wait may
        read the selection that early)."""
        try:
            return self.query_one(selector, DataTable)
        except NoMatches:
            return None

    @property
    def selected(self) -> Skill | None:
        """The highlighted skill, if any."""
        table = self._mounted_table("#skills-table")
        row = table.cursor_row if table is not None else -1
        return self._skills[row] if 0 <= row < len(self._skills) else None

    @property
    def selected_held(self) -> HeldBack | None:
        """The highlighted quarantined or skipped file, when that table has focus."""
        table = self._mounted_table("#skills-held")
        if table is None or not table.has_focus:
            return None
        row = table.cursor_row
        return self._held[row] if 0 <= row < len(self._held) else None

    @property
    def preview(self) -> SkillPreview:
        return self.query_one("#skills-preview", SkillPreview)

    # -- the keys (a key pressed before the list for the filter as typed arrived waits for it)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
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
    def action_use(self) -> None:
        if skill := self.selected:
            self.post_message(UseSkill(skill.name))

    @_waits_for_list
    def action_edit(self) -> None:
        if skill := self.selected:
            self.post_message(EditSkill(skill.name))

    @_waits_for_list
    def action_delete(self) -> None:
        held = self.selected_held
        name = held.name if held is not None else (self.selected.name if self.selected else None)
        if name is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._delete(name)

        question = f"Delete the skill “{name}”? Its folder and version history are removed from disk."
        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_reload(self) -> None:
        self._load(self._query, reload=True)

    def action_move(self, step: int) -> None:
        """Up/down move through the skills, from the filter box too."""
        focused = next((t for t in self.query(DataTable) if t.has_focus), None)
        table = focused or self.query_one("#skills-table", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + step)))

    @_waits_for_list
    def action_versions(self) -> None:
        """F7 toggles the versions of the highlighted skill; highlighting another skill shows its
        preview again (the view is about one skill, and F8/F9 act on the highlighted one)."""
        self.preview.toggle_versions(self.selected)

    def action_scroll_preview(self, direction: str) -> None:
        """PgUp/PgDn read the preview or the diff from anywhere in the pane (the focus stays)."""
        self.preview.page(direction)

    @_waits_for_list
    def action_accept(self) -> None:
        skill = self.selected
        if skill is None:
            return
        pending = [v for v in self._manager.versions(skill.name) if v.kind == "pending"]
        if not pending:
            self.app.notify(f"{skill.name} has no pending proposal.", markup=False)
            return
        self._change(skill.name, "accept", pending[-1].label)

    @_waits_for_list
    def action_restore(self) -> None:
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

    def action_approve(self) -> None:
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

    def _change(self, name: str, what: str, argument: object) -> None:
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

    def _changed(self, name: str, what: str, error: str | None, overlaps: int = 0) -> None:
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
        if self.is_attached:
            self.preview.outdated()
            self.refresh_data()

    def _delete(self, name: str) -> None:
        off_thread(self, lambda: self._manager.delete(name), lambda _, error: self._deleted(name, error),
                   what=f"deleting skill {name}", group="skills-delete")

    def _deleted(self, name: str, error: str | None) -> None:
        if error is None:
            self.app.notify(f"Deleted the skill {name}.", markup=False)
        else:
            self.app.notify(f"Could not delete {name}: {error}", severity="error", markup=False)
        if self.is_attached:
            self.refresh_data()

    # -- loading

    def _load(self, query: str, reload: bool = False) -> None:
        def job() -> tuple[list[Skill], list[HeldBack]]:
            if reload:
                self._manager.reload()
            skills = self._manager.search(query, limit=SEARCH_LIMIT) if query.strip() else self._manager.list()
            return skills, self._manager.held_back()

        def then(found: tuple[list[Skill], list[HeldBack]] | None, error: str | None) -> None:
            skills, held = found or ([], [])  # the manager skips bad files; an error only keeps the pane alive
            self._show(query, skills, held, error)

        off_thread(self, job, then, what="listing skills", group="skills-load", exclusive=True)

    def _show(self, query: str, skills: list[Skill], held: list[HeldBack], error: str | None) -> None:
        if not self.is_attached:
            return
        same_query = query == self._query
        keep = self._cursor_place() if same_query else None
        self._query = query
        self._skills = skills
        self._render_table(keep)
        self._show_held(held)
        self._show_status(query, error)
        self.preview.show(self.selected)
        self._loaded = True
        self.refresh_bindings()
        if self.up_to_date:  # a list for an older filter leaves the keys waiting for the newest
            waiting, self._waiting = self._waiting, []
            for action in waiting:
                self.call_later(self.run_action, action)

    def _show_status(self, query: str, error: str | None) -> None:
        count = len(self._skills)
        held = f" · {len(self._held)} held back (below)" if self._held else ""
        if error is not None:
            status = Content.assemble(("Could not read the skills: ", "$text-error"), error)
        elif query.strip() and not count:
            status = Content.assemble("No skill matches “", printable(query), "”")
        elif query.strip():
            status = Content.assemble(f"{count} matching “", printable(query), "”, best first")
        elif not count:
            status = Content("No skills yet: Hermes writes one after it solves a multi-step task." + held)
        else:
            status = Content(f"{count} skill{'s' if count != 1 else ''}, most used first{held}")
        self.query_one("#skills-status", Static).update(status)

    def _cursor_place(self) -> tuple[str, int] | None:
        """The highlighted skill's name and row, to put the cursor back after a rebuild."""
        skill = self.selected
        return (skill.name, self.query_one("#skills-table", DataTable).cursor_row) if skill else None

    def _render_table(self, keep: tuple[str, int] | None) -> None:
        """Rebuild the rows; the cursor returns to ``keep``'s skill, or its row if it is gone."""
        table = self.query_one("#skills-table", DataTable)
        width = table.scrollable_content_region.width
        self._table_width = width
        name_width = min(NAME_WIDTH_MAX, max([5, *(len(s.name) for s in self._skills)]))
        padding = 2 * table.cell_padding
        rest = width - (name_width + USES_WIDTH + VERSION_WIDTH) - 4 * padding
        table.clear(columns=True)
        table.add_column("Skill", width=name_width, key="name")
        table.add_column("Uses", width=USES_WIDTH, key="uses")
        table.add_column("Ver", width=VERSION_WIDTH, key="version")
        table.add_column("Description", width=max(DESCRIPTION_WIDTH_MIN, rest), key="description")
        for skill in self._skills:
            table.add_row(
                Text(skill.name, no_wrap=True, overflow="ellipsis"),
                Text(str(skill.use_count).rjust(USES_WIDTH)),
                Text(f"v{skill.version}"),
                Text(printable(skill.description), no_wrap=True, overflow="ellipsis"),
                key=skill.name,
            )
        names = [s.name for s in self._skills]
        if keep is not None and names:
            name, row = keep
            table.move_cursor(row=names.index(name) if name in names else min(row, len(names) - 1))

    def _show_held(self, held: list[HeldBack]) -> None:
        """The held-back table: quarantined skills and skipped files, each with its reason."""
        self._held = held
        table = self.query_one("#skills-held", DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        table.add_column("Held back", key="what")
        table.add_column("Why", key="why")
        for item in held:
            state = "quarantined" if item.quarantined else "skipped"
            table.add_row(Text(printable(f"{item.name or item.path} ({state})"), no_wrap=True, overflow="ellipsis"),
                          Text(printable(item.reason), no_wrap=True, overflow="ellipsis"))
        table.set_class(not held, "-empty")
        table.styles.height = min(len(held), HELD_ROWS) + 2  # header + border: fixed, not measured later
        if held:
            table.move_cursor(row=min(max(row, 0), len(held) - 1))

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_columns)

    def _fit_columns(self) -> None:
        """The description column takes the width left over, so rows never scroll sideways."""
        table = self.query_one("#skills-table", DataTable)
        if table.scrollable_content_region.width != self._table_width:
            self._render_table(self._cursor_place())

    # -- events

    @on(Input.Changed, "#skills-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._load(event.value)

    @on(Input.Submitted, "#skills-filter")
    def _filter_submitted(self) -> None:
        self.action_use()

    @on(DataTable.RowHighlighted, "#skills-table")
    def _row_highlighted(self) -> None:
        self.preview.show(self.selected)
        self.refresh_bindings()

    @on(DataTable.RowSelected, "#skills-table")
    def _row_selected(self) -> None:
        self.action_use()

    @on(DataTable.RowHighlighted, "#skills-held")
    def _held_highlighted(self) -> None:
        if item := self.selected_held:
            self.preview.show_held(item)
        self.refresh_bindings()

    def on_key(self, event: events.Key) -> None:
        """Letters typed anywhere in the pane go to the filter (they are never commands), and so
        does Backspace: it takes back the filter's last letter from the lists too.

        A letter that reaches the pane did not go through the filter box (it takes its letters),
        even when the box has the focus again: the app hands each key to the widget focused when
        it arrived, so the rest of a burst typed on a list comes here too. Backspace on the box
        is the box's own binding.
        """
        box = self.query_one("#skills-filter", Input)
        if event.is_printable and event.character:
            self.focus_main()
            box.insert_text_at_cursor(event.character)
            event.stop()
        elif event.key == "backspace" and self.screen.focused is not box:
            self.focus_main()
            box.action_delete_left()
            event.stop()

    def on_descendant_focus(self) -> None:
        if item := self.selected_held:
            self.preview.show_held(item)
        elif self.query_one("#skills-table", DataTable).has_focus:
            self.preview.show(self.selected)
        self.refresh_bindings()

    def on_descendant_blur(self) -> None:
        self.refresh_bindings()
