"""Request and response hardening shared by every route: CSRF, same-origin checks, headers, cookies.

* CSRF: a random token lives in the (signed) session. Forms send it as ``csrf_token``; scripts read
  ``<meta name="csrf-token">`` and send it as ``X-CSRF-Token``. Every request that is not GET/HEAD/
  OPTIONS must carry it, and must not come from another site (``Origin`` and ``Sec-Fetch-Site``).
* Headers: a strict CSP (no inline script or style anywhere), no framing, no sniffing, no referrer
  to other sites, HSTS over HTTPS, and ``Cache-Control: no-store`` on the API and on HTML pages (they
  embed the CSRF token).
* Cookies: HttpOnly and SameSite=Lax from the app config; Secure decided per request, so the same
  deployment works on http://127.0.0.1 and behind an HTTPS proxy.
* Hosts: a request whose ``Host`` is not on the allowlist gets a 400 before anything else runs.
  That is what stops DNS rebinding (a foreign page whose name is made to resolve to this server
  is same-origin with itself, so CSRF checks cannot tell; only its Host header gives it away).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable

from flask import Flask, Response, abort, current_app, request, session
from flask.sessions import SecureCookieSessionInterface

from hermes_tui.config import Config

CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
)
_ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})  # "none": typed URL, bookmark
ALLOWED_HOSTS = "HERMES_ALLOWED_HOSTS"  # app.config key
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", "[::]", ""})  # not names anyone can type
# Railway's deploy health check calls the health path with this Host: answered for GET /login only.
RAILWAY_HEALTHCHECK_HOST = "healthcheck.railway.app"


def csrf_token() -> str:
    """This session's CSRF token, created on first use (templates call it)."""
    token = session.get("csrf")
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def new_csrf_token() -> str:
    """A fresh token (login rotates it along with the session)."""
    session.pop("csrf", None)
    return csrf_token()


def is_api() -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def allowed_hosts(config: Config, bound_host: str) -> tuple[str, ...]:
    """HERMES_WEB_ALLOWED_HOSTS when set; else the bound host, localhost and Railway's public domain."""
    if config.web_allowed_hosts:
        return config.web_allowed_hosts
    bound = bound_host.strip().lower()
    if ":" in bound and not bound.startswith("["):
        bound = f"[{bound}]"
    hosts = [*LOCAL_HOSTS, *([bound] if bound not in _WILDCARD_ADDRESSES else [])]
    if config.railway_public_domain:
        hosts.append(config.railway_public_domain)
    return tuple(dict.fromkeys(hosts))


def host_name(header: str) -> str:
    """The name part of a ``Host`` header: lower case, without port or trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        return header[: end + 1] if end > 0 else ""
    if header.count(":") == 1:
        header = header.split(":", 1)[0]
    return header.rstrip(".")


def host_allowed(header: str, allowed: Iterable[str]) -> bool:
    name = host_name(header)
    return bool(name) and any(name == ref or (ref.startswith(".") and (name.endswith(ref) or name == ref[1:]))
                              for ref in allowed)


def check_host() -> None:
    """``before_request``, first of all: 400 unless the Host header is on the allowlist."""
    host = request.host  # after ProxyFix: the forwarded host when proxies are trusted
    if host_allowed(host, current_app.config[ALLOWED_HOSTS]):
        return
    if host_name(host) == RAILWAY_HEALTHCHECK_HOST and request.method in ("GET", "HEAD") and request.path == "/login":
        return
    abort(400, "this server does not answer to that host name (see HERMES_WEB_ALLOWED_HOSTS)")


def check_request() -> None:
    """``before_request``: refuse cross-site and token-less state-changing requests with 403."""
    if request.method in SAFE_METHODS:
        return
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in _ALLOWED_FETCH_SITES:
        abort(403, "cross-site request refused")
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        abort(403, "cross-origin request refused")
    expected = session.get("csrf")
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        sent = request.form.get(CSRF_FIELD)
    if not isinstance(expected, str) or not sent or not hmac.compare_digest(
        sent.encode("utf-8"), expected.encode("utf-8")
    ):
        abort(403, "missing or invalid CSRF token; reload the page")


def add_headers(response: Response) -> Response:
    """``after_request``: security headers on every response, errors and static files included."""
    headers = response.headers
    headers["Content-Security-Policy"] = CSP
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "same-origin"  # "no-referrer" would make form posts send Origin: null
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Permissions-Policy"] = "camera=(), microphone=(), geolocation=()"
    if request.is_secure:
        headers["Strict-Transport-Security"] = "max-age=31536000"
    if is_api() or response.mimetype == "text/html":
        headers["Cache-Control"] = "no-store"
    return response


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, with the Secure flag set whenever the request came over HTTPS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or request.is_secure
