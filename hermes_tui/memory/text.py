"""What the search index sees of a message, and the snippet shown for a hit.

The stored message stays verbatim; only the indexed text is derived, by ``index_text``:

* terminal escape sequences go and control characters become spaces, so ``\\x1b[31mRED`` is
  indexed as ``RED`` (and the snippet markers STX/ETX can never come from a message);
* runs of CJK characters (Chinese, Japanese, Korean), which are written without spaces, become
  overlapping two-character tokens: 東京タワー → 東京 京タ タワ ワー. A query of two or more
  such characters becomes the phrase of its pairs, so it matches inside any longer run, and
  Latin text is indexed exactly as before (no second index, no growth);
* a huge text (a 10 MB log) is indexed by its head and tail only: the whole of it would make the
  index, and every search touching it, pay for megabytes nobody searches in.

``index_text`` runs inside SQLite (the FTS triggers call it) and must stay deterministic: the
index removes a row by re-deriving its terms, so any change to it needs a schema step that
rebuilds the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

HIT_START = "\x02"
"""Starts a matched word in a snippet (STX); never in indexed or snippet text otherwise."""
HIT_END = "\x03"
"""Ends a matched word in a snippet (ETX)."""
ELLIPSIS = "…"

INDEX_HEAD = 200_000
"""Characters indexed from the start of a long message..."""
INDEX_TAIL = 50_000
"""...and from its end (where logs keep their errors)."""
SNIPPET_SCAN = 65_536
"""Characters of a region searched for the first hit when building a snippet."""
SNIPPET_CHARS = 120
SNIPPET_LEAD = 40
"""Characters of context kept before the first hit."""

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # other escapes (charset switches, keypad modes)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters except tab and newline."""

CJK_CLASS = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff"
)
"""Hangul, kana and Han: the scripts written without spaces between words (Korean uses
spaces, but attaches particles: 서울에서 should match 서울)."""
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
WORD = re.compile(r"[^\W_]+")
"""Runs of letters and digits: what the unicode61 tokenizer keeps as one token (the one copy:
the memory queries and the skills index split words with it too)."""

# Request and question phrasing, and what is left of a contraction ("what's", "don't", "I'll")
# once the apostrophe splits it: such a letter is in nearly every text and would only add noise.
STOP_WORDS = frozenset(
    """a about after all also am an and any are as at be been being but by can could did do does doing
    for from get got had has have he her him his how i if in into is it its just let lets like me might
    more most must my need no not now of on onto or our out over please she should so some such than
    that the their them then there these they this those through to too up us use using very want was
    we were what when where which while who why will with would you your
    s t d ll re ve m don doesn didn isn aren wasn weren haven hasn hadn wouldn couldn shouldn""".split()
)
"""Words that say how something is asked, not what about: the skill router never searches them,
memory's any-word ranking leaves them out (a question is mostly made of them)."""


def clean(text: str) -> str:
    """``text`` without terminal escapes; other control characters become spaces."""
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text)
    return _CONTROLS.sub(" ", text)


def bounded(text: str) -> str:
    """The part of ``text`` that is indexed: all of it, or its head and tail when huge."""
    if len(text) <= INDEX_HEAD + INDEX_TAIL:
        return text
    return text[:INDEX_HEAD] + "\n" + text[-INDEX_TAIL:]


def pairs(run: str) -> list[str]:
    """The overlapping two-character tokens of a CJK run (a lone character stays itself)."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def _spread(match: re.Match[str]) -> str:
    return " " + " ".join(pairs(match.group())) + " "


def index_text(text: str | None) -> str | None:
    """What the FTS index sees of a message (see the module docstring)."""
    if text is None:
        return None
    return _CJK_RUN.sub(_spread, clean(bounded(text)))


def is_cjk(word: str) -> bool:
    return _CJK_RUN.fullmatch(word) is not None


def split_scripts(token: str) -> list[str]:
    """A letters-and-digits run cut where it changes between CJK and other scripts."""
    return [part for part in re.split(f"([{CJK_CLASS}]+)", token) if part]


# --------------------------------------------------------------------------- snippets


@dataclass(frozen=True)
class Highlight:
    """A query word as the snippet finds it: a word prefix, or a CJK substring."""

    text: str
    prefix: bool  # match words starting with ``text`` (stems, prefix queries)


_SUFFIXES = ("ational", "ization", "fulness", "iveness", "ement", "ments", "ation", "ness",
             "ment", "ings", "ing", "ies", "ied", "ers", "est", "es", "ed", "er", "ly", "s")


def highlight_for(word: str, *, prefix: bool = False) -> Highlight:
    """How a query word is found in text, near enough to the index's porter stemming:
    "running" also marks "runs" and "run". A CJK word is found as it is."""
    word = word.lower()
    if is_cjk(word) or prefix:
        return Highlight(word, prefix=not is_cjk(word))
    stem = word
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 3:
            stem = stem[: -len(suffix)]
            break
    if len(stem) > 3 and stem[-1] == stem[-2]:  # running -> runn -> run
        stem = stem[:-1]
    return Highlight(stem, prefix=True)


def _pattern(highlights: Sequence[Highlight]) -> re.Pattern[str] | None:
    parts = []
    for h in sorted(set(highlights), key=lambda h: -len(h.text)):
        if h.prefix:
            parts.append(r"(?<![^\W_])" + re.escape(h.text) + r"[^\W_]*")
        else:
            parts.append(re.escape(h.text))
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def snippet(
    head: str | None, highlights: Sequence[Highlight], *, tail: str | None = None, extra: str = ""
) -> str:
    """A one-line excerpt around the first hit, hits wrapped in HIT_START/HIT_END.

    ``head`` is the start of the message (at most ``SNIPPET_SCAN`` characters), ``tail`` its
    end when it is longer, ``extra`` other indexed text (tool names) shown when the message
    text has no hit. The cost is bounded whatever the message: the first hit is found with
    plain substring scans of these slices, and only a small window around it is cleaned and
    marked (FTS5's snippet() walks every occurrence: seconds for a word repeated 10,000 times).
    """
    head = head or ""
    for part, whole in _regions(head, tail, extra):
        pos = _first_hit(part, highlights)
        if pos is not None:
            start = max(0, pos - 3 * SNIPPET_LEAD)
            stop = pos + 3 * SNIPPET_CHARS
            return _render(part[start:stop], highlights, start > 0, stop < len(part) or not whole)
    part = head or extra
    stop = 3 * SNIPPET_CHARS
    return _render(part[:stop], highlights, False, stop < len(part) or tail is not None)


def _regions(head: str, tail: str | None, extra: str) -> Iterator[tuple[str, bool]]:
    """Where to look for the first hit, in order; with whether it is the whole text."""
    yield head, tail is None
    if tail:
        yield tail, False
    if extra:
        yield extra, True


_ESCAPE_END = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]$")
_MAX_PROBES = 200


def _first_hit(text: str, highlights: Sequence[Highlight]) -> int | None:
    """Where the first highlight starts in ``text`` (a word start for word prefixes)."""
    low = text.lower()
    best: int | None = None
    for h in highlights:
        at = low.find(h.text)
        probes = 0
        while at >= 0 and h.prefix and not _word_start(low, at) and probes < _MAX_PROBES:
            at = low.find(h.text, at + 1)
            probes += 1
        if at >= 0 and (not h.prefix or _word_start(low, at)) and (best is None or at < best):
            best = at
    return best


def _word_start(text: str, at: int) -> bool:
    before = text[at - 1] if at else " "
    return not before.isalnum() or _ESCAPE_END.search(text, max(0, at - 24), at) is not None


def _render(raw: str, highlights: Sequence[Highlight], cut_left: bool, cut_right: bool) -> str:
    """Clean ``raw``, keep ``SNIPPET_CHARS`` around its first hit, mark every hit in that."""
    pattern = _pattern(highlights)
    region = _flat(clean(raw))
    found = pattern.search(region) if pattern else None
    begin = 0
    if found is not None and found.start() > SNIPPET_LEAD and len(region) > SNIPPET_CHARS:
        begin = min(found.start() - SNIPPET_LEAD, len(region) - SNIPPET_CHARS)
        space = region.find(" ", begin, found.start())
        begin = space + 1 if space >= 0 else begin
    end = min(len(region), begin + SNIPPET_CHARS)
    if end < len(region):
        space = region.rfind(" ", begin + SNIPPET_CHARS // 2, end)
        end = space if space > 0 else end
    window = region[begin:end].strip()
    marked = pattern.sub(lambda m: HIT_START + m.group() + HIT_END, window) if pattern else window
    left = ELLIPSIS if begin > 0 or cut_left else ""
    right = ELLIPSIS if end < len(region) or cut_right else ""
    return left + marked + right


def _flat(text: str) -> str:
    """One line: runs of whitespace become one space."""
    return " ".join(text.split())


def has_word(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a word, or a form of it the porter stemmer joins
    ("reports" for "report"): a cheap stand-in for the index, to check a frequent word in a
    few candidates without walking its huge posting list."""
    low = text.lower()
    stem = highlight_for(word).text
    if len(stem) < 4:
        stem = word  # short words: only the word itself
    if stem not in low:  # the common miss, at C speed
        return False
    endings = "[^\\W\\d_]{0,4}" if len(stem) >= 4 else ""
    return re.search(r"(?:^|[\W_])" + re.escape(stem) + endings + r"(?![^\W_])", low) is not None
