"""Lists that grow in place while an answer streams.

Why: on every append, Textual's ``Markdown`` re-parses the last top-level block and updates a
paragraph, a table or a code block in place, but removes a list's widget and mounts a new one.
An 8-item list is ~36 widgets, and new widgets are what a screen update pays most for (styles,
layout, first render): rebuilding a list at each append while it streams cost ~60 ms of the
app thread each time (bench/stream_render.py). Here a list keeps the items it has, replaces its
last (the only one still open) and adds the new ones.

Items before the last never change when text is appended (Textual renders tight and loose
lists alike), so the result is the widget tree a full rebuild would give (tested).
"""

from __future__ import annotations

from textual.containers import Horizontal
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBulletList,
    MarkdownList,
    MarkdownListItem,
    MarkdownOrderedList,
)


async def _grow_list(current: MarkdownList, new: MarkdownBlock) -> bool:
    """Update ``current`` to ``new`` (its re-parse, longer) in place; False: rebuild it."""
    if type(new) is not type(current):
        return False
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
    try:
        start = int(items[0].bullet)
    except ValueError:
        start = 1
    return len(str(start + shown - 1)) != len(str(start + len(items) - 1))


class GrowingBulletList(MarkdownBulletList):
    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if not await _grow_list(self, block):
            await super()._update_from_block(block)


class GrowingOrderedList(MarkdownOrderedList):
    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if not await _grow_list(self, block):
            await super()._update_from_block(block)


GROWING_BLOCKS: dict[str, type[MarkdownBlock]] = {
    "bullet_list_open": GrowingBulletList,
    "ordered_list_open": GrowingOrderedList,
}
