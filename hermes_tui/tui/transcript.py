"""TranscriptScreen: a past session, read-only, scrolled to (and highlighting) one message.

Why one ``OptionList`` and not a widget per message: the list renders only the lines on screen,
so sessions with thousands of messages open in well under a second and keys stay instant,
where a Markdown widget per message took ~40 ms each to mount. Each message is one option
(a Rich renderable); the highlighted option is the target message, and up/down move between
messages. Assistant text is Rich Markdown, parsed in the loading thread; to bound the work on
the app thread only the ``MARKDOWN_WINDOW`` messages on either side of the target are rendered
as Markdown, the rest as plain text. User text is always shown literally, never as markup.
``role_label``, ``clock`` and ``tool_calls_summary`` are shared with the other panes; ``printable``
(re-exported from ``hermes_tui.textsafe``) is the one sanitizer for text drawn on the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.color import Color, ColorParseError
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.conversation import ChatMessage, ToolCall
from hermes_tui.memory.store import MemoryStore, SessionInfo
from hermes_tui.textsafe import printable
from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce
from hermes_tui.tui.format import one_line, plural, short_args
from hermes_tui.tui.messages import ResumeSession
from hermes_tui.tui.workers import off_thread

ROLE_LABELS = {"user": "You", "assistant": "Hermes", "tool": "Tool", "system": "System"}
ARGUMENTS_CHARS = 120
RESULT_CHARS = 160
MARKDOWN_WINDOW = 100

def role_label(role: str) -> str:
    return ROLE_LABELS.get(role, role.capitalize())


def clock(epoch: float) -> str:
    """Local date and minute: absolute, so a transcript reads the same tomorrow."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def tool_calls_summary(calls: Sequence[ToolCall]) -> list[str]:
    """``name gist`` per call, the arguments shortened the way the chat shows them; arguments
    that are not a JSON object are shown as the model wrote them."""
    return [printable(f"{call.name} {_arguments_gist(call)}".rstrip()) for call in calls]


def _arguments_gist(call: ToolCall) -> str:
    if call.valid:
        return short_args(call.name, dict(call.arguments), ARGUMENTS_CHARS)
    return one_line(call.raw, ARGUMENTS_CHARS)


@dataclass(frozen=True)
class Look:
    """What the loading thread needs from the theme: Rich renderables cannot use CSS variables."""

    code_theme: str
    labels: Mapping[str, Style]

    @classmethod
    def of(cls, app: App[Any]) -> Look:
        variables = app.get_css_variables()
        labels = {}
        for role, variable in (("user", "text-primary"), ("assistant", "text-secondary")):
            try:
                labels[role] = Style(color=Color.parse(variables[variable]).rich_color, bold=True)
            except (KeyError, ColorParseError):
                labels[role] = Style(bold=True)
        return cls("ansi_dark" if app.current_theme.dark else "ansi_light", labels)


def message_renderable(message: ChatMessage, *, markdown: bool, look: Look) -> RenderableType:
    """One message: a header line, then the text; tool results and system text on one line."""
    content = printable(message.content or "")
    if message.role in ("tool", "system"):
        lead = f"← {printable(message.name or 'tool')}" if message.role == "tool" else "System"
        detail = f" ({plural(len(content.splitlines()), 'line')}): " if message.role == "tool" else ": "
        body = one_line(content, RESULT_CHARS) or "(empty)"
        return Text.assemble((lead, "bold"), detail, body, style="dim", no_wrap=True, overflow="ellipsis")
    parts: list[RenderableType] = [
        Text.assemble(
            (role_label(message.role), look.labels.get(message.role, "bold")), (f" · {clock(message.created)}", "dim")
        )
    ]
    if content:
        if message.role == "assistant" and markdown:
            parts.append(Markdown(content, code_theme=look.code_theme, hyperlinks=False))
        else:
            parts.append(Text(content))
    parts += [Text(f"→ {call}", style="dim") for call in tool_calls_summary(message.calls)]
    return Group(*parts)


def message_options(messages: list[ChatMessage], target: int | None, look: Look) -> list[Option | None]:
    """One option per message with a divider (None) between; Markdown near the target only."""
    ids = [m.id for m in messages]
    center = ids.index(target) if target in ids else 0
    options: list[Option | None] = []
    for index, message in enumerate(messages):
        if options:
            options.append(None)
        markdown = abs(index - center) <= MARKDOWN_WINDOW
        options.append(Option(message_renderable(message, markdown=markdown, look=look)))
    return options


class TranscriptScreen(DismissOnce, Screen[None]):
    """Read-only view of one session; ``r`` resumes it in the chat, ``escape``/``q`` closes."""

    DEFAULT_CSS = """
    TranscriptScreen > #transcript-title {
        height: auto;
        padding: 0 1;
        background: $panel;
        color: $text;
        text-style: bold;
    }
    TranscriptScreen > #transcript-messages {
        height: 1fr;
        border: none;
        padding: 1 1 0 1;
        background: $background;
        & > .option-list--option-highlighted, &:focus > .option-list--option-highlighted {
            color: $foreground;
            background: $accent 20%;
            text-style: none;
        }
        & > .option-list--separator {
            color: $foreground 10%;
        }
    }
    """

    BINDINGS = actions.bindings("transcript")  # declared once, in actions.ACTIONS

    def __init__(self, memory: MemoryStore, session_id: int, message_id: int | None = None) -> None:
        super().__init__()
        self._store = memory
        self.session_id = session_id
        self.message_id = message_id
        self.message_ids: list[int] = []
        """The ids of the messages shown, in order (option i is message ``message_ids[i]``)."""

    def compose(self) -> ComposeResult:
        yield Static(Content(f"Session {self.session_id}: loading…"), id="transcript-title")
        yield OptionList(id="transcript-messages", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._load(Look.of(self.app))

    def _load(self, look: Look) -> None:
        def job() -> tuple[SessionInfo | None, list[int], list[Option | None]]:
            info = self._store.get_session(self.session_id)
            messages = self._store.get_messages(self.session_id) if info else []
            return info, [m.id for m in messages], message_options(messages, self.message_id, look)

        def then(found: tuple[SessionInfo | None, list[int], list[Option | None]] | None, error: str | None) -> None:
            self._show(*(found or (None, [], [])), error)  # an error goes in the title line

        off_thread(self, job, then, what=f"loading session {self.session_id}", group="transcript-load", exclusive=True)

    def _show(self, info: SessionInfo | None, ids: list[int], options: list[Option | None], error: str | None) -> None:
        if not self.is_attached:
            return  # closed before the messages arrived
        title = self.query_one("#transcript-title", Static)
        if info is None:
            reason = f"could not be read: {error}" if error else "does not exist"
            title.update(Content(f"Session {self.session_id} {reason}."))
            return
        name = printable(info.title or info.first_user_line or "") or "untitled"
        count = f"{info.message_count} message{'s' if info.message_count != 1 else ''}"
        title.update(Content(f"Session {info.id} · {name} · {clock(info.started)} · {count} · read-only"))
        self.message_ids = ids
        messages = self.query_one("#transcript-messages", OptionList)
        messages.set_options(options)
        messages.focus()
        if self.message_id in ids:
            messages.highlighted = ids.index(self.message_id)
            self.call_after_refresh(self._center_highlight)

    def _center_highlight(self) -> None:
        """Put the target a third of the way down, so the messages before it give context."""
        messages = self.query_one("#transcript-messages", OptionList)
        messages.scroll_to_highlight(top=True)
        messages.scroll_relative(y=-(messages.scrollable_content_region.height // 3), animate=False, immediate=True)

    def action_page(self, direction: str) -> None:
        """PgUp/PgDn move by a screen of text (messages can be taller or shorter than a screen)."""
        messages = self.query_one("#transcript-messages", OptionList)
        if direction == "up":
            messages.scroll_page_up(animate=False)
        else:
            messages.scroll_page_down(animate=False)

    def action_close(self) -> None:
        self.dismiss()

    def action_resume(self) -> None:
        self.app.post_message(ResumeSession(self.session_id))
        self.dismiss()
