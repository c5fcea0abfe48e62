"""The chat prompt: a multi-line TextArea where Enter sends, plus the slash-command suggestions.

Newline keys: ctrl+j works in every terminal and in tmux (it is a plain LF byte); alt+enter and
shift+enter work where the terminal reports them (kitty keyboard protocol). A line ending in a
backslash also turns Enter into a newline. A paste only ever inserts text, but one that is exactly
the path of an image file (a file dropped on the terminal) attaches that image (``ImagePasted``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.actions import SkipAction
from textual.message import Message
from textual.widget import Widget
from textual.widgets import TextArea

from hermes_tui.tui import actions, commands
from hermes_tui.tui.history import PromptHistory

if TYPE_CHECKING:
    from hermes_tui.tui.suggestions import SlashSuggestions


NEWLINE_KEYS = frozenset(key for action in actions.in_scope("prompt") if action.action == "newline"
                         for key in action.keys)


class PromptArea(TextArea):
    """Enter sends (``Submitted``); ↑/↓ on the first/last line browse the saved history."""

    BINDINGS = actions.bindings("prompt")

    class Submitted(Message):
        def __init__(self, prompt: PromptArea, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

        @property
        def control(self) -> PromptArea:
            return self.prompt

    class ImagePasted(Message):
        """A paste that is exactly an image file's path (``agent.attachments.pasted_path``)."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, history: PromptHistory, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, tab_behavior="focus", show_line_numbers=False, **kwargs)  # type: ignore[arg-type]  # Textual's own keyword arguments, passed on
        self.prompt_history = history
        self.suggestions: SlashSuggestions | None = None  # built on the first "/", off the start-up path

    async def _on_key(self, event: events.Key) -> None:
        # TextArea inserts a newline for Enter before bindings are consulted: take Enter first.
        # Newline keys too: as bindings they would run only once the key has bubbled up to the
        # app, after the keys typed behind them were inserted (a fast "X1 ctrl+j X2" gave "X1X2\n").
        if event.key == "enter" or event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            if event.key == "enter":
                self.action_submit()
            else:
                self.action_newline()
            return
        await super()._on_key(event)

    async def _on_paste(self, event: events.Paste) -> None:
        """An image file's path attaches the image; any other paste is left to TextArea's own
        handler (Textual runs it after this one unless the default is prevented)."""
        from hermes_tui.agent.attachments import pasted_path

        if not self.read_only and (path := pasted_path(event.text)) is not None:
            event.stop()
            event.prevent_default()
            self.post_message(self.ImagePasted(path))

    async def on_text_area_changed(self) -> None:
        if self.suggestions is None:
            if not self.text.startswith("/") or not isinstance(self.parent, Widget):
                return
            from hermes_tui.tui.suggestions import SlashSuggestions

            self.suggestions = SlashSuggestions(id="suggestions")
            await self.parent.mount(self.suggestions, before=self)
        self.suggestions.show_for(self.text)

    @property
    def suggesting(self) -> bool:
        return self.suggestions is not None and self.suggestions.display

    def close_suggestions(self) -> None:
        if self.suggestions is not None:
            self.suggestions.display = False

    def load(self, text: str) -> None:
        """Replace the text and put the cursor at its end."""
        self.text = text
        self.move_cursor(self.document.end)

    def give_back(self, text: str) -> None:
        """Put text that could not be used back, ahead of whatever was typed since: nothing is lost."""
        if self.text.strip():
            self.replace(text + "\n", (0, 0), (0, 0), maintain_selection_offset=True)
        else:
            self.load(text)

    # -- actions

    def action_submit(self) -> None:
        row, column = self.cursor_location
        line = self.document[row]
        if self.selection.is_empty and column == len(line) and line.endswith("\\"):
            self.replace("\n", (row, column - 1), (row, column), maintain_selection_offset=False)  # "\" + Enter
            return
        if (name := self._chosen()) is not None and commands.parse(self.text) is not None:
            self._complete(name)  # Enter on a partial command completes it
            return
        text = self.text
        if text.strip():
            # Emptied now, not when the app handles the message: keys typed right after Enter
            # (already queued behind it) land in an empty prompt instead of being merged or lost.
            self.clear()
            self.post_message(self.Submitted(self, text))

    def action_scroll_chat(self, direction: str) -> None:
        """PageUp/PageDown in the prompt scroll the conversation by a screen."""
        chat = self.parent
        conversation = getattr(chat, "conversation", None)
        if conversation is None:
            raise SkipAction()
        if direction == "up":
            conversation.scroll_page_up(animate=False)
        else:
            conversation.scroll_page_down(animate=False)

    def action_newline(self) -> None:
        self.replace("\n", *self.selection, maintain_selection_offset=False)

    def action_complete(self) -> None:
        name = self._chosen()
        if name is None:
            raise SkipAction()  # Tab then moves the focus as usual
        self._complete(name)

    def _chosen(self) -> str | None:
        """The highlighted suggestion, for the text as it is now: keys typed in one burst arrive
        before the list has heard of them, and Enter must not act on an older text's list."""
        if self.suggestions is None:
            return None
        if self.suggestions.shown_for != self.text:
            self.suggestions.show_for(self.text)
        return self.suggestions.choice

    def _complete(self, name: str) -> None:
        command = commands.BY_NAME[name]
        self.load(f"/{name} " if command.takes_argument else f"/{name}")

    def action_history_previous(self) -> None:
        if self.suggestions is not None and self.suggesting:
            self.suggestions.action_cursor_up()
        elif self.cursor_location[0] > 0:
            self.action_cursor_up()
        elif (entry := self.prompt_history.previous(self.text)) is not None:
            self.load(entry)

    def action_history_next(self) -> None:
        if self.suggestions is not None and self.suggesting:
            self.suggestions.action_cursor_down()
        elif self.cursor_location[0] < self.document.line_count - 1:
            self.action_cursor_down()
        elif (entry := self.prompt_history.next()) is not None:
            self.load(entry)
