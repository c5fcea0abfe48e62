"""``read_file``: numbered lines, paged by line, so an edit can cite exactly what the model read.

Each line comes as ``<number><TAB><text>``; a page ends at ``limit`` lines or at ``READ_CAP`` bytes of
output, whichever comes first, with a note giving the ``offset`` to read on. The file is read in
chunks and never held whole, so a page from the middle of a big file costs only a scan to it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from hermes_tui.agent.paths import open_in_workspace
from hermes_tui.agent.toolkit import INT, STR, Tool, ToolContext, ToolResult, schema

READ_CAP = 50_000  # bytes of output per call; offset/limit page through the rest
LINE_LIMIT = 2_000  # lines per call by default
LONG_LINE = 2_000  # characters shown of one line; the rest is named, not shown
COUNT_UP_TO = 64 * 1024 * 1024  # bytes scanned past the page to give the file's line count
_CHUNK = 256 * 1024


def _lines(fd: int, ctx: ToolContext) -> Iterator[bytes]:
    """The file's lines as bytes (with their newline), read in chunks; stops when cancelled."""
    rest = b""
    while not ctx.cancel.is_set():
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        pieces = (rest + chunk).split(b"\n")
        rest = pieces.pop()
        for piece in pieces:
            yield piece + b"\n"
    if rest:
        yield rest


def numbered(number: int, line: str) -> str:
    """One line as read_file shows it (the edit diff uses the same form)."""
    return f"{number:>5}\t{line}"


def read_file(ctx: ToolContext, path: str, offset: int = 1, limit: int = LINE_LIMIT) -> ToolResult:
    first, limit = max(1, int(offset)), max(1, int(limit))
    with open_in_workspace(ctx.workspace, path, "read", home=ctx.home) as (fd, _real):
        size = os.fstat(fd).st_size
        head = os.pread(fd, 8192, 0)
        if b"\x00" in head:
            return ToolResult(False, f"read_file: {path!r} is a binary file ({size:,} bytes); it cannot be shown as text")
        shown: list[str] = []
        used, number, last, scanned, cut = 0, 0, 0, 0, False
        for raw in _lines(fd, ctx):
            number += 1
            scanned += len(raw)
            if number < first or cut:
                if cut and scanned > COUNT_UP_TO:
                    number = -1  # too big to count all of it
                    break
                continue
            text = raw.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
            if len(text) > LONG_LINE:
                text = text[:LONG_LINE] + f"… [{len(text) - LONG_LINE:,} more characters on this line]"
            line = numbered(number, text)
            if shown and (len(shown) >= limit or used + len(line.encode()) + 1 > READ_CAP):
                cut = True
                continue
            shown.append(line)
            used += len(line.encode()) + 1
            last = number
        if ctx.cancel.is_set():
            return ToolResult(False, "read_file: cancelled by the user")
    total = f"{number:,}" if number >= 0 else "more than that"
    if not shown:
        if number == 0:
            return ToolResult(True, f"{path}: (empty file)")
        return ToolResult(False, f"read_file: offset {first} is past the end; {path!r} has {total} lines")
    text = "\n".join(shown)
    if cut:
        text += f"\n[... lines {first}-{last} of {total} shown; call read_file with offset={last + 1} to read on ...]"
    elif first > 1:
        text += f"\n[... lines {first}-{last} of {total} shown: end of file ...]"
    return ToolResult(True, text)


READ_TOOL = Tool(
    "read_file",
    "Read a text file as numbered lines (number, tab, text; the numbers are not in the file), at most "
    f"{LINE_LIMIT} lines or {READ_CAP} bytes a call; a note gives the offset to read on.",
    schema({"path": STR | {"description": "relative to the workspace"},
            "offset": INT | {"description": "first line (default 1)"},
            "limit": INT | {"description": f"lines (default {LINE_LIMIT})"}}, ["path"]),
    read_file, cancellable=True, summary_arg="path",
)
