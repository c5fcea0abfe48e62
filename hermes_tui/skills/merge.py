"""Merging a pending proposal into a skill the user has changed since (the Skills pane's F8).

A proposal is kept pending because the file is the user's: they edited it after Hermes wrote it
(or Hermes never wrote it). Accepting it must start from the file on disk, so the bodies are
merged three ways: what the proposal was made from (the base), the file now (the user's) and the
proposal. Lines only the user changed stay as the user left them, lines only the proposal changed
take the proposal's text. Where both changed the same lines, both are kept, the user's first:
nothing is dropped silently, the caller says how many such places there were, and the F7 diff
shows the merged result before F8 writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class Merged:
    """The result of a three-way merge of a skill's text."""

    text: str
    overlaps: int  # places where both sides changed the same lines (both kept)


@dataclass(frozen=True)
class _Change:
    """One side's change to the base, as a replaced range of lines."""

    start: int  # the base lines [start, end) are replaced by ``lines``
    end: int
    lines: list[str]
    ours: bool


def merge_text(base: str, ours: str, theirs: str) -> Merged:
    """``ours`` with the changes ``theirs`` made to ``base``; see the module docstring."""
    base_lines, our_lines, their_lines = base.split("\n"), ours.split("\n"), theirs.split("\n")
    changes = sorted(_changes(base_lines, our_lines, True) + _changes(base_lines, their_lines, False),
                     key=lambda c: (c.start, c.end))
    out: list[str] = []
    at = overlaps = 0
    index = 0
    while index < len(changes):
        group = [changes[index]]
        low, high = group[0].start, group[0].end
        index += 1
        while index < len(changes) and _overlaps(changes[index], low, high):
            group.append(changes[index])
            high = max(high, changes[index].end)
            index += 1
        out += base_lines[at:low]
        mine = [c for c in group if c.ours]
        others = [c for c in group if not c.ours]
        if not others or not mine:
            out += _applied(base_lines, group, low, high)
        else:
            our_side, their_side = _applied(base_lines, mine, low, high), _applied(base_lines, others, low, high)
            out += our_side if our_side == their_side else our_side + their_side
            overlaps += our_side != their_side
        at = high
    out += base_lines[at:]
    return Merged("\n".join(out), overlaps)


def _changes(base: list[str], other: list[str], ours: bool) -> list[_Change]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [_Change(i1, i2, other[j1:j2], ours) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _overlaps(change: _Change, low: int, high: int) -> bool:
    """Does ``change`` touch the base lines [low, high)? Two insertions at one place do too."""
    return change.start < high or (change.start == high == low)


def _applied(base: list[str], changes: list[_Change], low: int, high: int) -> list[str]:
    """The base lines [low, high) with one side's ``changes`` (all inside them) applied."""
    out: list[str] = []
    at = low
    for change in changes:
        out += base[at:change.start] + change.lines
        at = change.end
    return out + base[at:high]
