"""SessionsPane: past sessions, newest first, with a preview of the highlighted one.

The list and each preview are read in thread workers; table cells are Rich ``Text`` (a plain
string cell would be parsed as markup, and titles are what the user typed).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable, Static

from hermes_tui.conversation import ChatMessage
from hermes_tui.memory.store import MemoryStore, SessionInfo
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui import actions
from hermes_tui.tui.format import one_line
from hermes_tui.tui.messages import ForgetSession, OpenTranscript, ResumeSession
from hermes_tui.tui.transcript import clock, printable, role_label, tool_calls_summary
from hermes_tui.tui.workers import off_thread

SESSION_LIMIT = 500
PREVIEW_MESSAGES = 6
PREVIEW_CHARS = 400
WHEN_WIDTH = 16
COUNT_WIDTH = 4
TITLE_WIDTH_MIN = 12
SUMMARY_WIDTH_MIN = 12


def session_title(info: SessionInfo) -> str:
    return printable(info.title or info.first_user_line or "") or "(no messages yet)"


def row_title(info: SessionInfo) -> str:
    """The title cell: a sub-agent's session is marked as one."""
    return f"↳ sub-agent: {session_title(info)}" if info.parent_id is not None else session_title(info)


def preview_content(info: SessionInfo, messages: list[ChatMessage]) -> Content:
    """The summary, then the first few user/assistant messages, each cut short."""
    count = f"{info.message_count} message{'s' if info.message_count != 1 else ''}"
    parent = f" · sub-agent of session {info.parent_id}" if info.parent_id is not None else ""
    parts: list[str | Content | tuple[str, str]] = [
        (session_title(info), "bold"),
        "\n",
        (f"session {info.id} · {info.source}{parent} · {clock(info.started)} → {clock(info.last_activity)} · {count}",
         "dim"),
        "\n\n",
        ("Summary: ", "bold"),
        printable(info.summary or "") or "none yet (written when the session closes)",
        "\n",
    ]
    shown = [m for m in messages if m.role in ("user", "assistant")][:PREVIEW_MESSAGES]
    for message in shown:
        text = one_line(printable(message.content or ""), PREVIEW_CHARS)
        if not text:
            text = "→ " + ", ".join(tool_calls_summary(message.calls))
        parts += ["\n", (f"{role_label(message.role)}: ", "bold"), text]
    return Content.assemble(*parts)


class SessionsPane(Widget):
    """Table of sessions (with their ids) and a preview; Enter/``o`` opens the transcript, ``r`` resumes,
    ``x`` forgets (after a confirmation)."""

    DEFAULT_CSS = """
    SessionsPane {
        height: 1fr;
        layout: vertical;
    }
    SessionsPane > #sessions-status {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    SessionsPane > #sessions-table {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-gutter: stable;
    }
    SessionsPane > #sessions-preview {
        height: 1fr;
        padding: 0 1;
        border-top: solid $primary 40%;
    }
    """

    BINDINGS = actions.bindings("sessions")

    def __init__(self, *, memory: MemoryStore, skills: SkillManager, **widget_kwargs: Any) -> None:
        super().__init__(**widget_kwargs)
        del skills  # every pane takes both stores; this one only reads sessions
        self._store = memory
        self._sessions: list[SessionInfo] = []
        self._previewed: int | None = None
        self._table_width = 0

    def compose(self) -> ComposeResult:
        yield Static(id="sessions-status")
        table: DataTable[Text] = DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        yield table
        with VerticalScroll(id="sessions-preview"):
            yield Static(id="sessions-preview-body")

    def on_mount(self) -> None:
        self.refresh_data()

    # -- public API

    def refresh_data(self) -> None:
        """Re-read the session list (other processes may have added sessions)."""
        self._load()

    def focus_main(self) -> None:
        self.screen.set_focus(self.query_one("#sessions-table", DataTable))  # at once, not after queued keys

    @property
    def selected(self) -> SessionInfo | None:
        """The highlighted session, if any."""
        row = self.query_one("#sessions-table", DataTable).cursor_row
        return self._sessions[row] if 0 <= row < len(self._sessions) else None

    # -- loading

    def _load(self) -> None:
        off_thread(self, lambda: self._store.list_sessions(limit=SESSION_LIMIT), self._show,
                   what="listing sessions", group="sessions-load", exclusive=True)

    def _show(self, sessions: list[SessionInfo] | None, error: str | None) -> None:
        """The list, or the reason it could not be read in the status line (the pane stays usable)."""
        if not self.is_attached:
            return
        sessions = sessions or []
        keep = self.selected.id if self.selected else None
        self._sessions = sessions  # a sub-agent's right below its parent's (``list_sessions``)
        self._render_table(keep)
        if error is not None:
            status = Content.assemble(("Could not read the sessions: ", "$text-error"), error)
        elif not sessions:
            status = Content("No sessions yet: everything you say in the chat is kept here.")
        else:
            listed = {info.id for info in sessions}  # the limit counts the user's, not their sub-agents'
            own = sum(1 for info in sessions if info.parent_id not in listed)
            more = f" (the newest {SESSION_LIMIT})" if own == SESSION_LIMIT else ""
            status = Content(f"{len(sessions)} session{'s' if len(sessions) != 1 else ''}{more}, newest first")
        self.query_one("#sessions-status", Static).update(status)
        self._previewed = None
        self._preview(self.selected)
        self.refresh_bindings()

    def _render_table(self, keep: int | None) -> None:
        table = self.query_one("#sessions-table", DataTable)
        width = table.scrollable_content_region.width
        self._table_width = width
        id_width = max([2, *(len(str(info.id)) for info in self._sessions)])
        rest = width - id_width - WHEN_WIDTH - COUNT_WIDTH - 5 * 2 * table.cell_padding
        title_width = max(TITLE_WIDTH_MIN, rest * 2 // 5)
        table.clear(columns=True)
        table.add_column("Id", width=id_width, key="id")  # what /resume and /forget take
        table.add_column("When", width=WHEN_WIDTH, key="when")
        table.add_column("Msgs", width=COUNT_WIDTH, key="count")
        table.add_column("Title", width=title_width, key="title")
        table.add_column("Summary", width=max(SUMMARY_WIDTH_MIN, rest - title_width), key="summary")
        for info in self._sessions:
            table.add_row(
                Text(str(info.id).rjust(id_width)),
                Text(clock(info.last_activity)),
                Text(str(info.message_count).rjust(COUNT_WIDTH)),
                Text(one_line(row_title(info), 200), no_wrap=True, overflow="ellipsis"),
                Text(one_line(printable(info.summary or ""), 400), no_wrap=True, overflow="ellipsis"),
                key=str(info.id),
            )
        ids = [info.id for info in self._sessions]
        if keep in ids:
            table.move_cursor(row=ids.index(keep), animate=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_columns)

    def _fit_columns(self) -> None:
        """Title and summary share the width left over, so rows never scroll sideways."""
        table = self.query_one("#sessions-table", DataTable)
        if table.scrollable_content_region.width != self._table_width:
            self._render_table(self.selected.id if self.selected else None)

    def _preview(self, info: SessionInfo | None) -> None:
        if info is None:
            self._previewed = None
            self.query_one("#sessions-preview-body", Static).update("")
        elif info.id != self._previewed:
            self._previewed = info.id
            self._load_preview(info)

    def _load_preview(self, info: SessionInfo) -> None:
        off_thread(self, lambda: preview_content(info, self._store.get_messages(info.id)),
                   lambda content, error: self._show_preview(info.id, content, error),
                   what=f"previewing session {info.id}", group="sessions-preview", exclusive=True)

    def _show_preview(self, session_id: int, content: Content | None, error: str | None) -> None:
        """A preview is optional: when it cannot be read, it says why."""
        if content is None:
            content = Content.assemble(("Could not read this session: ", "$text-error"), error or "")
        if session_id == self._previewed and self.is_attached:
            self.query_one("#sessions-preview-body", Static).update(content)
            self.query_one("#sessions-preview", VerticalScroll).scroll_home(animate=False)

    # -- events

    @on(DataTable.RowHighlighted, "#sessions-table")
    def _row_highlighted(self) -> None:
        self._preview(self.selected)
        self.refresh_bindings()

    @on(DataTable.RowSelected, "#sessions-table")
    def _row_selected(self) -> None:
        self.action_open()

    # -- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "resume", "forget") and self.selected is None:
            return None
        return True

    def action_open(self) -> None:
        if info := self.selected:
            self.post_message(OpenTranscript(info.id, None))

    def action_resume(self) -> None:
        if info := self.selected:
            self.post_message(ResumeSession(info.id))

    def action_forget(self) -> None:
        if info := self.selected:
            self.post_message(ForgetSession(info.id))
