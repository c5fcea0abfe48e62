"""Where a long streamed answer may start a new Markdown widget.

Why: every append to a ``MarkdownStream`` costs more as its widget grows (parsing, the block
remount, the layout of everything in it), so an 80k-character answer in one widget made key
echo slow. Cutting the answer into widgets of about ``limit`` characters keeps each append
small. A cut is made only at a paragraph break (a blank line) outside a code fence, so the
rendering is the same as one widget would give.
"""

from __future__ import annotations

SPLIT_CHARS = 1_500  # characters per Markdown widget, give or take a paragraph
"""An append plus the screen update after it cost (median, app thread alone) 21 ms in a widget of
1,500 characters, 43 ms at 4,000 and 65 ms at 8,000; widgets far from the view fold (answer.py),
so more widgets cost nothing."""
FENCES = ("```", "~~~")


class BlockSplitter:
    """Feed streamed text; get it back in pieces, each but the last ending a widget."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = SPLIT_CHARS if limit is None else limit  # read at call time: the bench varies it
        self._size = 0  # characters in the current widget
        self._fence: str | None = None  # the open code fence, if any
        self._line = ""  # the unfinished last line

    def feed(self, text: str) -> list[str]:
        pieces: list[str] = []
        start = 0
        position = 0
        for line in text.splitlines(keepends=True):
            position += len(line)
            if not line.endswith("\n"):
                self._line += line
                break
            whole, self._line = self._line + line, ""
            stripped = whole.strip()
            if stripped.startswith(FENCES):
                marker = stripped[:3]
                if self._fence is None:
                    self._fence = marker
                elif marker == self._fence and stripped.strip(marker[0]) == "":
                    self._fence = None
            elif not stripped and self._fence is None and self._size + position - start >= self.limit:
                pieces.append(text[start:position])
                start = position
                self._size = 0
        self._size += len(text) - start
        pieces.append(text[start:])
        return pieces
