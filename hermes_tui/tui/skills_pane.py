"""SkillsPane: browse, filter, preview, use, edit and delete the skills Hermes wrote.

Skill files are read in a thread worker (the manager stats every file on each read) and the
table is rebuilt on the app thread. Table cells are Rich ``Text`` objects: a plain string
cell would be parsed as markup, and descriptions are written by a model or a user.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable, Input, Markdown, Static
from textual.worker import get_current_worker

from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillError, SkillManager
from hermes_tui.skills.schema import Skill
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.messages import EditSkill, UseSkill
from hermes_tui.tui.transcript import printable

log = logging.getLogger(__name__)

SEARCH_LIMIT = 200
NAME_WIDTH_MAX = 28
USES_WIDTH = 4
VERSION_WIDTH = 4
DESCRIPTION_WIDTH_MIN = 12
EMPTY_PREVIEW = "*No skill selected.*"


def skill_markdown(skill: Skill) -> str:
    """The preview: a summary of the frontmatter, then the body as written."""
    updated = time.strftime("%Y-%m-%d", time.localtime(skill.updated))
    facts = f"version {skill.version} · used {skill.use_count}× · updated {updated}"
    lines = [f"## {skill.name}", "", skill.description, "", f"*{facts}*"]
    if skill.triggers:
        lines += ["", "**Triggers:** " + ", ".join(skill.triggers)]
    lines += ["", "---", "", skill.body or "*This skill has no body.*"]
    return "\n".join(lines)


class SkillsPane(Widget):
    """Filter box, skills table and Markdown preview of the highlighted skill."""

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
    SkillsPane > #skills-preview {
        height: 1fr;
        border-top: solid $primary 40%;
    }
    """

    BINDINGS = [
        Binding("u", "use", "Use"),
        Binding("e", "edit", "Edit"),
        Binding("d", "delete", "Delete"),
        Binding("r", "reload", "Reload"),
        Binding("slash", "focus_filter", "Filter"),
        Binding("down", "focus_table", "Skills", show=False),
    ]

    def __init__(self, *, memory: MemoryStore, skills: SkillManager, **widget_kwargs: Any) -> None:
        super().__init__(**widget_kwargs)
        del memory  # every pane takes both stores; this one only needs the skills
        self._manager = skills
        self._skills: list[Skill] = []
        self._query = ""
        self._previewed = EMPTY_PREVIEW
        self._table_width = 0

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Filter skills: type what you want to do", id="skills-filter")
        yield Static(id="skills-status")
        table: DataTable[Text] = DataTable(id="skills-table", cursor_type="row", zebra_stripes=True)
        yield table
        with VerticalScroll(id="skills-preview"):
            yield Markdown(EMPTY_PREVIEW, id="skills-preview-body")

    def on_mount(self) -> None:
        self.refresh_data()

    # -- public API

    def refresh_data(self) -> None:
        """Re-read the skills for the current filter (files may have changed on disk)."""
        self._load(self.query_one("#skills-filter", Input).value)

    def focus_main(self) -> None:
        self.query_one("#skills-table", DataTable).focus()

    def set_filter(self, text: str) -> None:
        """Show the skills matching ``text`` (the ``/skills filter`` command)."""
        box = self.query_one("#skills-filter", Input)
        if box.value == text:
            self.refresh_data()
        else:
            box.value = text  # Input.Changed reloads

    @property
    def selected(self) -> Skill | None:
        """The highlighted skill, if any."""
        row = self.query_one("#skills-table", DataTable).cursor_row
        return self._skills[row] if 0 <= row < len(self._skills) else None

    # -- loading

    @work(thread=True, exclusive=True, group="skills-load")
    def _load(self, query: str, reload: bool = False) -> None:
        worker = get_current_worker()
        error: str | None = None
        try:
            if reload:
                self._manager.reload()
            skills = self._manager.search(query, limit=SEARCH_LIMIT) if query.strip() else self._manager.list()
        except Exception as exc:  # the manager skips bad files; this only keeps the pane alive
            log.exception("listing skills failed")
            skills, error = [], str(exc) or type(exc).__name__
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, query, skills, error)

    def _show(self, query: str, skills: list[Skill], error: str | None) -> None:
        if not self.is_attached:
            return
        same_query = query == self._query
        keep = self._cursor_place() if same_query else None
        self._query = query
        self._skills = skills
        self._render_table(keep)
        self._show_status(query, error)
        self._show_preview(self.selected)
        self.refresh_bindings()

    def _show_status(self, query: str, error: str | None) -> None:
        count = len(self._skills)
        if error is not None:
            status = Content.assemble(("Could not read the skills: ", "$text-error"), error)
        elif query.strip() and not count:
            status = Content.assemble("No skill matches “", printable(query), "”")
        elif query.strip():
            status = Content.assemble(f"{count} matching “", printable(query), "”, best first")
        elif not count:
            status = Content("No skills yet: Hermes writes one after it solves a multi-step task.")
        else:
            status = Content(f"{count} skill{'s' if count != 1 else ''}, most used first")
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
                Text(skill.description, no_wrap=True, overflow="ellipsis"),
                key=skill.name,
            )
        names = [s.name for s in self._skills]
        if keep is not None and names:
            name, row = keep
            table.move_cursor(row=names.index(name) if name in names else min(row, len(names) - 1))

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_columns)

    def _fit_columns(self) -> None:
        """The description column takes the width left over, so rows never scroll sideways."""
        table = self.query_one("#skills-table", DataTable)
        if table.scrollable_content_region.width != self._table_width:
            self._render_table(self._cursor_place())

    def _show_preview(self, skill: Skill | None) -> None:
        if skill is not None and not skill.body:  # lists carry no bodies; read this one file
            skill = self._manager.get(skill.name) or skill
        text = skill_markdown(skill) if skill else EMPTY_PREVIEW
        if text == self._previewed:
            return  # unchanged: skip the re-parse (and keep the reader's scroll position)
        self._previewed = text
        self.query_one("#skills-preview-body", Markdown).update(text)
        self.query_one("#skills-preview", VerticalScroll).scroll_home(animate=False)

    # -- events

    @on(Input.Changed, "#skills-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._load(event.value)

    @on(Input.Submitted, "#skills-filter")
    def _filter_submitted(self) -> None:
        self.focus_main()

    @on(DataTable.RowHighlighted, "#skills-table")
    def _row_highlighted(self) -> None:
        self._show_preview(self.selected)
        self.refresh_bindings()

    @on(DataTable.RowSelected, "#skills-table")
    def _row_selected(self) -> None:
        self.action_use()

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def on_descendant_blur(self) -> None:
        self.refresh_bindings()

    # -- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Letter keys belong to the filter box while it has focus; skill actions need a skill."""
        if action in ("use", "edit", "delete", "reload", "focus_filter"):
            if self.query_one("#skills-filter", Input).has_focus:
                return False
        if action in ("use", "edit", "delete") and self.selected is None:
            return None
        return True

    def action_use(self) -> None:
        if skill := self.selected:
            self.post_message(UseSkill(skill.name))

    def action_edit(self) -> None:
        if skill := self.selected:
            self.post_message(EditSkill(skill.name))

    def action_delete(self) -> None:
        skill = self.selected
        if skill is None:
            return
        name = skill.name

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._delete(name)

        question = f"Delete the skill “{name}”? Its folder and version history are removed from disk."
        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_reload(self) -> None:
        self._load(self._query, reload=True)

    def action_focus_filter(self) -> None:
        self.query_one("#skills-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.focus_main()

    @work(thread=True, group="skills-delete")
    def _delete(self, name: str) -> None:
        error: str | None = None
        try:
            self._manager.delete(name)
        except (SkillError, OSError) as exc:
            error = str(exc)
        self.app.call_from_thread(self._deleted, name, error)

    def _deleted(self, name: str, error: str | None) -> None:
        if error is None:
            self.app.notify(f"Deleted the skill {name}.", markup=False)
        else:
            self.app.notify(f"Could not delete {name}: {error}", severity="error", markup=False)
        if self.is_attached:
            self.refresh_data()
