"""Login, logout and the gate in front of every other route.

The gate is an allowlist: only the endpoints in ``PUBLIC_ENDPOINTS`` are reachable without a live
server-side session, so a route added later is protected by default. The password is compared in
constant time on the SHA-256 digests of the UTF-8 bytes (equal lengths, so the comparison time
says nothing about the password's length either).
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from flask import Blueprint, Response, g, jsonify, redirect, render_template, request, session, url_for

from hermes_tui.web.context import web
from hermes_tui.web.security import is_api, new_csrf_token

log = logging.getLogger(__name__)

bp = Blueprint("auth", __name__)

PUBLIC_ENDPOINTS = frozenset({"auth.login", "auth.login_post", "static"})
MAX_PASSWORD_BYTES = 1024


def password_matches(given: str, expected: str) -> bool:
    given_bytes = given.encode("utf-8", "surrogatepass")
    if len(given_bytes) > MAX_PASSWORD_BYTES:
        return False
    return hmac.compare_digest(hashlib.sha256(given_bytes).digest(),
                               hashlib.sha256(expected.encode("utf-8")).digest())


def client_address() -> str:
    """The socket peer, or the proxy-reported address when trusted proxies are configured (ProxyFix)."""
    return request.remote_addr or "unknown"


def require_login() -> Response | None:
    """``before_request``: 401 JSON for the API, a redirect to the login page for pages."""
    if request.endpoint in PUBLIC_ENDPOINTS:
        return None
    key = web().sessions.check(session.get("sid"))
    if key is not None:
        g.session_key = key
        return None
    if is_api():
        response = jsonify(error="log in first")
        response.status_code = 401
        return response
    return redirect(url_for("auth.login"))


@bp.get("/login")
def login() -> Response | str:
    return _login_page()


@bp.post("/login")
def login_post() -> Response | str | tuple[str, int, dict[str, str]]:
    ctx = web()
    client = client_address()
    if ctx.config.web_password is not None:
        attempt = ctx.throttle.begin(client)
        if not attempt.allowed:
            log.warning("login refused for %s: locked out for %d s", client, attempt.retry_after)
            minutes = max(1, (attempt.retry_after + 59) // 60)
            message = f"Too many failed attempts. Try again in {minutes} minute{'s' * (minutes > 1)}."
            return _login_page(message), 429, {"Retry-After": str(attempt.retry_after)}
        if not password_matches(request.form.get("password", ""), ctx.config.web_password):
            log.warning("failed login from %s", client)
            return _login_page("Wrong password."), 401, {}
        ctx.throttle.succeeded(client)
    # Rotate: the pre-login session (and any session the browser had) is dropped entirely.
    old_key = ctx.sessions.revoke(session.get("sid"))
    if old_key is not None:
        ctx.state.forget(old_key)
    session.clear()
    session["sid"] = ctx.sessions.create()
    session.permanent = True
    new_csrf_token()
    log.info("login from %s", client)
    return redirect(url_for("pages.index"))


@bp.post("/logout")
def logout() -> Response:
    key = web().sessions.revoke(session.get("sid"))
    if key is not None:
        web().state.forget(key)
    session.clear()
    return redirect(url_for("auth.login"))


def _login_page(error: str | None = None) -> str:
    no_password = web().config.web_password is None
    return render_template("login.html", error=error, no_password=no_password)
