"""``hermes-web``: the dashboard under gunicorn, one process, a thread pool, streams capped below it.

Why these numbers: one worker, because the pool of live AgentLoops (and "one turn per browser",
and Stop) lives in process memory; ``gthread`` with ``--threads`` (default 8), because a chat
stream holds its thread for the whole turn. At most half the threads may be chat streams (more get
503), so the login page and the API always have threads left however many streams are open.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from typing import Any

from gunicorn.app.base import BaseApplication

from hermes_tui import __version__
from hermes_tui.config import Config, ConfigError
from hermes_tui.web.app import check_config, create_app
from hermes_tui.web.context import EXTENSION

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_THREADS = 8


def max_streams_for(threads: int) -> int:
    """Chat streams allowed at once: half the threads, so the other half always serve everything else."""
    return max(1, threads // 2)


def web_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-web",
        description="Serve the Hermes dashboard (password-gated; see FLASK_SECRET_KEY and HERMES_WEB_PASSWORD).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}; 0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=None,
                        help=f"port (default: $PORT if set, else {DEFAULT_PORT})")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help=f"request threads (default {DEFAULT_THREADS}; half of them at most serve chat streams)")
    parser.add_argument("--version", action="version", version=f"hermes-web {__version__}")
    return parser


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    """gunicorn configured in code; the app is built in the worker (after fork), never in the master."""

    def __init__(self, config: Config, options: dict[str, Any], max_streams: int) -> None:
        self._config = config
        self._options = options
        self._max_streams = max_streams
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from hermes_tui.llm import warm

        app = create_app(self._config, max_streams=self._max_streams)
        warm()  # import litellm now, not during the first chat
        return app


def _close_state(arbiter: Any, worker: Any) -> None:
    """gunicorn ``worker_exit`` hook: cancel running turns and close the database cleanly."""
    app = getattr(worker, "wsgi", None)
    extensions = getattr(app, "extensions", {})
    if EXTENSION in extensions:
        extensions[EXTENSION].state.close()


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def serve(argv: Sequence[str] | None = None) -> None:
    """Parse ``hermes-web``'s arguments and run gunicorn; raises ``ConfigError`` (one line) when unusable."""
    args = web_parser().parse_args(argv)
    if args.threads < 2:
        raise ConfigError("--threads must be at least 2 (one for chat streams, one for the rest).")
    port = args.port
    if port is None:
        raw = os.environ.get("PORT", "")
        if raw and not raw.isdigit():
            raise ConfigError(f"PORT={raw!r} is not a port number.")
        port = int(raw) if raw else DEFAULT_PORT
    config = Config.load()
    check_config(config)
    from hermes_tui.logs import setup_logging

    setup_logging(config)
    options = {
        "bind": _bind(args.host, port),
        "workers": 1,
        "worker_class": "gthread",
        "threads": args.threads,
        "timeout": 60,  # gthread: the worker's heartbeat, not a per-request limit (streams run longer)
        "graceful_timeout": 10,
        "keepalive": 5,
        "forwarded_allow_ips": "",  # forwarded headers are ProxyFix's job, per HERMES_WEB_TRUSTED_PROXIES
        "proc_name": "hermes-web",
        "control_socket_disable": True,  # no runtime control interface (a unix socket in $HOME)
        "worker_exit": _close_state,
    }
    _Gunicorn(config, options, max_streams_for(args.threads)).run()
