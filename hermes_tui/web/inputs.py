"""Request input that would otherwise crash deep inside a view: refused at the edge with a 4xx.

Installed once on the app (``create_app``), so every route, including ones added later, gets it:

* JSON nested deeper than ``MAX_JSON_DEPTH`` (Python's parser would raise ``RecursionError``, a 500),
  or holding a string with an unpaired surrogate (``"\\ud800"`` is valid JSON but cannot be stored
  as UTF-8, so SQLite would fail after the request was accepted), is a 400 with the reason.
* ``<int:...>`` URL parts above SQLite's largest row id are not a route (404), instead of an
  ``OverflowError`` when the id reaches the database.
"""

from __future__ import annotations

import json
from typing import Any

from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import BadRequest
from werkzeug.routing import IntegerConverter

MAX_JSON_DEPTH = 32
MAX_ROW_ID = 2**63 - 1  # SQLite INTEGER is a signed 64-bit value


class StrictJSONProvider(DefaultJSONProvider):
    """Flask's JSON, refusing what no client of this app sends and no view could store."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        try:
            value = json.loads(s, **kwargs)
        except RecursionError:
            raise BadRequest(f"the JSON is nested too deeply (at most {MAX_JSON_DEPTH} levels)") from None
        problem = _problem(value)
        if problem:
            raise BadRequest(problem)
        return value


def _problem(value: Any) -> str | None:
    """Why ``value`` is refused, or None. Iterative, so the check itself cannot overflow the stack."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if not _is_utf8(item):
                return "the JSON contains text with an unpaired surrogate (broken Unicode); nothing was stored"
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return f"the JSON is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class RowIdConverter(IntegerConverter):
    """``<int:...>`` that only matches numbers a SQLite row id can hold."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", MAX_ROW_ID)
        super().__init__(*args, **kwargs)
