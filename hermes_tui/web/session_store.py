"""Server-side login sessions: the signed cookie only names one; the database says if it is alive.

Why not rely on the signed cookie alone: a Flask cookie stays valid until its signature key
changes, so "log out" could not revoke a copied cookie. Here logout deletes the row, and every
request checks the row, across workers and restarts. Rows hold the SHA-256 of the token only.

Each row also records the *fingerprint* of the password it was opened with (an HMAC keyed by
FLASK_SECRET_KEY, so the database alone reveals nothing to guess against). A session whose
fingerprint is not the current one is dead: changing HERMES_WEB_PASSWORD (or switching no-auth
mode on or off) and restarting ends every existing session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from hermes_tui.web.webdb import WebDB

ABSOLUTE_LIFETIME = 7 * 24 * 3600.0
IDLE_LIFETIME = 24 * 3600.0
TOUCH_EVERY = 60.0  # seconds between last_seen updates (a write per request would be wasteful)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def password_fingerprint(secret_key: str, password: str | None) -> str:
    """Names the password (or its absence) without revealing it to anyone who lacks ``secret_key``."""
    what = b"no-password" if password is None else b"password\0" + password.encode("utf-8", "surrogatepass")
    return hmac.new(secret_key.encode("utf-8"), b"hermes-web-session\0" + what, hashlib.sha256).hexdigest()


class SessionStore:
    def __init__(self, db: WebDB, fingerprint: str, *, absolute: float = ABSOLUTE_LIFETIME,
                 idle: float = IDLE_LIFETIME) -> None:
        self.db = db
        self.fingerprint = fingerprint
        self.absolute = absolute
        self.idle = idle

    def create(self) -> str:
        """A new session; returns the token for the cookie (never stored as such)."""
        token = secrets.token_urlsafe(32)
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM web_sessions WHERE created < ? OR last_seen < ? OR fingerprint IS NOT ?",
                         (now - self.absolute, now - self.idle, self.fingerprint))
            conn.execute("INSERT INTO web_sessions (id, created, last_seen, fingerprint) VALUES (?, ?, ?, ?)",
                         (_digest(token), now, now, self.fingerprint))
        return token

    def check(self, token: str | None) -> str | None:
        """The session key (the token's digest) if ``token`` names a live session, else None."""
        if not token or not isinstance(token, str) or len(token) > 100:
            return None
        key = _digest(token)
        now = time.time()
        with self.db.read() as conn:
            row = conn.execute("SELECT created, last_seen, fingerprint FROM web_sessions WHERE id = ?",
                               (key,)).fetchone()
        if row is None or row[0] < now - self.absolute or row[1] < now - self.idle:
            return None
        if not isinstance(row[2], str) or not hmac.compare_digest(row[2], self.fingerprint):
            return None  # opened with another password
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
