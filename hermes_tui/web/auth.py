"""Login, logout and the gate in front of every other route.

The gate is an allowlist: only the endpoints in ``PUBLIC_ENDPOINTS`` are reachable without a live
server-side session, so a route added later is protected by default. The password is compared in
constant time on the SHA-256 digests of the UTF-8 bytes (equal lengths, so the comparison time
says nothing about the password's length either).

A successful login also leaves a signed, long-lived *device cookie* (path /login only). Attempts
that present one are throttled per device instead of per address and globally (see lockout.py),
so a distributed guessing attack cannot lock the owner's own browsers out. The cookie names the
password's fingerprint: after a password change it no longer counts.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, request, session, url_for
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.wrappers import Response  # what redirect() makes; flask.Response is one too

from hermes_tui.web.context import web
from hermes_tui.web.lockout import Attempt, device_key
from hermes_tui.web.security import is_api, new_csrf_token

log = logging.getLogger(__name__)

bp = Blueprint("auth", __name__)

PUBLIC_ENDPOINTS = frozenset({"auth.login", "auth.login_post", "static"})
MAX_PASSWORD_BYTES = 1024
DEVICE_COOKIE = "hermes_device"
DEVICE_LIFETIME = 365 * 24 * 3600


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
    device = _known_device()
    if ctx.config.web_password is not None:
        key = device_key(device) if device else client
        attempt = ctx.throttle.begin(key)
        if not attempt.allowed:
            log.warning("login refused for %s: locked out for %d s%s", key, attempt.retry_after,
                        " (server-wide limit)" if attempt.everyone else "")
            return _login_page(_refusal(attempt)), 429, {"Retry-After": str(attempt.retry_after)}
        if not password_matches(request.form.get("password", ""), ctx.config.web_password):
            log.warning("failed login from %s", key)
            return _login_page("Wrong password."), 401, {}
        ctx.throttle.succeeded(key)
    # Rotate: the pre-login session (and any session the browser had) is dropped entirely.
    old_key = ctx.sessions.revoke(session.get("sid"))
    if old_key is not None:
        ctx.state.forget(old_key)
    session.clear()
    session["sid"] = ctx.sessions.create()
    session.permanent = True
    new_csrf_token()
    log.info("login from %s", client)
    response = redirect(url_for("pages.index"))
    if ctx.config.web_password is not None:
        response.set_cookie(
            DEVICE_COOKIE, _devices().dumps({"d": device or secrets.token_urlsafe(16), "f": ctx.sessions.fingerprint}),
            max_age=DEVICE_LIFETIME, path=url_for("auth.login"), secure=request.is_secure, httponly=True,
            samesite="Lax",
        )
    return response


def _devices() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt="hermes-web-device")  # type: ignore[arg-type]  # create_app refuses to start without a secret key


def _known_device() -> str | None:
    """The id in a valid device cookie issued under the current password, else None."""
    raw = request.cookies.get(DEVICE_COOKIE)
    if not raw or len(raw) > 300:
        return None
    try:
        data = _devices().loads(raw, max_age=DEVICE_LIFETIME)
    except BadSignature:
        return None
    if not isinstance(data, dict) or data.get("f") != web().sessions.fingerprint:
        return None
    device = data.get("d")
    return device if isinstance(device, str) and 0 < len(device) <= 64 else None


def _refusal(attempt: Attempt) -> str:
    minutes = max(1, (attempt.retry_after + 59) // 60)
    wait = f"{minutes} minute{'s' * (minutes > 1)}"
    if attempt.everyone:
        return (f"Too many failed logins on this server from many addresses. Try again in {wait}, "
                "or from a browser you have logged in with before.")
    return f"Too many failed attempts. Try again in {wait}."


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
