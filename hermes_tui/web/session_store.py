"""Server-side login sessions: the signed cookie only names one; the database says if it is alive.

Why not rely on the signed cookie alone: a Flask cookie stays valid until its signature key
changes, so "log out" could not revoke a copied cookie. Here logout deletes the row, and every
request checks the row, across workers and restarts. Rows hold the SHA-256 of the token only.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from hermes_tui.web.webdb import WebDB

ABSOLUTE_LIFETIME = 7 * 24 * 3600.0
IDLE_LIFETIME = 24 * 3600.0
TOUCH_EVERY = 60.0  # seconds between last_seen updates (a write per request would be wasteful)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class SessionStore:
    def __init__(self, db: WebDB, *, absolute: float = ABSOLUTE_LIFETIME, idle: float = IDLE_LIFETIME) -> None:
        self.db = db
        self.absolute = absolute
        self.idle = idle

    def create(self) -> str:
        """A new session; returns the token for the cookie (never stored as such)."""
        token = secrets.token_urlsafe(32)
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_sessions WHERE created < ? OR last_seen < ?",
                         (now - self.absolute, now - self.idle))
            conn.execute("INSERT INTO web_sessions (id, created, last_seen) VALUES (?, ?, ?)",
                         (_digest(token), now, now))
        return token

    def check(self, token: str | None) -> str | None:
        """The session key (the token's digest) if ``token`` names a live session, else None."""
        if not token or not isinstance(token, str) or len(token) > 100:
            return None
        key = _digest(token)
        now = time.time()
        with self.db.read() as conn:
            row = conn.execute("SELECT created, last_seen FROM web_sessions WHERE id = ?", (key,)).fetchone()
        if row is None or row[0] < now - self.absolute or row[1] < now - self.idle:
            return None
        if now - row[1] > TOUCH_EVERY:
            with self.db.write() as conn:
                conn.execute("UPDATE web_sessions SET last_seen = ? WHERE id = ?", (now, key))
        return key

    def revoke(self, token: str | None) -> str | None:
        """Delete the session; returns its key (so per-session state can be released) or None."""
        if not token or not isinstance(token, str):
            return None
        key = _digest(token)
        with self.db.write() as conn:
            deleted = conn.execute("DELETE FROM web_sessions WHERE id = ?", (key,)).rowcount
        return key if deleted else None
