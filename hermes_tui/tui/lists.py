"""Markdown lists that are cheap to stream.

Why: Textual's ``Markdown`` lays out a list as four widgets per item (a row, its bullet, a
column, the item's paragraph), and new widgets are what a screen update pays most for (styles,
layout, first render). While an answer streamed at ~1,000 tokens/s, the screen updates that
brought a new list on screen took 60-90 ms of the app's thread, and a key typed then waited as
long (bench/stream_render.py). Two remedies, one per kind of list:

* A *simple* list, where each item is one paragraph (most lists in answers), is one widget that
  draws its bullets and the hanging indent itself (``ItemsVisual``); it grows by taking the
  re-parsed items, without mounting anything.
* Any other list (nested lists, code inside an item) keeps Textual's widgets but grows in place:
  on every append Textual would remove the list and mount it anew; here it keeps the items it
  has, replaces its last (the only one still open) and adds the new ones. Items before the last
  never change when text is appended, so the result is the widget tree a full rebuild gives.

Either way the screen shows what Textual's own lists show (tested cell by cell).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.style import Style as RichStyle
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.css.styles import RulesMap
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

Item = tuple[str, Content]  # the bullet (or number) and the item's text


class ItemsVisual(Visual):
    """A simple list: each item's bullet, then its text wrapped beside it, indented under it.

    The texts are one Content, a line per item, rendered by Content itself: so wrapping, inline
    styles, links and the selection's highlight are Textual's own, and a selection's (x, y)
    offsets are (column in the item, item number).
    """

    def __init__(self, bullets: list[Content], text: Content) -> None:
        self.bullets = bullets
        self.text = text
        self.indent = max((bullet.cell_length for bullet in bullets), default=0)

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        inner = width - self.indent
        if inner <= 0:
            return []
        lines = self.text.render_strips(inner, None, style, options)
        blank = Content.styled(" " * self.indent, ".list--bullet")
        strips: list[Strip] = []
        first = 0  # the item's first line in ``lines``
        for bullet, line in zip(self.bullets, self.text.split(allow_blank=True)):
            rows = line.get_height(options.rules, inner)
            for row in range(rows if line.plain else 0):  # an empty item shows nothing, as in Textual
                head = (blank if row else bullet).render_strips(self.indent, 1, style, options)[0]
                strips.append(_with_offsets(head, lines[first + row], inner, style))
            first += rows
        return strips[:height] if height is not None else strips

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.indent + self.text.get_optimal_width(rules, container_width - self.indent)

    def get_minimal_width(self, rules: RulesMap) -> int:
        return self.indent + self.text.get_minimal_width(rules)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return sum(line.get_height(rules, width - self.indent) for line in self.text.split(allow_blank=True)
                   if line.plain)


def _with_offsets(head: Strip, text: Strip, width: int, style: Style) -> Strip:
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


def simple_items(items: Iterable[MarkdownBlock]) -> list[Content] | None:
    """Each item's text, if every item is one paragraph on one line (or empty); else None."""
    texts: list[Content] = []
    for item in items:
        if not isinstance(item, MarkdownListItem):
            continue
        blocks = item._blocks
        if not blocks:  # "- " while it streams, say
            texts.append(Content(""))
        elif len(blocks) == 1 and type(blocks[0]) is MarkdownParagraph and "\n" not in blocks[0]._content.plain:
            texts.append(blocks[0]._content)
        else:
            return None
    return texts


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

    def _simple(self, blocks: list[MarkdownBlock]) -> list[Item] | None:
        texts = simple_items(blocks)
        if texts is None:
            return None
        return list(zip(self.symbols([b for b in blocks if isinstance(b, MarkdownListItem)]), texts))

    def compose(self) -> ComposeResult:
        self.items = self._simple(self._blocks)
        if self.items is None:
            yield from super().compose()  # type: ignore[misc]
        self._blocks.clear()

    def render(self) -> Visual:
        if self.items is None:
            return super().render()  # type: ignore[misc]
        if self._drawn is None:
            self._drawn = ItemsVisual([Content.styled(symbol, ".list--bullet") for symbol, _ in self.items],
                                      Content("\n").join(text for _, text in self.items))
        return self._drawn

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, a line per item; an item selected from its start keeps its bullet,
        as with Textual's own lists."""
        if self.items is None:
            return super().get_selection(selection)  # type: ignore[misc]
        lines = []
        for y, (symbol, text) in enumerate(self.items):
            if (span := selection.get_span(y)) is not None:
                start, end = span
                lines.append((symbol.strip() + " " if start == 0 else "") + text.plain[start:None if end == -1 else end])
        return "\n".join(lines), "\n"

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        """Take the longer re-parse of this list: its items, else grow in place, else rebuild."""
        assert isinstance(self, MarkdownList)
        if type(block) is type(self):
            items = self._simple(block._blocks)
            if items is not None and self.items is not None:
                self.items, self._drawn = items, None
                self.refresh(layout=True)
                return
            if items is None and self.items is None and await _grow_list(self, block):
                return
        await super()._update_from_block(block)  # type: ignore[misc]


BULLET_STYLE = """
MarkdownList > .list--bullet { color: $text-primary; }
MarkdownList:light > .list--bullet { color: $text-secondary; }
"""  # MarkdownBullet's colours


class SimpleBulletList(SimpleItems, MarkdownBulletList):
    COMPONENT_CLASSES = {"list--bullet"}
    DEFAULT_CSS = BULLET_STYLE
    SCOPED_CSS = False

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        return [item.bullet for item in items]


class SimpleOrderedList(SimpleItems, MarkdownOrderedList):
    COMPONENT_CLASSES = {"list--bullet"}
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
