"""The memory search syntax, parsed into FTS5 expressions that can never be malformed.

Syntax (everything else is plain words, all of which must match):

* ``"exact phrase"``   the words next to each other, in that order
* ``deploy*``          words starting with "deploy" (at least 3 letters before the ``*``)
* ``docker OR podman`` either word (``OR`` in capitals, between two terms)
* ``-word``, ``-"a phrase"``   leave out messages containing it
* ``role:user``        only messages of that role (user, assistant, tool, system)
* ``tool:read_file``   only messages calling that tool or holding its result

Why a parser of our own: FTS5's syntax raises on user typos (an odd quote, a stray ``*``,
``NEAR(``), and words like AND, NOT or a ``column:`` prefix change a query's meaning. Here the
user's text only ever yields quoted tokens joined by operators we write, and anything that does
not parse as one of the forms above degrades to plain words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hermes_tui.memory.records import ROLES
from hermes_tui.memory.text import (
    STOP_WORDS,
    WORD,
    Highlight,
    highlight_for,
    is_cjk,
    pairs,
    split_scripts,
)

MAX_TERMS = 16
"""Phrases kept from one query (the rest of a pasted page is dropped)."""
MIN_PREFIX = 3
"""A shorter prefix expands to too many words to merge in milliseconds; it stays a word."""

_TOKEN = re.compile(
    r'(?P<neg>-?)"(?P<phrase>[^"]*)"'  # a quoted phrase, maybe excluded
    r"|(?P<key>role|tool):(?P<value>[^\s\"]+)"  # a filter
    r'|(?P<raw>[^\s"]+)'  # anything else up to a space or a quote
)


@dataclass(frozen=True)
class Phrase:
    """Index tokens that must be adjacent; ``prefix``: the last one may continue."""

    tokens: tuple[str, ...]
    prefix: bool = False
    words: tuple[str, ...] = ()  # as the user typed them, for highlighting

    def fts(self) -> str:
        return '"' + " ".join(self.tokens) + '"' + (" *" if self.prefix else "")

    def highlights(self) -> list[Highlight]:
        last = len(self.words) - 1
        return [highlight_for(w, prefix=self.prefix and i == last) for i, w in enumerate(self.words)]


@dataclass(frozen=True)
class Clause:
    """Any of its phrases (``a OR b``); a query needs every clause."""

    phrases: tuple[Phrase, ...]

    def fts(self) -> str:
        if len(self.phrases) == 1:
            return self.phrases[0].fts()
        return "(" + " OR ".join(p.fts() for p in self.phrases) + ")"

    @property
    def function_word(self) -> bool:
        """One word that says how something is asked ("how", "did", "we"), not what about."""
        return (len(self.phrases) == 1 and len(self.phrases[0].tokens) == 1 and not self.phrases[0].prefix
                and self.phrases[0].tokens[0] in STOP_WORDS)


@dataclass(frozen=True)
class Query:
    """A parsed search: AND of OR-clauses of phrases, exclusions, role and tool filters; its
    methods give the FTS5 MATCH text."""

    clauses: tuple[Clause, ...] = ()
    excluded: tuple[Phrase, ...] = ()
    roles: tuple[str, ...] = ()
    tools: tuple[Phrase, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.clauses and not self.tools

    def filters(self) -> str:
        """The FTS5 part every hit must satisfy besides the clauses: tools, exclusions."""
        parts = []
        if self.tools:
            parts.append("tool_names : (" + " OR ".join(t.fts() for t in self.tools) + ")")
        return " AND ".join(parts)

    def expression(self, clauses: Iterable[Clause] | None = None) -> str:
        """FTS5 MATCH text for ``clauses`` (default: all) with the filters and exclusions."""
        chosen = self.clauses if clauses is None else tuple(clauses)
        parts = [c.fts() for c in chosen]
        if self.filters():
            parts.append(self.filters())
        expr = " AND ".join(parts)
        if self.excluded and expr:
            expr = f"({expr}) NOT (" + " OR ".join(p.fts() for p in self.excluded) + ")"
        return expr

    def topical(self) -> tuple[Clause, ...]:
        """The clauses that say what the query is about, for ranking by any word: lone function
        words left out ("how did we fix the upload test" ranks by fix, upload, test), unless
        nothing else is left."""
        return tuple(c for c in self.clauses if not c.function_word) or self.clauses

    def highlights(self) -> list[Highlight]:
        return [h for c in self.clauses for p in c.phrases for h in p.highlights()]


@dataclass
class _Builder:
    """The query being parsed, term by term, until ``build`` freezes it."""

    clauses: list[list[Phrase]] = field(default_factory=list)
    excluded: list[Phrase] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    tools: list[Phrase] = field(default_factory=list)
    pending_or: bool = False
    count: int = 0

    def full(self) -> bool:
        return self.count >= MAX_TERMS

    def add(self, phrase: Phrase | None) -> None:
        if phrase is None or self.full():
            self.pending_or = False
            return
        self.count += 1
        if self.pending_or and self.clauses:
            self.clauses[-1].append(phrase)
        else:
            self.clauses.append([phrase])
        self.pending_or = False

    def exclude(self, phrase: Phrase | None) -> None:
        self.pending_or = False
        if phrase is not None and not self.full():
            self.count += 1
            self.excluded.append(phrase)

    def build(self) -> Query:
        clauses = tuple(Clause(tuple(dict.fromkeys(c))) for c in self.clauses)
        excluded = tuple(dict.fromkeys(self.excluded))
        if not clauses and not self.tools and excluded:
            # Nothing to look for but exclusions: FTS5 cannot answer "NOT x" alone, and the
            # user most likely meant the words themselves.
            clauses, excluded = tuple(Clause((p,)) for p in excluded), ()
        return Query(
            clauses=tuple(dict.fromkeys(clauses)),
            excluded=excluded,
            roles=tuple(dict.fromkeys(self.roles)),
            tools=tuple(dict.fromkeys(self.tools)),
        )


def phrase_of(text: str, *, prefix: bool = False) -> Phrase | None:
    """The index tokens of ``text`` as one phrase (CJK runs as their pairs); None if no word."""
    tokens: list[str] = []
    words: list[str] = []
    for word in WORD.findall(text.lower()):
        for part in split_scripts(word):
            words.append(part)
            tokens.extend(pairs(part) if is_cjk(part) else [part])
    if not tokens:
        return None
    if prefix:  # only a Latin last word of useful length can be a prefix
        prefix = not is_cjk(words[-1]) and len(words[-1]) >= MIN_PREFIX
    if prefix and tokens[-1].endswith("y") and len(tokens[-1]) > MIN_PREFIX:
        # FTS5 stems a prefix too, and porter turns a final y into i ("deploy" -> "deploi"),
        # which "deployment" (stem "deploy") does not start with: drop the y.
        tokens[-1] = tokens[-1][:-1]
    if len(words) == 1 and is_cjk(words[0]) and len(words[0]) == 1:
        prefix = True  # one CJK character: the pairs that start with it
    return Phrase(tuple(tokens), prefix, tuple(words))


def parse(text: str) -> Query:
    """The user's search text as a ``Query``; never raises (see the module docstring)."""
    b = _Builder()
    for m in _TOKEN.finditer(text):
        if b.full():
            break
        if m.group("phrase") is not None:
            phrase = phrase_of(m.group("phrase"))
            b.exclude(phrase) if m.group("neg") else b.add(phrase)
        elif m.group("key") == "role" and m.group("value").lower() in ROLES:
            b.roles.append(m.group("value").lower())
        elif m.group("key") == "tool" and (tool := phrase_of(m.group("value"))) is not None:
            b.tools.append(tool)
        elif m.group("key"):  # an unknown role: plain words
            _raw(b, m.group(0))
        else:
            _raw(b, m.group("raw"))
    return b.build()


def _raw(b: _Builder, raw: str) -> None:
    """A bare token: OR, -word, word*, or plain words (punctuation separates them, as in the
    index; each word is its own clause, so "content:alpha" still finds "alpha")."""
    if raw == "OR":
        b.pending_or = bool(b.clauses)  # "OR" first, last or doubled is simply dropped
        return
    if raw.startswith("-") and len(raw) > 1:
        for word in WORD.findall(raw):
            b.exclude(phrase_of(word))
        return
    words = WORD.findall(raw)
    prefix = raw.endswith("*") and bool(words) and raw.rstrip("*").endswith(words[-1])
    for i, word in enumerate(words):
        b.add(phrase_of(word, prefix=prefix and i == len(words) - 1))
