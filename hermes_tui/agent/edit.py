"""``edit_file``: replace exact text in a file, so a one-line fix never resends the whole file.

* Each change's ``old`` must occur exactly once (or ``replace_all``). Several changes in one call
  apply in order, all or none. A change whose ``old`` matches only when whitespace is ignored is
  applied when that match is unique, re-indented to the file, and the result says so. A change that
  matches nowhere fails with the closest lines and how to retry.
* The file keeps its encoding (UTF-8 with or without BOM, UTF-16 with BOM, else Latin-1, which
  keeps every byte), its CRLF line endings, its final newline and its mode; it is replaced through
  ``paths.replace_file`` (temp file, rename), opened through the same confinement as every write.
* The model gets a compact diff with line numbers; the approval dialog a full one (``preview``).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.agent.paths import (
    PathError,
    WriteCancelled,
    display_path,
    open_in_workspace,
    real_target,
    replace_file,
)
from hermes_tui.agent.reading import numbered
from hermes_tui.agent.toolkit import BOOL, STR, ApprovalSpec, Tool, ToolContext, ToolResult, schema

EDIT_CAP = 32 * 1024 * 1024  # bytes: larger files are refused (run_bash and sed can still do it)
DIFF_LINES = 60  # diff lines the model gets back; the approval dialog shows every line
DIFF_WIDTH = 300  # characters of one diff line the model gets back
SHOWN_PLACES = 8  # line numbers listed for an ambiguous match
_NUMBERED = re.compile(r" *\d+\t")
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


class EditError(ValueError):
    """An edit that cannot be applied; the message says why and how to retry."""


@dataclass(frozen=True)
class Change:
    """One replacement an edit asks for: ``old`` text (unique unless ``replace_all``) becomes
    ``new``."""

    old: str
    new: str
    replace_all: bool = False


@dataclass(frozen=True)
class Decoded:
    """A file's text with ``\\n`` newlines, and what it takes to write it back byte-faithfully."""

    text: str
    encoding: str
    bom: bytes
    crlf: bool

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = text.replace("\n", "\r\n")
        try:
            return self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise EditError(f"the new text has {exc.object[exc.start:exc.end]!r}, which this file's encoding "
                            f"({self.encoding}) cannot hold; nothing was changed") from None

    def kept(self) -> str:
        """What the result says was kept, when it is worth saying."""
        notes = [f"{self.encoding} encoding" if self.encoding != "utf-8" or self.bom else "",
                 "CRLF line endings" if self.crlf else ""]
        return " and ".join(note for note in notes if note)


@dataclass(frozen=True)
class Applied:
    """An edit worked out in memory before anything is written: the text before and after, and
    what to tell the model."""

    before: str
    after: str
    replacements: int
    notes: tuple[str, ...]


def decode(data: bytes) -> Decoded:
    bom, encoding = next(((b, e) for b, e in _BOMS if data.startswith(b)), (b"", ""))
    body = data[len(bom):]
    if not encoding:
        if b"\x00" in data[:8192]:
            raise EditError("it is a binary file; edit_file changes text files only")
        try:
            text, encoding = body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            text, encoding = body.decode("latin-1"), "latin-1"  # every byte maps to one character
    else:
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            raise EditError(f"it starts with a {encoding} mark but is not valid {encoding}: {exc.reason}") from None
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    return Decoded(text.replace("\r\n", "\n") if crlf else text, encoding, bom, crlf)


def parse_changes(arguments: dict[str, Any]) -> list[Change]:
    """The changes of one call: ``old``/``new``/``replace_all``, or an ``edits`` list of them."""
    single = "old" in arguments or "new" in arguments
    if single and arguments.get("edits"):
        raise EditError("give either old/new or an edits list, not both")
    items = [arguments] if single else arguments.get("edits") or []
    if not items:
        raise EditError("nothing to do: give old and new (or an edits list of {old, new})")
    changes = []
    for number, item in enumerate(items, 1):
        label = "" if single else f"edit {number}: "
        unknown = set() if single else set(item) - {"old", "new", "replace_all"}
        if unknown:
            raise EditError(f"{label}unexpected key(s) {', '.join(sorted(unknown))}; allowed: old, new, replace_all")
        old, new, every = item.get("old"), item.get("new"), item.get("replace_all", False)
        if not isinstance(old, str) or not isinstance(new, str) or not isinstance(every, bool):
            raise EditError(f"{label}old and new must both be strings, and replace_all true or false")
        changes.append(Change(old, new, every))
    return changes


def apply_changes(text: str, changes: list[Change], *, crlf: bool = False) -> Applied:
    """Apply ``changes`` in order to ``text``; ``EditError`` (nothing applied) if one cannot be."""
    after, count, notes = text, 0, []
    for number, change in enumerate(changes, 1):
        label = f"edit {number} of {len(changes)}: " if len(changes) > 1 else ""
        old, new = change.old, change.new
        if crlf:
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        if not old:
            raise EditError(f"{label}old is empty; give the exact text to replace (use write_file for a new file)")
        if old == new:
            raise EditError(f"{label}old and new are the same; nothing to change")
        before = after
        try:
            after, done, note = _apply_one(after, old, new, change.replace_all)
        except EditError as exc:
            raise EditError(f"{label}{exc}") from None
        if after == before:
            raise EditError(f"{label}the file already reads like new there; nothing to change")
        count += done
        if note:
            notes.append(f"{label}{note}")
    return Applied(text, after, count, tuple(notes))


def _apply_one(text: str, old: str, new: str, every: bool) -> tuple[str, int, str]:
    found = text.count(old)
    if found == 1 or (found and every):
        return text.replace(old, new), found, ""
    if found > 1:
        raise EditError(f"old occurs {found} times (lines {_places(text, old)}); add surrounding lines to make "
                        "it unique, or set replace_all to change every one")
    stripped = _without_line_numbers(old)
    if stripped is not None and (text.count(stripped) == 1 or (every and stripped in text)):
        done = text.count(stripped)
        return (text.replace(stripped, _without_line_numbers(new) or new), done,
                "old held read_file's line numbers; they were dropped to match")
    return _apply_loose(text, old, new, every)


def _places(text: str, needle: str) -> str:
    lines: list[str] = []
    start = 0
    while len(lines) < SHOWN_PLACES and (index := text.find(needle, start)) >= 0:
        lines.append(str(text.count("\n", 0, index) + 1))
        start = index + 1
    more = text.count(needle) - len(lines)
    return ", ".join(lines) + (f" and {more} more" if more > 0 else "")


def _without_line_numbers(text: str) -> str | None:
    """``text`` without read_file's ``<number><TAB>`` prefixes, when every non-empty line has one."""
    lines = text.split("\n")
    if not any(lines) or not all(_NUMBERED.match(line) or not line for line in lines):
        return None
    return "\n".join(line[m.end():] if (m := _NUMBERED.match(line)) else line for line in lines)


def _norm(line: str) -> str:
    return " ".join(line.split())


def _apply_loose(text: str, old: str, new: str, every: bool) -> tuple[str, int, str]:
    """Whole lines equal to ``old``'s when whitespace is ignored; ``new`` takes the file's indentation."""
    ending = old.endswith("\n")
    key = [_norm(line) for line in (old[:-1] if ending else old).split("\n")]
    new_lines = (new[:-1] if ending and new.endswith("\n") else new).split("\n")
    lines = text.split("\n")
    if not any(key):
        raise EditError("old is only whitespace and is not in the file")
    first = key[0]
    starts = [i for i, line in enumerate(lines) if _norm(line) == first and
              all(i + k < len(lines) and _norm(lines[i + k]) == key[k] for k in range(1, len(key)))]
    if not starts:
        raise EditError(_not_found(lines, key))
    if len(starts) > 1 and not every:
        shown = ", ".join(str(s + 1) for s in starts[:SHOWN_PLACES])
        raise EditError(f"old is not in the file as given, and matches {len(starts)} places when whitespace is "
                        f"ignored (lines {shown}); copy it exactly from read_file, with more lines to make it unique")
    span = len(key)
    for start in reversed(starts):
        lines[start:start + span] = _reindented(new_lines, old.split("\n"), lines[start:start + span])
    where = ", ".join(f"lines {s + 1}-{s + span}" if span > 1 else f"line {s + 1}" for s in starts[:SHOWN_PLACES])
    return ("\n".join(lines), len(starts),
            f"old matched only when whitespace is ignored ({where}); new was re-indented to the file's indentation")


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindented(new_lines: list[str], old_lines: list[str], file_lines: list[str]) -> list[str]:
    """``new_lines`` with each indentation ``old`` used replaced by the file's at the same line."""
    mapping = {_lead(o): _lead(f) for o, f in zip(old_lines, file_lines, strict=False) if o.strip()}
    if all(o == f for o, f in mapping.items()):
        return new_lines
    prefixes = sorted(mapping, key=len, reverse=True)
    out = []
    for line in new_lines:
        lead = _lead(line)
        prefix = next((p for p in prefixes if lead.startswith(p)), None) if line.strip() else None
        out.append(line if prefix is None else mapping[prefix] + line[len(prefix):])
    return out


def _not_found(lines: list[str], key: list[str]) -> str:
    """Where ``old`` comes closest: the window most of its lines agree with, shown numbered."""
    start = _closest(lines, key)
    advice = ("Copy old exactly from the file (without read_file's line numbers), or read_file again if "
              "the file changed, then retry.")
    if start is None:
        return f"old was not found in the file, and none of its lines is there. {advice}"
    real = len(lines) - (lines[-1] == "")  # a final newline does not start another line
    low, high = max(0, start - 2), min(real, start + len(key) + 2, start + 30)
    shown = "\n".join(numbered(n + 1, lines[n][:DIFF_WIDTH]) for n in range(low, high))
    return f"old was not found in the file. The closest lines are {low + 1}-{high}:\n{shown}\n{advice}"


def _closest(lines: list[str], key: list[str]) -> int | None:
    wanted: dict[str, list[int]] = {}
    for k, line in enumerate(key):
        if line:
            wanted.setdefault(line, []).append(k)
    votes: dict[int, int] = {}
    for index, line in enumerate(lines):
        offsets = wanted.get(_norm(line))
        for k in offsets or ():
            votes[index - k] = votes.get(index - k, 0) + 1
    if votes:
        return max(votes, key=lambda start: (votes[start], -start))
    probe = next(line for line in key if line)
    if len(lines) > 50_000:
        return None
    normed = [_norm(line) for line in lines]
    close = difflib.get_close_matches(probe, normed, n=1, cutoff=0.6)
    if not close:
        return None
    return max(0, normed.index(close[0]) - key.index(probe))


def _prefix(a: str, b: str, limit: int) -> int:
    """Length of the common start of ``a`` and ``b`` (at most ``limit``), by slice comparisons (C speed)."""
    return _common(lambda low, high: a[low:high] == b[low:high], limit)


def _suffix(a: str, b: str, limit: int) -> int:
    """Length of the common end of ``a`` and ``b`` (at most ``limit``)."""
    return _common(lambda low, high: a[len(a) - high:len(a) - low] == b[len(b) - high:len(b) - low], limit)


def _common(same: Callable[[int, int], bool], limit: int) -> int:
    """The largest n <= limit whose first n positions are all ``same(low, high)`` (a span of them)."""
    good, step = 0, 1 << 16
    while good < limit and same(good, min(good + step, limit)):  # whole blocks first
        good = min(good + step, limit)
    high = min(good + step, limit)
    while good < high:  # then halve the block that differs
        mid = (good + high + 1) // 2
        good, high = (mid, high) if same(good, mid) else (good, mid - 1)
    return good


def _lines_before(text: str, start: int, count: int) -> list[str]:
    begin = start
    for _ in range(count):
        if begin == 0:
            break
        begin = text.rfind("\n", 0, begin - 1) + 1
    return text[begin:start].split("\n")[:-1] if begin < start else []


def _lines_after(text: str, end: int, count: int) -> list[str]:
    """Up to ``count`` lines after the newline at ``end`` (a final newline starts no line)."""
    lines: list[str] = []
    at = end + 1
    while len(lines) < count and at < len(text):
        stop = text.find("\n", at)
        stop = len(text) if stop < 0 else stop
        lines.append(text[at:stop])
        at = stop + 1
    return lines


def diff_lines(before: str, after: str, *, limit: int | None = None, width: int | None = None) -> list[str]:
    """A numbered diff: ``-<old number>``, ``+<new number>``, ``<space><new number>`` for context.

    Only the changed middle of the file is split into lines, so a 5 MB file costs a few block
    comparisons, not a pass of Python over every line."""
    shortest = min(len(before), len(after))
    same = _prefix(before, after, shortest)
    start = before.rfind("\n", 0, same) + 1  # the first changed line starts here, in both
    tail = _suffix(before, after, shortest - same)
    end_old, end_new = before.find("\n", len(before) - tail), after.find("\n", len(after) - tail)
    end_old = len(before) if end_old < 0 or tail == 0 else end_old
    end_new = len(after) if end_new < 0 or tail == 0 else end_new
    first = before.count("\n", 0, start)  # lines before the change
    a, b = before[start:end_old].split("\n"), after[start:end_new].split("\n")
    context = _lines_before(before, start, 2)
    out = [" " + numbered(first - len(context) + k + 1, line) for k, line in enumerate(context)]
    # Blank lines never anchor a match (they would pair up blank lines far from the change).
    matcher = difflib.SequenceMatcher(lambda line: not line.strip(), a, b, autojunk=len(a) > 2000)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            run = [" " + numbered(first + j + 1, b[j]) for j in range(j1, j2)]
            out += run if len(run) <= 5 else [*run[:2], "   ...", *run[-2:]]
            continue
        out += ["-" + numbered(first + i + 1, a[i]) for i in range(i1, i2)]
        out += ["+" + numbered(first + j + 1, b[j]) for j in range(j1, j2)]
    out += [" " + numbered(first + len(b) + k + 1, line) for k, line in enumerate(_lines_after(after, end_new, 2))]
    if width is not None:
        out = [line if len(line) <= width else line[:width] + "…" for line in out]
    if limit is not None and len(out) > limit:
        out = [*out[:limit], f"   ... {len(out) - limit} more diff lines not shown; read_file shows the result"]
    return out


def counts(lines: list[str]) -> tuple[int, int]:
    return sum(1 for line in lines if line.startswith("+")), sum(1 for line in lines if line.startswith("-"))


def _load(ctx_workspace: Path, path: str, home: Path | None) -> tuple[Decoded, Path]:
    with open_in_workspace(ctx_workspace, path, "read", home=home) as (fd, real):
        size = os.fstat(fd).st_size
        if size > EDIT_CAP:
            raise EditError(f"it is {size / 1e6:.0f} MB, over edit_file's {EDIT_CAP // 2**20} MB; use run_bash (sed)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    return decode(b"".join(chunks)), real


def plan(workspace: Path, path: str, arguments: dict[str, Any], home: Path | None = None) -> tuple[Decoded, Applied, Path]:
    """Read ``path`` and apply the call's changes in memory; raises ``EditError``/``PathError``."""
    changes = parse_changes(arguments)
    decoded, real = _load(workspace, path, home)
    return decoded, apply_changes(decoded.text, changes, crlf=decoded.crlf), real


@dataclass(frozen=True)
class Preview:
    """What the approval dialog shows: the whole diff, or why the edit will fail."""

    diff: tuple[str, ...]
    summary: str
    problem: str = ""


def preview(workspace: Path, path: str, arguments: dict[str, Any], home: Path | None = None) -> Preview:
    try:
        decoded, applied, _real = plan(workspace, path, arguments, home)
    except (EditError, PathError) as exc:
        return Preview((), "this edit will fail; the model will be told why", f"{path}: {exc}")
    lines = diff_lines(applied.before, applied.after)
    added, removed = counts(lines)
    kept = f" · keeps {decoded.kept()}" if decoded.kept() else ""
    summary = f"{_replacements(applied.replacements)}: +{added} −{removed} lines{kept}"
    return Preview(tuple(lines), summary + "".join(f" · {note}" for note in applied.notes))


def _replacements(count: int) -> str:
    return "1 replacement" if count == 1 else f"{count:,} replacements"


def edit_file(ctx: ToolContext, path: str, **arguments: Any) -> ToolResult:
    try:
        decoded, applied, real = plan(ctx.workspace, path, arguments, ctx.home)
        data = decoded.encode(applied.after)
        if ctx.cancel.is_set():
            return ToolResult(False, f"edit_file: cancelled by the user; {path!r} was not changed")
        replace_file(ctx.workspace, path, data, home=ctx.home, cancel=ctx.cancel.is_set)
    except EditError as exc:
        return ToolResult(False, f"edit_file: {path}: {exc}\nNothing was changed.")
    except WriteCancelled:
        return ToolResult(False, f"edit_file: cancelled by the user; {path!r} was not changed")
    lines = diff_lines(applied.before, applied.after, limit=DIFF_LINES, width=DIFF_WIDTH)
    added, removed = counts(lines)
    kept = f"; kept its {decoded.kept()}" if decoded.kept() else ""
    head = f"Edited {display_path(ctx.workspace, real)}: {_replacements(applied.replacements)}, +{added} −{removed} lines{kept}."
    return ToolResult(True, "\n".join([head, *applied.notes, *lines]))


EDIT_TOOL = Tool(
    "edit_file",
    "Replace exact text in a file. old must match exactly once (copy it from read_file, without line "
    "numbers) unless replace_all. Several changes: edits=[{old, new, replace_all}], all or none. "
    "Returns a numbered diff.",
    schema({"path": STR, "old": STR, "new": STR, "replace_all": BOOL,
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "old": STR, "new": STR, "replace_all": BOOL}, "required": ["old", "new"]}}}, ["path"]),
    edit_file, cancellable=True, summary_arg="path", family="write", changes_files=True,
    approval=ApprovalSpec("path", "This file", "All edits", "edit", lasting=True, noun="edits of",
                          target=real_target),
)
