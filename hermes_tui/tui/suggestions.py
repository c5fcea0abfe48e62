"""The slash-command suggestions under the prompt (built on the first "/" typed)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from hermes_tui.tui import commands


class SlashSuggestions(OptionList, can_focus=False):
    """Commands matching what is typed; shown under the prompt only while there are some."""

    shown_for = ""  # the prompt text the list was last built for

    def show_for(self, text: str) -> None:
        self.shown_for = text
        matches = commands.completions(text)
        exact = len(matches) == 1 and text == f"/{matches[0].name}"
        self.display = bool(matches) and not exact
        if not self.display:
            return
        self.set_options(
            Option(Content.assemble((f"/{c.name}", "bold"), f" {c.usage}" if c.usage else "",
                                    (f"  {c.help}", "$text-muted")), id=c.name)
            for c in matches
        )
        self.highlighted = 0

    @property
    def choice(self) -> str | None:
        option = self.highlighted_option
        return option.id if self.display and option is not None else None
