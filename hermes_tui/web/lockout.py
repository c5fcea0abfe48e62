"""Login throttling: 5 failed attempts from one client address in 5 minutes lock it out.

Each attempt is counted *before* the password is checked, inside one ``BEGIN IMMEDIATE``
transaction, so parallel guesses (threads, workers, processes) cannot slip past the limit. A
successful login clears the address's record; attempts refused while locked are not recorded,
so the lockout ends when the window of the 5th failure passes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hermes_tui.web.webdb import WebDB

MAX_FAILURES = 5
WINDOW_SECONDS = 300.0


@dataclass(frozen=True)
class Attempt:
    """The outcome of asking to try a password: allowed, or refused for ``retry_after`` seconds."""

    allowed: bool
    retry_after: int = 0


class LoginThrottle:
    def __init__(self, db: WebDB, *, max_failures: int = MAX_FAILURES, window: float = WINDOW_SECONDS) -> None:
        self.db = db
        self.max_failures = max_failures
        self.window = window

    def begin(self, client: str, now: float | None = None) -> Attempt:
        """Record one attempt for ``client`` unless it is locked out; say whether it may proceed."""
        now = time.time() if now is None else now
        since = now - self.window
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_login_attempts WHERE at < ?", (since,))
            rows = conn.execute(
                "SELECT at FROM web_login_attempts WHERE client = ? AND at >= ? ORDER BY at",
                (client, since),
            ).fetchall()
            if len(rows) >= self.max_failures:
                # Unlocks when the oldest attempt that still keeps the count at the limit expires.
                oldest_needed = rows[len(rows) - self.max_failures][0]
                return Attempt(False, max(1, int(oldest_needed + self.window - now + 0.999)))
            conn.execute("INSERT INTO web_login_attempts (client, at) VALUES (?, ?)", (client, now))
        return Attempt(True)

    def succeeded(self, client: str) -> None:
        """The password was right: forget this address's failures."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_login_attempts WHERE client = ?", (client,))
