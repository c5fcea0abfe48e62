"""Markdown lists that are cheap to stream.

Why: Textual's ``Markdown`` lays out a list as four widgets per item (a row, its bullet, a
column, the item's paragraph), and new widgets are what a screen update pays most for (styles,
layout, first render). While an answer streamed at ~1,000 tokens/s, the screen updates that
brought a new list on screen took 60-90 ms of the app's thread, and a key typed then waited as
long (bench/stream_render.py). Two remedies, one per kind of list:

* A *simple* list, where each item is one paragraph, maybe followed by a simple list nested in
  it (most lists in answers), is one widget that draws its bullets and the hanging indents
  itself (``ItemsVisual``); it grows by taking the re-parsed items, without mounting anything.
* Any other list (code or several paragraphs in an item) keeps Textual's widgets but grows in place:
  on every append Textual would remove the list and mount it anew; here it keeps the items it
  has, replaces its last (the only one still open) and adds the new ones. Items before the last
  never change when text is appended, so the result is the widget tree a full rebuild gives.

Either way the screen shows what Textual's own lists show (tested cell by cell).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBulletList,
    MarkdownList,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownParagraph,
)


@dataclass
class Item:
    """One item of a simple list: its bullet (or number), its text, the simple list under it."""

    symbol: str
    text: Content
    sub: list[Item] | None = None

    @property
    def lines(self) -> int:
        """The item's lines in the list's text: its own, then its sub-list's."""
        return 1 + sum(item.lines for item in self.sub or ())


class ItemsVisual(Visual):
    """A simple list: each item's bullet, then its text wrapped beside it and indented under it,
    then the list nested in it (if any), indented as deep.

    Each item's text is rendered by Textual's Content (wrapping, inline styles, links, the
    selection's highlight). The list's text, for selections, has a line per item, nested items
    after their parent: a selection offset is (column in the item, line).
    """

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.bullets = [Content.styled(item.symbol, ".list--bullet") for item in items]
        self.subs = [ItemsVisual(item.sub) if item.sub else None for item in items]
        self.indent = max((bullet.cell_length for bullet in self.bullets), default=0)

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        inner = width - self.indent
        if inner <= 0:  # nested deeper than the screen is wide: bullets only, as in Textual
            return [bullet.render_strips(self.indent, 1, style, options)[0].crop(0, width)
                    for item, bullet in zip(self.items, self.bullets, strict=True) if item.text.plain][:height]
        blank = Content.styled(" " * self.indent, ".list--bullet").render_strips(self.indent, 1, style, options)[0]
        strips: list[Strip] = []
        y = 0  # the item's line in the list's text
        for item, bullet, sub in zip(self.items, self.bullets, self.subs, strict=True):
            if item.text.plain:  # an empty item shows nothing, as in Textual
                head = bullet.render_strips(self.indent, 1, style, options)[0]
                for row, line in enumerate(item.text.render_strips(inner, None, style, _from_line(options, y))):
                    strips.append(_row(blank if row else head, _moved(line, y), inner, style))
            if sub is not None:
                for line in sub.render_strips(inner, None, style, _from_line(options, y + 1)):
                    strips.append(_row(blank, _moved(line, y + 1), inner, style))
            y += item.lines
        return strips[:height] if height is not None else strips

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        inner = container_width - self.indent
        return self.indent + max((width for item, sub in zip(self.items, self.subs, strict=True) for width in (
            item.text.get_optimal_width(rules, inner), sub.get_optimal_width(rules, inner) if sub else 0)), default=0)

    def get_minimal_width(self, rules: RulesMap) -> int:
        return self.indent + max((width for item, sub in zip(self.items, self.subs, strict=True) for width in (
            item.text.get_minimal_width(rules), sub.get_minimal_width(rules) if sub else 0)), default=0)

    def get_height(self, rules: RulesMap, width: int) -> int:
        inner = width - self.indent
        if inner <= 0:  # nested deeper than the screen is wide: bullets only, as in Textual
            return sum(1 for item in self.items if item.text.plain) if width > 0 else 0
        return sum((item.text.get_height(rules, inner) if item.text.plain else 0)
                   + (sub.get_height(rules, inner) if sub else 0) for item, sub in zip(self.items, self.subs, strict=True))


def _from_line(options: RenderOptions, y: int) -> RenderOptions:
    """``options`` for a part of the list that starts at line ``y`` of its text."""
    selection = options.selection
    if selection is None or not y:
        return options
    start, end = (None if at is None else Offset(at.x, at.y - y) for at in selection)
    return replace(options, selection=Selection(start, end))


def _moved(strip: Strip, y: int) -> Strip:
    """``strip``, its selection offsets moved down by ``y`` lines (to the list's text)."""
    if not y:
        return strip
    moved = []
    for segment in strip:
        style = segment.style
        if style is not None and (offset := style.meta.get("offset")) is not None:
            style = style + RichStyle.from_meta({"offset": (offset[0], offset[1] + y)})
        moved.append(Segment(segment.text, style, segment.control))
    return Strip(moved, strip.cell_length)


def _row(head: Strip, text: Strip, width: int, style: Style) -> Strip:
    """One row: ``head`` (a bullet or the indent), then ``text`` padded to ``width``. Head and
    padding carry the selection offsets of the row's first and last characters, so a selection
    dragged over them starts or ends on that row (without, Textual takes the list's end)."""
    offsets = [(segment.style.meta["offset"], len(segment.text)) for segment in text
               if segment.style is not None and "offset" in segment.style.meta]
    if not offsets:
        return Strip.join([head, text])
    (first, _), ((x, y), length) = offsets[0], offsets[-1]
    end = style.rich_style + RichStyle.from_meta({"offset": (x + length, y)})
    return Strip.join([head.apply_style(RichStyle.from_meta({"offset": first})),
                       text.extend_cell_length(width, end)])


def simple_items(list_block: MarkdownList) -> list[Item] | None:
    """The items of ``list_block`` (parsed, not yet composed) if each is one paragraph on one
    line (or empty), or one followed by a simple list; else None."""
    items = [block for block in list_block._blocks if isinstance(block, MarkdownListItem)]
    symbols = list_block.symbols(items) if isinstance(list_block, SimpleItems) else []
    if len(symbols) != len(items):
        return None
    simple: list[Item] = []
    for symbol, item in zip(symbols, items, strict=True):
        blocks = item._blocks
        if not blocks:  # "- " while it streams, say
            simple.append(Item(symbol, Content("")))
            continue
        first, *rest = blocks
        if type(first) is not MarkdownParagraph or "\n" in first._content.plain:
            return None
        sub = simple_items(rest[0]) if len(rest) == 1 and isinstance(rest[0], MarkdownList) else None
        if rest and sub is None:
            return None
        simple.append(Item(symbol, first._content, sub))
    return simple


class SimpleItems:
    """Mixed into Textual's list classes, first: the list is drawn by one widget when its items
    are simple, by Textual's widgets otherwise. (Not a widget class itself: Textual takes a
    widget's CSS and type names from its first widget base, which must stay Textual's list.)"""

    items: list[Item] | None = None  # the items, while the list is drawn by this widget
    _drawn: ItemsVisual | None = None  # what they render to (layout asks for it several times)
    _blocks: list[MarkdownBlock]

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        """The bullet or number shown before each item, as Textual's own list shows them."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        self.items = simple_items(self)  # type: ignore[arg-type]  # self is the Markdown list this is mixed into
        if self.items is None:
            yield from super().compose()  # type: ignore[misc]  # the Markdown list this is mixed into has it
        self._blocks.clear()

    def render(self) -> Visual:
        if self.items is None:
            return super().render()  # type: ignore[misc]  # the Markdown list this is mixed into has it
        if self._drawn is None:
            self._drawn = ItemsVisual(self.items)
        return self._drawn

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, a line per item; an item selected from its start keeps its bullet
        (indented as deep as it is nested), as with Textual's own lists."""
        if self.items is None:
            return super().get_selection(selection)  # type: ignore[misc]  # the Markdown list this is mixed into has it
        selected = []
        for y, (depth, item) in enumerate(_walk(self.items)):
            if (span := selection.get_span(y)) is not None:
                start, end = span
                bullet = "  " * depth + item.symbol.strip() + " " if start == 0 else ""
                selected.append(bullet + item.text.plain[start:None if end == -1 else end])
        return "\n".join(selected), "\n"

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        """Take the longer re-parse of this list: its items, else grow in place, else rebuild."""
        assert isinstance(self, MarkdownList)
        if type(block) is type(self):
            items = simple_items(block)
            if items is not None and self.items is not None:
                self.items, self._drawn = items, None
                self.refresh(layout=True)
                return
            if items is None and self.items is None and await _grow_list(self, block):
                return
        await super()._update_from_block(block)  # type: ignore[misc]  # the Markdown list this is mixed into has it


def _walk(items: list[Item], depth: int = 0) -> Iterator[tuple[int, Item]]:
    """The items in the order of the list's text: each, then the items nested in it."""
    for item in items:
        yield depth, item
        yield from _walk(item.sub or [], depth + 1)


BULLET_STYLE = """
MarkdownList > .list--bullet { color: $text-primary; }
MarkdownList:light > .list--bullet { color: $text-secondary; }
"""  # MarkdownBullet's colours


class SimpleBulletList(SimpleItems, MarkdownBulletList):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"list--bullet"}
    DEFAULT_CSS = BULLET_STYLE
    SCOPED_CSS = False

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        return [item.bullet for item in items]


class SimpleOrderedList(SimpleItems, MarkdownOrderedList):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"list--bullet"}
    DEFAULT_CSS = BULLET_STYLE
    SCOPED_CSS = False

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        """Numbers from the first item's, right-aligned to the widest (MarkdownOrderedList)."""
        start = _start(items)
        numbers = [f"{number}. " for number in range(start, start + len(items))]
        width = max((len(number) for number in numbers), default=0)
        return [number.rjust(width + 1) for number in numbers]


def _start(items: list[MarkdownListItem]) -> int:
    try:
        return int(items[0].bullet) if items else 1
    except ValueError:
        return 1


async def _grow_list(current: MarkdownList, new: MarkdownBlock) -> bool:
    """Update ``current``, drawn by Textual's widgets, to ``new`` (its re-parse, longer) in
    place; False: rebuild it."""
    rows = list(current.query_children(Horizontal))
    items = [block for block in new._blocks if isinstance(block, MarkdownListItem)]
    if not rows or len(items) < len(rows) or _numbers_widen(current, items, len(rows)):
        return False
    new_rows = list(new.compose())  # one row (bullet, item blocks) per item
    await rows[-1].remove()
    await current.mount_all(new_rows[len(rows) - 1:])
    return True


def _numbers_widen(current: MarkdownList, items: list[MarkdownListItem], shown: int) -> bool:
    """An ordered list pads every number to the widest: going from 9 items to 10 changes all."""
    if not isinstance(current, MarkdownOrderedList):
        return False
    start = _start(items)
    return len(str(start + shown - 1)) != len(str(start + len(items) - 1))


LIST_BLOCKS: dict[str, type[MarkdownBlock]] = {
    "bullet_list_open": SimpleBulletList,
    "ordered_list_open": SimpleOrderedList,
}
