"""Secret values: which variables hold them, and how tool output and the shell are kept free of them.

``Secrets.scrub`` is a second line of defence behind the file tools' refusals and the shell's sandbox
(``agent/sandbox.py``), which keep secrets out of reach: whatever a tool prints still has every
configured secret replaced by ``[redacted: NAME]`` before it reaches the model, memory, logs or a
screen. Only the characters that encode the secret are replaced. It finds a value as it is, reversed,
spread over lines or spaces (``fold``), in hex, base64 or base32 at any byte alignment (also wrapped,
``base64``, ``xxd -p``), gzipped then base64-encoded, and in the dumps of ``xxd``, ``hexdump -C``,
``hexdump``, ``od`` and ``od -c`` (both the byte columns and the text column). It cannot catch every
transformation (encrypted, or re-ordered by the command), which is why it is not the boundary.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_tui.config import Config

SECRET_VARIABLE = re.compile(r".*_API_KEY|.*_SECRET_KEY|.*_SECRET_ACCESS_KEY|HERMES_WEB_PASSWORD")
"""Variables whose value is a secret wherever they come from (environment or a .env file)."""

MIN_LENGTH = 6  # shorter values would redact ordinary words
_MIN_ENCODED = 12  # an encoded fragment shorter than this would match ordinary text
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")  # hex, base64, base32
_ENCODED = re.compile(r"[A-Za-z0-9+/=_\-]*")
_GZIP_BASE64 = "H4sI"  # how base64 of a gzip stream starts
_GZIP_LIMIT = 1 << 20  # bytes of a gzip stream unpacked to look for secrets


def is_secret_variable(name: str) -> bool:
    return SECRET_VARIABLE.fullmatch(name) is not None


SECRET_LOOKING_LENGTH = 16  # a generated key is longer; words, hosts and ports are mostly shorter
SECRET_LOOKING_BITS = 3.0  # Shannon entropy per character: keys are near 4-6, "aaaa..." is 0
_HOST_OR_WORDS = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")  # a word, a host, a dotted name


def looks_secret(value: str) -> bool:
    """Whether a value of a secret-*named* variable is worth redacting everywhere.

    Any ``*_API_KEY`` a cloned repository's ``./.env`` (or a careless export) sets would otherwise
    make Hermes redact the string it holds from all output: ``FOO_API_KEY=localhost`` hid every
    "localhost". A value is a target only when it is long, mixes character classes, has some
    entropy, and is not a plain word, host name, URL or path.
    """
    value = value.strip()
    if len(value) < SECRET_LOOKING_LENGTH or any(ch.isspace() for ch in value):
        return False
    if "://" in value or value[0] in "/~." or (_HOST_OR_WORDS.fullmatch(value) and "." in value):
        return False
    classes = (str.islower, str.isupper, str.isdigit, lambda ch: not ch.isalnum())
    if sum(any(test(ch) for ch in value) for test in classes) < 2:
        return False
    counts = [value.count(ch) for ch in set(value)]
    bits = -sum(n / len(value) * math.log2(n / len(value)) for n in counts)
    return bits >= SECRET_LOOKING_BITS


_withheld: dict[str, str] = {}


def withhold_from_environment() -> list[str]:
    """Take every secret-named variable out of this process's environment; return their names.

    Called once by the programs (``hermes-tui``, ``hermes-web``) before anything starts a child, so
    no child inherits a key; ``Config.load`` still sees them through ``process_environment``. The
    kernel's copy of the environment the process started with (``/proc/PID/environ``, readable by
    any process of the same user) is overwritten too, where the platform shows it.
    """
    names = [name for name in os.environ if is_secret_variable(name)]
    for name in names:
        _withheld[name] = os.environ.pop(name)
    if names:
        _wipe_initial_environment(names)
    return names


def process_environment() -> dict[str, str]:
    """This process's environment, with the variables ``withhold_from_environment`` took out."""
    return {**_withheld, **os.environ}


def _wipe_initial_environment(names: list[str]) -> None:
    """Zero the ``NAME=value`` strings the process started with (Linux: /proc/self/stat gives where).

    Safe because ``os.environ.pop`` already unset them: nothing in the C library points there now.
    """
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50 and 51)
        with open("/proc/self/environ", "rb") as environ:
            block = environ.read()
    except (OSError, IndexError, ValueError):
        return
    if not start or len(block) > end - start:
        return
    import ctypes

    prefixes = tuple(f"{name}=".encode() for name in names)
    offset = 0
    for entry in block.split(b"\0"):
        if entry.startswith(prefixes):
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


def _encoded_forms(value: str) -> list[tuple[str, int]]:
    """Fragments present in any hex, base64 or base32 text that encodes ``value`` (at any byte
    alignment), each with how many characters around it may still carry part of the value."""
    raw = value.encode("utf-8")
    hexed = binascii.hexlify(raw).decode()
    forms = [(hexed, 0), (hexed.upper(), 0)]
    for skip in range(3):  # the value may start at any offset of a 3-byte base64 group
        body = raw[skip:]
        body = body[: len(body) // 3 * 3]
        forms += [(base64.b64encode(body).decode(), 4), (base64.urlsafe_b64encode(body).decode(), 4)]
    for skip in range(5):  # ... or of a 5-byte base32 group
        body = raw[skip:]
        forms.append((base64.b32encode(body[: len(body) // 5 * 5]).decode(), 8))
    return [(f, slack) for f, slack in dict.fromkeys(forms) if len(f) >= _MIN_ENCODED]


class _View:
    """``text`` without what ``drop`` matches (``joined``, computed by the caller the fast way); maps
    positions back to ``text``, with a map built only when something was found."""

    def __init__(self, text: str, drop: re.Pattern[str], joined: str, offset: int = 0) -> None:
        self._source, self._drop, self._offset = text, drop, offset
        self.text = joined
        self._starts: list[int] = []  # where each kept piece starts in the view ...
        self._origins: list[int] = []  # ... and in ``text``

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of ``text`` that view positions ``start:end`` came from."""
        if not self._starts:
            at = kept = 0
            for gap in self._drop.finditer(self._source):
                if gap.start() > at:
                    self._starts.append(kept)
                    self._origins.append(at + self._offset)
                    kept += gap.start() - at
                at = gap.end()
            self._starts.append(kept)
            self._origins.append(at + self._offset)
        return self._at(start), self._at(end - 1) + 1

    def _at(self, index: int) -> int:
        piece = bisect.bisect_right(self._starts, index) - 1
        return self._origins[piece] + index - self._starts[piece]


_SPACE = re.compile(r"\s+")
_BREAK = re.compile(r"[\r\n]+")


def _find_all(haystack: str | bytes, needle: str | bytes) -> Iterator[int]:
    at = haystack.find(needle)  # type: ignore[arg-type]  # callers pass two str or two bytes
    while at >= 0:
        yield at
        at = haystack.find(needle, at + 1)  # type: ignore[arg-type]  # callers pass two str or two bytes


# -- dumps: each line's bytes, per kind of dump, and where in the text each byte is shown ----------

_XXD = re.compile(r"^[0-9a-f]{6,16}: ([0-9a-f]{2,16}(?: [0-9a-f]{2,16})*)  ")
_HEXDUMP_C = re.compile(r"^[0-9a-f]{8,16}  ((?:[0-9a-f]{2}  ?)+) *\|(.*)\|$")
_OD_WORDS = re.compile(r"^(?:[0-9a-f]{7,16})?((?: +[0-9a-f]+)+) *$")
_OD_CHARS = re.compile(r"^([0-7]{7,16})?((?:    |   \S|  \\.| [0-7]{3})+)$")
_HEX_PAIR = re.compile(r"[0-9a-f]{2}")
_TOKEN = re.compile(r"[0-9a-f]+")
_ESCAPES = {"0": 0, "a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
Locate = Callable[[int], tuple[int, int]]
Segment = tuple[str, bytes, Locate]  # (kind of dump, bytes of one line, byte index -> span of text)


def _pairs(area: str, base: int) -> Locate:
    """Bytes written as hex pairs in order (xxd, hexdump -C, od -t x1)."""
    return lambda i: (base + (m := list(_HEX_PAIR.finditer(area))[i]).start(), base + m.end())


def _tokens(area: str, base: int, width: int) -> Locate:
    """Bytes in little-endian words of ``width`` bytes (od, od -x, hexdump): the word's span."""
    return lambda i: (base + (m := list(_TOKEN.finditer(area))[i // width]).start(), base + m.end())


def _column(base: int, width: int = 1) -> Locate:
    return lambda i: (base + i * width, base + (i + 1) * width)


@functools.lru_cache(maxsize=1024)
def _od_cell(cell: str) -> int:
    """One od -c cell (4 characters: a character, an escape or three octal digits), or -1."""
    shown = cell.strip() or " "
    if len(shown) == 3 and shown.isdigit():
        return int(shown, 8) if int(shown, 8) < 256 else -1
    if shown.startswith("\\"):
        return _ESCAPES.get(shown[1:], -1)
    return ord(shown) if len(shown) == 1 and ord(shown) < 256 else -1


def _dump_line(line: str, at: int) -> list[Segment]:
    if (match := _XXD.match(line)) is not None:
        data = bytes.fromhex(match.group(1))
        column = len(line) - len(data)  # the text column: one character per byte, at the end
        return [("hex", data, _pairs(match.group(1), at + match.start(1))),
                ("text", line[column:].encode("latin-1", "replace"), _column(at + column))]
    if (match := _HEXDUMP_C.match(line)) is not None:
        return [("hex", bytes.fromhex(match.group(1)), _pairs(match.group(1), at + match.start(1))),
                ("text", match.group(2).encode("latin-1", "replace"), _column(at + match.start(2)))]
    if (match := _OD_CHARS.match(line)) is not None and len(match.group(2)) % 4 == 0:
        body = match.group(2)
        cells = [_od_cell(body[i:i + 4]) for i in range(0, len(body), 4)]
        if -1 not in cells:
            return [("od-c", bytes(cells), _column(at + match.start(2), 4))]
    if (match := _OD_WORDS.match(line)) is not None:
        tokens = match.group(1).split()
        widths = {len(t) for t in tokens}
        base = at + match.start(1)
        if widths == {6} and all(set(t) <= set("01234567") for t in tokens):  # od: octal 16-bit words
            words = [int(t, 8) for t in tokens]
            if all(w < 1 << 16 for w in words):
                return [("le", b"".join(w.to_bytes(2, "little") for w in words), _tokens(match.group(1), base, 2))]
        elif len(widths) == 1 and widths <= {2, 4, 8}:  # od -t x1 / od -x / hexdump: little-endian
            width = widths.pop() // 2
            data = b"".join(bytes.fromhex(t)[::-1] for t in tokens)
            return [("le", data, _tokens(match.group(1), base, width))]
    return []


def _dump_streams(text: str) -> list[tuple[bytes, list[int], list[Locate]]]:
    """Every dump line's bytes joined per kind of dump: (bytes, where each line starts, locators)."""
    if "00000" not in text and not text.startswith(" ") and "\n " not in text:
        return []  # no offset column (xxd, hexdump, od) and no od -An line: not a dump
    streams: dict[str, tuple[list[bytes], list[int], list[Locate]]] = {}
    at = 0
    for line in text.splitlines(keepends=True):
        for kind, data, locate in _dump_line(line.rstrip("\r\n"), at):
            parts, starts, locators = streams.setdefault(kind, ([], [], []))
            starts.append(starts[-1] + len(parts[-1]) if parts else 0)
            parts.append(data)
            locators.append(locate)
        at += len(line)
    return [(b"".join(parts), starts, locators) for parts, starts, locators in streams.values()]


def _locate(starts: list[int], locators: list[Locate], index: int) -> tuple[int, int]:
    line = bisect.bisect_right(starts, index) - 1
    return locators[line](index - starts[line])


@dataclass(frozen=True)
class Secrets:
    """The configured secret values by variable name."""

    values: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        kept = {k: v for k, v in self.values.items() if len(v) >= MIN_LENGTH}
        by_length = dict(sorted(kept.items(), key=lambda item: -len(item[1])))
        object.__setattr__(self, "values", by_length)
        compact = [(n, "".join(v.split())) for n, v in by_length.items()]
        object.__setattr__(self, "_compact", [(n, f) for n, c in compact if len(c) >= MIN_LENGTH
                                              for f in dict.fromkeys((c, c[::-1]))])
        object.__setattr__(self, "_encoded", [(n, f, slack) for n, v in by_length.items()
                                              for f, slack in _encoded_forms(v)])
        object.__setattr__(self, "_raw", [(n, v.encode("utf-8")) for n, v in by_length.items()])

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] | None = None) -> Secrets:
        """Every secret the configuration declares (API keys, web password, Flask key: kept as set)
        plus every secret-named variable of the environment or a .env whose value ``looks_secret``."""
        environ = os.environ if environ is None else environ
        found = {k: v for k, v in {**environ, **config.secret_values}.items()
                 if is_secret_variable(k) and looks_secret(v)}
        found.update(config.declared_secrets)
        return cls(found)

    def scrub(self, text: str) -> str:
        """``text`` with every secret found (see the module docstring) replaced by ``[redacted: NAME]``."""
        if not self.values:
            return text
        spans = [*self._in_text(text), *self._in_encoded_runs(text), *self._in_dumps(text)]
        return _redact(text, spans)

    def _in_text(self, text: str) -> Iterator[tuple[int, int, str]]:
        """The value or its reverse, whitespace inside and between lines ignored."""
        view = _View(text, _SPACE, "".join(text.split()))
        forms: list[tuple[str, str]] = self._compact  # type: ignore[attr-defined]  # set in __post_init__ (frozen dataclass)
        for name, form in forms:
            for at in _find_all(view.text, form):
                yield (*view.span(at, at + len(form)), name)

    def _in_encoded_runs(self, text: str) -> Iterator[tuple[int, int, str]]:
        """Hex, base64 and base32 forms, also wrapped: line breaks inside a run are ignored."""
        encoded: list[tuple[str, str, int]] = self._encoded  # type: ignore[attr-defined]  # set in __post_init__ (frozen dataclass)
        # Dropping every line break joins wrapped runs; a form, made of encoded characters only, cannot
        # match across anything else.
        view = _View(text, _BREAK, text.replace("\r", "").replace("\n", ""))
        for name, form, slack in encoded:
            for at in _find_all(view.text, form):
                yield _widened(text, *view.span(at, at + len(form)), slack, name)
        raw: list[tuple[str, bytes]] = self._raw  # type: ignore[attr-defined]  # set in __post_init__ (frozen dataclass)
        for at in _find_all(view.text, _GZIP_BASE64):
            end = _ENCODED.match(view.text, at).end()  # type: ignore[union-attr]  # _GZIP_BASE64 starts a run _ENCODED matches
            body = view.text[at:end]
            try:
                packed = base64.b64decode(body[: len(body) // 4 * 4])
                unpacked = zlib.decompressobj(wbits=31).decompress(packed, _GZIP_LIMIT)
            except (binascii.Error, ValueError, zlib.error):
                continue
            for name, value in raw:
                if value in unpacked:
                    yield (*view.span(at, end), name)

    def _in_dumps(self, text: str) -> Iterator[tuple[int, int, str]]:
        raw: list[tuple[str, bytes]] = self._raw  # type: ignore[attr-defined]  # set in __post_init__ (frozen dataclass)
        for data, starts, locators in _dump_streams(text):
            for name, value in raw:
                for at in _find_all(data, value):
                    yield _locate(starts, locators, at)[0], _locate(starts, locators, at + len(value) - 1)[1], name

    def clean_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """A copy of ``environ`` without secret variables or any variable whose value holds a secret
        (a URL with a token in it: ``https://bot:TOKEN@host``)."""
        values = tuple(self.values.values())
        return {k: v for k, v in environ.items()
                if not is_secret_variable(k) and not any(secret in v for secret in values)}


def _widened(text: str, start: int, end: int, slack: int, name: str) -> tuple[int, int, str]:
    """``start:end`` grown by up to ``slack`` encoded characters each side, without crossing a line:
    the edges of an encoded value share their characters with its neighbours."""
    for _ in range(slack):
        if start == 0 or text[start - 1] not in _ALPHABET:
            break
        start -= 1
    for _ in range(slack):
        if end >= len(text) or text[end] not in _ALPHABET:
            break
        end += 1
    return start, end, name


def _redact(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by ``[redacted: NAME]``."""
    if not spans:
        return text
    merged: list[tuple[int, int, str]] = []
    for start, end, name in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end), merged[-1][2])
        else:
            merged.append((start, end, name))
    out: list[str] = []
    at = 0
    for start, end, name in merged:
        out += [text[at:start], f"[redacted: {name}]"]
        at = end
    out.append(text[at:])
    return "".join(out)
