"""The usage ledger: tokens and cost per session and model, kept in the memory store (table
``session_usage``, schema step 13) so /cost and the status line survive /resume and restarts, and
forgetting a session removes them with it. Totals are kept in memory and written on a background
thread: no write on a surface's event loop.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from hermes_tui.background import Background
from hermes_tui.db import connect, immediate

log = logging.getLogger(__name__)

TABLE = "session_usage"
_UPSERT = f"""
INSERT INTO {TABLE} (session_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, cost_usd)
VALUES (?, ?, 1, ?, ?, ?, ?)
ON CONFLICT (session_id, model) DO UPDATE SET
    calls = calls + 1,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cached_tokens = cached_tokens + excluded.cached_tokens,
    cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + excluded.cost_usd END
"""


@dataclass(frozen=True)
class ModelUsage:
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None  # None: the model is not priced
    estimated: bool = False  # some counts are Hermes' estimates (the server sent none); this run only

    def plus(self, prompt: int, completion: int, cached: int, cost: float | None,
             estimated: bool = False) -> ModelUsage:
        total = self.cost_usd if cost is None else (self.cost_usd or 0.0) + cost
        return replace(self, calls=self.calls + 1, prompt_tokens=self.prompt_tokens + prompt,
                       completion_tokens=self.completion_tokens + completion,
                       cached_tokens=self.cached_tokens + cached, cost_usd=total,
                       estimated=self.estimated or estimated)


def totals(rows: list[ModelUsage]) -> ModelUsage:
    """All models of a session together (cost None only when no model was priced)."""
    out = ModelUsage("all")
    for row in rows:
        cost = out.cost_usd if row.cost_usd is None else (out.cost_usd or 0.0) + row.cost_usd
        out = replace(out, calls=out.calls + row.calls, prompt_tokens=out.prompt_tokens + row.prompt_tokens,
                      completion_tokens=out.completion_tokens + row.completion_tokens,
                      cached_tokens=out.cached_tokens + row.cached_tokens, cost_usd=cost,
                      estimated=out.estimated or row.estimated)
    return out


class UsageLedger:
    def __init__(self, path: Path, background: Background) -> None:
        self.path = Path(path)
        self.background = background
        self._lock = threading.Lock()
        self._rows: dict[int, dict[str, ModelUsage]] = {}

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path)

    def load(self, session_id: int) -> list[ModelUsage]:
        """Read a session's usage from the database (a resumed session); cached afterwards."""
        try:
            conn = self._connect()
            try:
                found = conn.execute(
                    f"SELECT model, calls, prompt_tokens, completion_tokens, cached_tokens, cost_usd FROM {TABLE}"
                    " WHERE session_id = ? ORDER BY model", (session_id,)).fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            log.exception("reading the usage of session %s failed", session_id)
            found = []
        rows = {row[0]: ModelUsage(*row) for row in found}
        with self._lock:
            self._rows[session_id] = rows
        return list(rows.values())

    def of(self, session_id: int | None) -> list[ModelUsage]:
        """What is known of a session now (loaded, or counted in this run)."""
        if session_id is None:
            return []
        with self._lock:
            return list(self._rows.get(session_id, {}).values())

    def add(self, session_id: int, model: str, prompt: int, completion: int, cached: int,
            cost: float | None, *, estimated: bool = False) -> threading.Thread:
        """Count one model call now; store it on a background thread (returned, for tests)."""
        with self._lock:
            rows = self._rows.setdefault(session_id, {})
            rows[model] = rows.get(model, ModelUsage(model)).plus(prompt, completion, cached, cost, estimated)
        return self.background.start("hermes-usage",
                                     lambda: self._store(session_id, model, prompt, completion, cached, cost))

    def _store(self, session_id: int, model: str, prompt: int, completion: int, cached: int,
               cost: float | None) -> None:
        try:
            conn = self._connect()
            try:
                with immediate(conn):
                    conn.execute(_UPSERT, (session_id, model, prompt, completion, cached, cost))
            finally:
                conn.close()
        except sqlite3.Error:
            log.exception("storing the usage of session %s failed", session_id)
