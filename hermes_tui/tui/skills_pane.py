"""SkillsPane: browse, filter, preview, use, edit, version and delete skills; see what is held back.

Typing always filters: letters (and Backspace) never run actions, whichever table has focus
(they are sent to the filter box). Actions use Enter, F-keys and ctrl keys the filter box does not
use; PgUp/PgDn scroll the preview from anywhere in the pane. Below the skills, a second table lists
what the library does not offer — quarantined skills with the guard's reason (ctrl+t approves that
exact content, F10 deletes) and skipped files with theirs. F7 shows the highlighted skill's
versions and the diff of its newest pending proposal as F8 would merge it, or of its last change
(F9 restores the version before it); highlighting another skill ends it. An action key pressed
before the first list has loaded runs when it arrives.

What the keys do is in ``skills_actions``. Skill files are read in thread workers; tables are
rebuilt on the app thread. Table cells are Rich ``Text`` objects: a plain string cell would be
parsed as markup, and descriptions are written by a model or a stranger.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import DataTable, Input, Markdown, Static

from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.lifecycle import SkillStats
from hermes_tui.skills.manager import HeldBack, SkillError, SkillManager
from hermes_tui.skills.schema import Skill
from hermes_tui.tui import actions
from hermes_tui.tui.skills_actions import SkillActions, key
from hermes_tui.tui.transcript import printable
from hermes_tui.tui.workers import off_thread

SEARCH_LIMIT = 200
NAME_WIDTH_MAX = 28
USES_WIDTH = 4
VERSION_WIDTH = 4
DESCRIPTION_WIDTH_MIN = 12
EMPTY_PREVIEW = "*No skill selected.*"
HELD_ROWS = 5  # rows of the held-back table shown before it scrolls
FENCE = "`" * 3


def skill_markdown(skill: Skill, stats: SkillStats | None = None) -> str:
    """The preview: a summary of the frontmatter and of the skill's record, then the body as written."""
    updated = time.strftime("%Y-%m-%d", time.localtime(skill.updated))
    facts = f"version {skill.version} · used {skill.use_count}× · updated {updated}"
    lines = [f"## {skill.name}", "", skill.description, "", f"*{facts}*"]
    if stats is not None and stats.has_record:
        lines += ["", f"*{stats.summary()}*"]
    if skill.notice:
        lines += ["", f"*Note: {skill.notice}*"]
    if skill.triggers:
        lines += ["", "**Triggers:** " + ", ".join(skill.triggers)]
    lines += ["", "---", "", skill.body or "*This skill has no body.*"]
    return "\n".join(lines)


def _code(text: str, kind: str = "text") -> list[str]:
    return [f"{FENCE}{kind}", text.replace(FENCE, "~~~"), FENCE]


class SkillsPane(SkillActions, Widget):
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
        self._versions_of: str | None = None  # the skill F7 shows the versions of; moving away ends it
        self._query = ""
        self._previewed = EMPTY_PREVIEW
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
        with VerticalScroll(id="skills-preview"):
            yield Markdown(EMPTY_PREVIEW, id="skills-preview-body")

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
        self._show_preview(self.selected)
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

    # -- the preview

    def _show_preview(self, skill: Skill | None) -> None:
        if skill is not None and not skill.body:  # lists carry no bodies; read this one file
            skill = self._manager.get(skill.name) or skill
        if skill is None or skill.name != self._versions_of:
            self._versions_of = None
        if skill is None:
            text = EMPTY_PREVIEW
        elif self._versions_of is not None:
            text = self._versions_markdown(skill)
        else:
            text = skill_markdown(skill, next(iter(self._manager.stats(skill.name)), None))
        self._set_preview(text)

    def _set_preview(self, text: str) -> None:
        if text == self._previewed:
            return  # unchanged: skip the re-parse (and keep the reader's scroll position)
        self._previewed = text
        self.query_one("#skills-preview-body", Markdown).update(text)
        self.query_one("#skills-preview", VerticalScroll).scroll_home(animate=False)

    def _versions_markdown(self, skill: Skill) -> str:
        """The version list, then the diff F8 or F9 would apply."""
        try:
            versions = self._manager.versions(skill.name)
            pending = [v for v in versions if v.kind == "pending"]
            archived = [v for v in versions if v.kind == "archived"]
            lines = [f"## {skill.name}: versions", ""]
            for v in versions:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(v.time))
                lines.append(f"- `{v.label}` ({v.kind}, {when})")
            diff = ""
            if pending:
                diff = self._manager.accept_diff(skill.name, pending[-1].label)
                lines += ["", f"**{key('accept')} accepts `{pending[-1].label}`**, merged into the file as it is now "
                          "(your changes stay; the current file is archived first):"]
            elif archived:
                diff = self._manager.diff(skill.name, archived[-1].label, "current")
                lines += ["", f"**Last change** ({key('restore')} restores `{archived[-1].label}` as a new version):"]
            else:
                lines += ["", "*No other version yet.*"]
        except (SkillError, OSError) as exc:
            return f"*Could not read the versions: {exc}*"
        if diff:
            lines += ["", *_code(diff, "diff")]
        return "\n".join(lines)

    def _show_held_preview(self, item: HeldBack) -> None:
        state = "Quarantined by the skill guard" if item.quarantined else "Skipped"
        lines = [f"## {item.name or item.path}", "", f"**{state}:** {item.reason}", "", f"File: `{item.path}`"]
        if item.quarantined:
            lines += ["", f"{key('approve')} approves this exact content; {key('delete')} deletes the skill."]
            skill = self._manager.get(item.name or "")
            if skill is not None:
                lines += ["", "---", "", *_code(skill.body)]
        self._set_preview("\n".join(lines))

    # -- events

    @on(Input.Changed, "#skills-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._load(event.value)

    @on(Input.Submitted, "#skills-filter")
    def _filter_submitted(self) -> None:
        self.action_use()

    @on(DataTable.RowHighlighted, "#skills-table")
    def _row_highlighted(self) -> None:
        self._show_preview(self.selected)
        self.refresh_bindings()

    @on(DataTable.RowSelected, "#skills-table")
    def _row_selected(self) -> None:
        self.action_use()

    @on(DataTable.RowHighlighted, "#skills-held")
    def _held_highlighted(self) -> None:
        if item := self.selected_held:
            self._show_held_preview(item)
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
            self._show_held_preview(item)
        elif self.query_one("#skills-table", DataTable).has_focus:
            self._show_preview(self.selected)
        self.refresh_bindings()

    def on_descendant_blur(self) -> None:
        self.refresh_bindings()
