"""Untrusted text -> safe HTML: model answers, skill bodies, memory snippets and panels.

Two layers, so one mistake is not enough for script to run: markdown-it-py renders with raw HTML
*disabled* (a ``<script>`` in the text comes out as visible text), then nh3 keeps only an allowlist
of tags and attributes, only http/https/mailto links (with rel="noopener noreferrer"), and no
images at all: a remote image would leak the reader's address and could carry data out, so an image
becomes its alt text. A fenced code block that names its language is highlighted by Pygments
(escaped text in ``<span class>``; only Pygments' own token classes survive the cleaning). The page's CSP (no inline script, img-src 'self' data:) is the third layer.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from hermes_tui.memory.store import HIT_END, HIT_START

ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "span",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}  # and span classes: TOKEN_CLASSES
URL_SCHEMES = frozenset({"http", "https", "mailto"})
_HIT = re.compile(re.escape(html.escape(HIT_START)) + r"([^" + HIT_START + HIT_END + r"]*)" + re.escape(HIT_END))
_MARKERS = re.compile(f"[{HIT_START}{HIT_END}]")
TOKEN_CLASSES = frozenset(c for c in STANDARD_TYPES.values() if c)  # Pygments' short classes: k, nf, s2...
HIGHLIGHT_MAX_CHARS = 20_000  # a longer block stays plain: lexing hostile text must stay cheap
_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """A fenced block in its language's colours; "" (markdown-it escapes it plain) when the
    language is unknown or missing: nothing is guessed."""
    if not lang or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    try:
        lexer = get_lexer_by_name(lang, stripnl=False)
    except ClassNotFound:
        return ""
    return highlight(code, lexer, _FORMATTER)


def _image_as_text(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image is shown as its alt text in brackets; the URL is never fetched."""
    alt = self.renderInlineAsText(tokens[idx].children or [], options, env)
    return html.escape(f"[image: {alt}]" if alt else "[image]")


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False,
                                   "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_text)
    return md


_MD = _markdown()


def sanitize(fragment: str) -> str:
    """Keep only the allowlisted markup of an HTML fragment."""
    return nh3.clean(
        fragment,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        allowed_classes={"span": set(TOKEN_CLASSES)},
        strip_comments=True,
    )


PANEL_TAGS = ALLOWED_TAGS | {"details", "summary"}


def panel_html(fragment: str) -> str:
    """A panel rendered from a template (which escaped every value), cleaned again as a second
    layer: the same allowlist, plus ``details``/``summary`` and ``class`` for its styling."""
    return nh3.clean(
        fragment,
        tags=set(PANEL_TAGS),
        clean_content_tags={"script", "style"},
        attributes={"*": {"class"}, **{tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()}},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def markdown_html(text: str | None) -> str:
    """Markdown from an untrusted source as sanitized HTML."""
    if not text:
        return ""
    return sanitize(_MD.render(text))


def snippet_html(snippet: str) -> str:
    """A memory search snippet: escaped text, with matched terms in ``<mark>``.

    The store marks hits with the STX/ETX control characters; only balanced pairs become marks,
    and any stray marker (it could come from a stored message) is dropped.
    """
    escaped = html.escape(snippet, quote=True)
    marked = _HIT.sub(r"<mark>\1</mark>", escaped)
    return _MARKERS.sub("", marked)
