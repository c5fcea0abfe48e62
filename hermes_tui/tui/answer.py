"""The Markdown widgets of the conversation, in their own module: importing Markdown (markdown-it)
costs ~60 ms, so the app loads this module on a thread after its first frame (``load_markdown``),
neither at start-up nor when the first answer's words arrive."""

from __future__ import annotations

import time

from textual.await_complete import AwaitComplete
from textual.widgets import Markdown

from hermes_tui.tui.lists import LIST_BLOCKS
from hermes_tui.tui.tables import TABLE_BLOCKS


class AnswerText(Markdown):
    """One block of the assistant's answer text, fed through a ``MarkdownStream`` while it arrives.

    It measures what an append costs until the screen shows it (parse, remount of the last block,
    re-layout of the whole conversation, render): that grows with the length of the conversation,
    and the chat paces its appends by it.

    Far out of view it can be *folded*: its block widgets go, its height stays. Why: every layout
    of the screen walks every widget, and an 80k-character answer is ~1,800 of them (37 ms a
    layout, many times a second while text streams). Unfolding rebuilds them from the source.
    """

    BLOCKS = {**Markdown.BLOCKS, **LIST_BLOCKS, **TABLE_BLOCKS}  # noqa: RUF012 - Textual types it a plain dict; lists cheap to stream (lists.py), aligned tables
    update_cost = 0.0  # seconds the last append took until it was on screen
    folded = False

    async def fold(self) -> bool:
        """Drop the block widgets, keeping the height they gave (off screen: nothing changes).
        False when it cannot be done yet: its widgets are being rebuilt (``lock``) or laid out."""
        height = self.outer_size.height
        if self.folded:
            return True
        if self.lock.is_locked:
            return False
        if not self.children:
            return True  # nothing to drop
        if height <= 0:
            return False
        self.folded = True
        self.styles.height = height
        await self.remove_children()
        self._let_go_of_removed()
        return True

    def _let_go_of_removed(self) -> None:
        """Textual keeps removed children in two caches (the displayed children, the last
        arrangements) until it next needs them, which for a folded answer is never: they kept
        every folded widget and its rendered lines alive, ~1,700 widgets and ~250,000 objects
        after an 80k-character answer, and each garbage collection walked them all."""
        self.displayed_children  # noqa: B018 - reading it refreshes the cache
        self._clear_arrangement_cache()

    async def unfold(self) -> None:
        """Rebuild the block widgets from the source; the height follows them again."""
        if not self.folded:
            return
        self.folded = False
        self.styles.height = None  # the stylesheet's again: auto
        await self.update(self.source)

    def append(self, markdown: str) -> AwaitComplete:
        started = time.monotonic()
        appended = super().append(markdown)

        async def measured() -> None:
            await appended
            self.call_after_refresh(self._record_cost, started)

        return AwaitComplete(measured())

    def _record_cost(self, started: float) -> None:
        self.update_cost = time.monotonic() - started


COMMON_LANGUAGES = ("python", "bash", "shell", "console", "javascript", "typescript", "json", "yaml", "toml",
                    "html", "css", "sql", "rust", "go", "java", "c", "cpp", "diff", "markdown", "text")


def warm_highlighting() -> None:
    """Build Pygments' lexers ahead (a thread after the first frame): a lexer compiles its regular
    expressions on first use (~50 ms for Python, ~70 for CSS), and the first code block without a
    language imports every lexer to guess one (~0.3-0.6 s). Done when the first answer's first
    code block arrived, it stalled the screen and the keys for as long."""
    from textual.highlight import highlight

    highlight("x = 1", language=None)
    for language in COMMON_LANGUAGES:
        highlight("x", language=language)


class HelpText(Markdown):
    """The /help card."""

    BLOCKS = {**Markdown.BLOCKS, **TABLE_BLOCKS}  # noqa: RUF012 - Textual types it a plain dict, not a ClassVar
