"""Untrusted text made inert for a terminal: the one sanitizer every surface that draws model,
tool, skill or memory text on a terminal uses (the TUI's panes and chat, headless output to a TTY).

Why: neither Rich nor Textual strips ESC, so a tool output or an answer holding ``ESC]52;c;…``
sets the user's clipboard, ``ESC]0;…`` retitles the window, and CSI sequences move the cursor or
repaint the screen. Removed here: every escape sequence (CSI, OSC, DCS/SOS/PM/APC strings, two-byte
escapes), C0 controls except newline and tab, C1 controls (8-bit CSI/OSC included), a lone carriage
return (it overwrites the line), and the bidi overrides that make text read differently from what
it is ("Trojan Source"). No Textual or Rich here: the core may import it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

# ESC then: CSI (params, intermediates, final), OSC/DCS/SOS/PM/APC strings up to BEL or ST (or the
# end of the text), or any two-byte escape.
_ESCAPE = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*[@-~]?"
    r"|[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[ -~]?"
    r")"
)
# 8-bit forms: CSI (0x9b) and the string introducers (0x90 DCS, 0x98 SOS, 0x9d OSC, 0x9e PM, 0x9f APC).
_C1_SEQUENCE = re.compile(r"\x9b[0-?]*[ -/]*[@-~]?|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# How far back an unfinished sequence at the end of a streamed chunk is held for the next chunk.
HOLD_LIMIT = 512


def printable(text: str) -> str:
    """``text`` safe to draw: escape sequences, control and bidi-override characters removed.

    Newlines and tabs are kept; ``\\r\\n`` becomes ``\\n``.
    """
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    text = _ESCAPE.sub("", text)
    text = _C1_SEQUENCE.sub("", text)
    text = _CONTROL.sub("", text)
    return _BIDI.sub("", text)


def well_formed(value: Any) -> Any:
    """``value`` (a string, or strings inside lists and dicts) as UTF-8 can hold it: a lone
    surrogate (a model's JSON ``"\\ud800"``, a file name that is no UTF-8) becomes U+FFFD, so
    SQLite, a log or a provider's request never raises on it; pairs and other text are kept."""
    if isinstance(value, str):
        if not any("\ud800" <= c <= "\udfff" for c in value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {well_formed(k): well_formed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [well_formed(v) for v in value]
    return value


def printable_data(value: Any) -> Any:
    """``printable`` applied to every string inside ``value`` (dicts, lists, tuples, dataclass
    instances such as events; dict keys too). Other values are returned as they are."""
    if isinstance(value, str):
        return printable(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: printable_data(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(printable_data(v) for v in value)
    return value


class StreamCleaner:
    """``printable`` for text that arrives in pieces: a sequence split across two pieces is held
    back until it is complete, so its payload is removed with it instead of shown as text."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        cut = _unfinished_tail(text)
        if cut is not None:
            text, self._held = text[:cut], text[cut:]
        return printable(text)

    def flush(self) -> str:
        """The end of the stream: whatever was held, cleaned."""
        held, self._held = self._held, ""
        return printable(held)


_STRING_START = "]PX^_"


def _unfinished_tail(text: str) -> int | None:
    """Where an escape sequence that may continue in the next piece starts, if one does."""
    start = max(text.rfind("\x1b"), text.rfind("\x9b"), text.rfind("\x9d"))
    if start < 0 or len(text) - start > HOLD_LIMIT:
        return None
    tail = text[start:]
    if tail in ("\x1b", "\x9b", "\x9d"):
        return start
    if tail[0] == "\x9d" or (tail[0] == "\x1b" and tail[1] in _STRING_START):
        return None if ("\x07" in tail or "\x1b\\" in tail[1:] or "\x9c" in tail) else start
    body = tail[2:] if tail[0] == "\x1b" and tail[1] == "[" else tail[1:] if tail[0] == "\x9b" else None
    if body is None:
        return None
    return None if re.search(r"[@-~]", body) else start
