"""``create_app``: the Flask app of the dashboard, refusing to exist without its secrets.

It fails closed: no FLASK_SECRET_KEY, or no HERMES_WEB_PASSWORD (unless HERMES_WEB_ALLOW_NO_AUTH
is true), or a guessable one of either (see ``weak.py``), raises ``ConfigError`` with one line naming
the variable, before anything is served.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from hermes_tui.agent.sandbox import startup_notice
from hermes_tui.clock import Clock
from hermes_tui.config import Config, ConfigError
from hermes_tui.web import api, auth, errors, inputs, pages, security
from hermes_tui.web.context import EXTENSION, WebContext
from hermes_tui.web.lockout import LoginThrottle
from hermes_tui.web.mcp import WebMcp
from hermes_tui.web.session_store import ABSOLUTE_LIFETIME, SessionStore, password_fingerprint
from hermes_tui.web.state import MAX_STREAMS, AppState
from hermes_tui.web.weak import password_problem, secret_problem
from hermes_tui.web.webdb import WebDB

if TYPE_CHECKING:
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.llm import ModelHost

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024  # a chat message is capped at 32k characters (up to 4 bytes each)
KEEPALIVE_SECONDS = 10.0


def check_config(config: Config) -> None:
    """Raise ``ConfigError`` (one line, naming the variable) unless the dashboard may start."""
    if not config.flask_secret_key:
        raise ConfigError(
            "FLASK_SECRET_KEY is not set: hermes-web needs it to sign session cookies. Set it to a long "
            "random value, e.g. the output of: python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    problem = secret_problem(config.flask_secret_key)
    if problem:
        raise ConfigError(
            f"FLASK_SECRET_KEY is too weak: {problem}. Use a long random value, e.g. the output of: "
            "python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    if config.web_allow_no_auth and not config.web_password and not config.web_allowed_hosts:
        raise ConfigError(
            "HERMES_WEB_ALLOWED_HOSTS is not set: without a password (HERMES_WEB_ALLOW_NO_AUTH=true) the "
            "dashboard must name the host names it answers to, e.g. HERMES_WEB_ALLOWED_HOSTS=localhost."
        )
    if not config.web_password and not config.web_allow_no_auth:
        raise ConfigError(
            "HERMES_WEB_PASSWORD is not set: the dashboard needs a password (or, only on a network "
            "you trust, set HERMES_WEB_ALLOW_NO_AUTH=true)."
        )
    problem = password_problem(config.web_password) if config.web_password else None
    if problem:
        raise ConfigError(
            f"HERMES_WEB_PASSWORD is too weak: {problem}. Use a passphrase of several uncommon words "
            "or a password manager's random password."
        )


def create_app(
    config: Config | None = None,
    *,
    max_streams: int = MAX_STREAMS,
    keepalive_seconds: float = KEEPALIVE_SECONDS,
    bound_host: str = "127.0.0.1",
    mcp: McpManager | None = None,
    clock: Clock = time.monotonic,
    host: ModelHost | None = None,
) -> Flask:
    """Build the dashboard on one set of core objects; raises ``ConfigError`` when misconfigured.

    ``mcp``: the MCP servers to use; by default those ``config`` declares start now, in the
    background, and stop with the app's state. A given manager stays its caller's to close.
    ``clock``: what idle loops are measured on (tests move it). ``host``: where every model call
    runs (``serve.build`` gives the warm helper's); None: in this process."""
    config = Config.load() if config is None else config
    check_config(config)
    if not config.web_password:
        log.warning("hermes-web is running WITHOUT a password (HERMES_WEB_ALLOW_NO_AUTH=true)")
    if config.web_enable_shell and (sandbox_line := startup_notice(config)):
        log.warning("%s", sandbox_line)

    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=config.flask_secret_key,
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        MAX_FORM_MEMORY_SIZE=MAX_BODY_BYTES,
        SESSION_COOKIE_NAME="hermes_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=timedelta(seconds=ABSOLUTE_LIFETIME),
        TEMPLATES_AUTO_RELOAD=False,
    )
    app.config[security.ALLOWED_HOSTS] = security.allowed_hosts(config, bound_host)
    app.session_interface = security.SessionInterface()
    app.json = inputs.StrictJSONProvider(app)
    app.url_map.converters["int"] = inputs.RowIdConverter  # before any route is registered
    if config.web_trusted_proxies:
        n = config.web_trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)  # type: ignore[method-assign]  # Flask's documented way to add WSGI middleware

    state = AppState(config, max_streams=max_streams, clock=clock, host=host,
                     mcp=WebMcp.start(config) if mcp is None else WebMcp(mcp, owned=False))
    db = WebDB(config.db_path)
    app.extensions[EXTENSION] = WebContext(
        config=config, state=state, throttle=LoginThrottle(db),
        sessions=SessionStore(db, password_fingerprint(config.flask_secret_key or "", config.web_password)),
        keepalive_seconds=keepalive_seconds,
    )
    app.jinja_env.globals["csrf_token"] = security.csrf_token

    # Order matters: a foreign Host is refused before anything else; then the login gate answers
    # unauthenticated requests (401/redirect).
    app.before_request(security.check_host)
    app.before_request(api.body_limit)  # before the CSRF check reads an upload's form
    app.before_request(auth.require_login)
    app.before_request(security.check_request)
    app.after_request(security.add_headers)
    app.register_blueprint(auth.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(api.bp)
    errors.register(app)
    return app
