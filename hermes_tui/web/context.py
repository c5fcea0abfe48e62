"""What one app instance shares between requests, reachable from any view as ``web()``."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app, g

from hermes_tui.config import Config
from hermes_tui.web.lockout import LoginThrottle
from hermes_tui.web.session_store import SessionStore
from hermes_tui.web.state import AppState

EXTENSION = "hermes_web"


@dataclass(frozen=True)
class WebContext:
    config: Config
    state: AppState
    throttle: LoginThrottle
    sessions: SessionStore
    keepalive_seconds: float


def web() -> WebContext:
    return current_app.extensions[EXTENSION]


def session_key() -> str:
    """The server-side key of the logged-in browser session (set by the login gate)."""
    return g.session_key
