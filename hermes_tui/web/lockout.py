"""Login throttling: per address, for the whole server, and per known browser.

* Per address: 5 failed attempts from one client address in 5 minutes lock that address out.
* Globally: at most 20 failed attempts in 5 minutes from addresses *without* a device cookie, all
  addresses together. Many addresses (a botnet, a cloud's address pool) therefore get at most 20
  password checks per 5 minutes between them, not 5 each.
* Known browsers: a browser that once logged in carries a signed device cookie (see auth.py). Its
  attempts count against that cookie only (5 per 5 minutes), never against an address or the
  global budget, so an attacker who exhausts those cannot lock the owner's own browsers out. This
  is the "device cookie" defence OWASP describes against lockout abuse.

Each attempt is counted *before* the password is checked, inside one ``BEGIN IMMEDIATE``
transaction, so parallel guesses (threads, workers, processes) cannot slip past a limit. A
successful login clears its own key's record; attempts refused while locked are not recorded, so a
lockout ends when the window of the failure that caused it passes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hermes_tui.web.webdb import WebDB

MAX_FAILURES = 5
GLOBAL_MAX_FAILURES = 20
WINDOW_SECONDS = 300.0
DEVICE_PREFIX = "device:"  # keys of known browsers; every other key is a client address


@dataclass(frozen=True)
class Attempt:
    """The outcome of asking to try a password: allowed, or refused for ``retry_after`` seconds.

    ``everyone`` says the refusal is the global limit rather than this client's own.
    """

    allowed: bool
    retry_after: int = 0
    everyone: bool = False


def device_key(device_id: str) -> str:
    return DEVICE_PREFIX + device_id


class LoginThrottle:
    def __init__(self, db: WebDB, *, max_failures: int = MAX_FAILURES,
                 global_max_failures: int = GLOBAL_MAX_FAILURES, window: float = WINDOW_SECONDS) -> None:
        self.db = db
        self.max_failures = max_failures
        self.global_max_failures = global_max_failures
        self.window = window

    def begin(self, key: str, now: float | None = None) -> Attempt:
        """Record one attempt for ``key`` (an address, or ``device_key(...)``) unless a limit refuses it."""
        now = time.time() if now is None else now
        since = now - self.window
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_login_attempts WHERE at < ?", (since,))
            mine = [r[0] for r in conn.execute(
                "SELECT at FROM web_login_attempts WHERE client = ? ORDER BY at", (key,))]
            if len(mine) >= self.max_failures:
                return Attempt(False, self._retry_after(mine, self.max_failures, now))
            if not key.startswith(DEVICE_PREFIX):
                everyone = [r[0] for r in conn.execute(
                    "SELECT at FROM web_login_attempts WHERE substr(client, 1, ?) != ? ORDER BY at",
                    (len(DEVICE_PREFIX), DEVICE_PREFIX))]
                if len(everyone) >= self.global_max_failures:
                    return Attempt(False, self._retry_after(everyone, self.global_max_failures, now), everyone=True)
            conn.execute("INSERT INTO web_login_attempts (client, at) VALUES (?, ?)", (key, now))
        return Attempt(True)

    def succeeded(self, key: str) -> None:
        """The password was right: forget this key's failures (which frees their global share too)."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_login_attempts WHERE client = ?", (key,))

    def _retry_after(self, times: list[float], limit: int, now: float) -> int:
        """Seconds until the oldest attempt that still keeps the count at ``limit`` leaves the window."""
        oldest_needed = times[len(times) - limit]
        return max(1, int(oldest_needed + self.window - now + 0.999))

