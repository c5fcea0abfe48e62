"""Markdown tables that keep their column alignment and their natural width.

Why: Textual's table stretches every table across the whole pane (a two-column table of short
words spread over 130 columns, its columns far apart) and draws every cell left-aligned, though
the Markdown says ``--:`` (numbers, costs) or ``:-:``. Here a table is as wide as its cells need,
at most the pane (then its columns shrink and cells wrap, as Textual's do), and each column is
aligned as its delimiter row says; the header row follows its column.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.css.types import AlignHorizontal
from textual.widgets import Static
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownTable,
    MarkdownTableCellContents,
    MarkdownTableContent,
    MarkdownTH,
)

CELL_PADDING = 2  # Textual's cells: padding 0 1
ALIGNMENTS: dict[str, AlignHorizontal] = {"left": "left", "center": "center", "right": "right"}


def column_alignments(table: MarkdownBlock) -> list[AlignHorizontal]:
    """Each column's alignment, from the header cells' ``style="text-align:…"`` (markdown-it's)."""

    def headers(block: MarkdownBlock) -> list[MarkdownBlock]:
        found: list[MarkdownBlock] = []
        for child in block._blocks:  # Textual's parsed block tree
            found += [child] if isinstance(child, MarkdownTH) else headers(child)
        return found

    aligns: list[AlignHorizontal] = []
    for header in headers(table):
        style = str(header._token.attrs.get("style", ""))
        aligns.append(ALIGNMENTS.get(style.removeprefix("text-align:"), "left"))
    return aligns


class AlignedTableContent(MarkdownTableContent):
    """The table's grid: only as wide as its cells, each cell aligned as its column says."""

    DEFAULT_CSS = """
    AlignedTableContent {
        max-width: 100%;
    }
    """

    def __init__(self, headers: list[Content], rows: list[list[Content]], aligns: list[AlignHorizontal]) -> None:
        super().__init__(headers, rows)
        self.aligns = aligns
        self._fit()

    def _fit(self) -> None:
        """As wide as the widest cell of each column needs (a grid cannot size itself to its
        cells), plus the cells' padding and the lines between them; ``max-width`` caps it."""
        widths = [0] * len(self.headers)
        for row in [self.headers, *self.rows]:
            for column, cell in enumerate(row[:len(widths)]):
                widths[column] = max(widths[column], *(Content(line).cell_length for line in cell.plain.split("\n")))
        self.styles.width = sum(width + CELL_PADDING for width in widths) + len(widths) + 1 if widths else None

    def _align(self, cell: Static, column: int) -> Static:
        if column < len(self.aligns):
            cell.styles.text_align = self.aligns[column]
        return cell

    def compose(self) -> ComposeResult:
        for column, header in enumerate(self.headers):
            yield self._align(MarkdownTableCellContents(header, classes="header").with_tooltip(header), column)
        for row_index, row in enumerate(self.rows, 1):
            for column, cell in enumerate(row):
                yield self._align(MarkdownTableCellContents(cell, classes=f"row{row_index} cell",
                                                            name=f"cell{row_index}.{column + 1}")
                                  .with_tooltip(cell.plain), column)
            self.last_row = row_index

    async def _update_rows(self, updated_rows: list[list[Content]]) -> None:
        """Rows that arrive while the answer streams: Textual's, aligned."""
        self.styles.grid_size_columns = len(self.headers)
        await self.query_children(f".cell.row{self.last_row}").remove()
        cells: list[Static] = []
        row_index = self.last_row
        for row_index, row in enumerate(updated_rows, self.last_row):
            cells += [self._align(Static(cell, classes=f"row{row_index} cell").with_tooltip(cell), column)
                      for column, cell in enumerate(row)]
        self.last_row = row_index
        self.rows = [*self.rows[:-1], *updated_rows] if self.rows else updated_rows
        self._fit()
        await self.mount_all(cells)


class AlignedTable(MarkdownTable):
    """A Markdown table block drawn by ``AlignedTableContent``."""

    def compose(self) -> ComposeResult:
        headers, rows = self._get_headers_and_rows()
        self._headers = headers
        self._rows = rows
        yield AlignedTableContent(headers, rows, column_alignments(self))


TABLE_BLOCKS: dict[str, type[MarkdownBlock]] = {"table_open": AlignedTable}
