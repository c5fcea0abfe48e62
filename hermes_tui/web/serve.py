"""``hermes-web``: the dashboard under gunicorn, one process, a thread pool, streams capped below it.

Why these numbers: one worker, because the pool of live AgentLoops (and "one turn per browser",
and Stop) lives in process memory; ``--threads`` (default 8) run the Flask app, because a chat
stream holds its thread for the whole turn. At most half the threads may be chat streams (more get
503), so the login page and the API always have threads left however many streams are open.

Why gunicorn's asyncio ``asgi`` worker with ``bridge.WSGIBridge`` rather than ``gthread``: sockets
live on the event loop until their request is complete, so slow or stalled clients cannot take the
threads (see bridge.py). ``Worker`` adds two things to gunicorn's: on SIGTERM it cancels running
turns at once, so open streams end and the process exits inside Railway's 10 s window; and a
connection that has not sent a whole request head within ``--header-timeout`` seconds (30) is
closed (deadline.py), so idle or half-open connections cannot use up the file descriptors.
"""

from __future__ import annotations

import argparse
import logging
import threading
from collections.abc import Sequence
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gasgi import ASGIWorker

from hermes_tui import __version__
from hermes_tui.config import Config, ConfigError
from hermes_tui.web.app import MAX_BODY_BYTES, check_config, create_app
from hermes_tui.web.bridge import WSGIBridge
from hermes_tui.web.context import EXTENSION
from hermes_tui.web.deadline import HEAD_SECONDS, with_head_deadline

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = Config.port  # the PORT setting's default (config.py)
DEFAULT_THREADS = 8
GRACEFUL_SECONDS = 8  # SIGTERM to exit, under Railway's 10 s before SIGKILL


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
    parser.add_argument("--header-timeout", type=float, default=HEAD_SECONDS, metavar="SECONDS",
                        help=f"close a connection whose request head is unfinished after this long "
                             f"(default {HEAD_SECONDS:.0f})")
    parser.add_argument("--version", action="version", version=f"hermes-web {__version__}")
    return parser


class Worker(ASGIWorker):
    """gunicorn's asyncio worker, which also tells the app to end its running turns on SIGTERM."""

    def run(self) -> None:
        with_head_deadline(self.loop, getattr(self.asgi, "head_seconds", HEAD_SECONDS))  # before serving
        super().run()

    def handle_exit_signal(self) -> None:
        super().handle_exit_signal()
        stop = getattr(getattr(self, "asgi", None), "stop", None)
        if stop is not None:
            stop()


class _Gunicorn(BaseApplication):
    """gunicorn configured in code; the app is built in the worker (after fork), never in the master."""

    def __init__(self, config: Config, options: dict[str, Any], threads: int, host: str,
                 head_seconds: float = HEAD_SECONDS) -> None:
        self._config = config
        self._options = options
        self._threads = threads
        self._host = host
        self._head_seconds = head_seconds
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return build(self._config, self._threads, self._host, self._head_seconds)


def build(config: Config, threads: int, host: str = DEFAULT_HOST, head_seconds: float = HEAD_SECONDS) -> WSGIBridge:
    """The served application: the Flask app behind the bridge, every model call of it in the
    warm helper (``warm.attach``: started or reached now, and held while the app runs; each
    worker of a gunicorn with several attaches to the same one), or, with ``HERMES_HELPER=off``
    or no helper to be had, in this process with litellm imported in the background now."""
    from hermes_tui import warm

    model_host = warm.attach(config)
    app = create_app(config, max_streams=max_streams_for(threads), bound_host=host, host=model_host)
    state = app.extensions[EXTENSION].state
    bridge = WSGIBridge(app, threads=threads, max_body=MAX_BODY_BYTES, head_seconds=head_seconds)
    bridge.on_stop.append(state.cancel_all)
    bridge.on_close.append(state.close)
    if model_host is not None:
        holding = threading.Event()
        model_host.hold(holding)
        bridge.on_close.append(holding.set)
    from hermes_tui.learning.pending import start_background

    writer = start_background(config, state.memory, busy=state.busy, host=model_host)  # earlier sessions'
    if writer is not None:
        bridge.on_stop.append(writer.stop)
    return bridge


def _close_state(arbiter: Any, worker: Any) -> None:
    """gunicorn ``worker_exit`` hook: release the app if the lifespan shutdown did not run."""
    bridge = getattr(worker, "asgi", None)
    if isinstance(bridge, WSGIBridge):
        bridge.close()


def _raise_open_file_limit() -> None:
    """Every connection is a file descriptor; idle ones are cheap now, so allow as many as the system does."""
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            log.warning("could not raise the open-file limit from %d", soft)


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def serve(argv: Sequence[str] | None = None) -> None:
    """Parse ``hermes-web``'s arguments and run gunicorn; raises ``ConfigError`` (one line) when unusable."""
    args = web_parser().parse_args(argv)
    if args.threads < 2:
        raise ConfigError("--threads must be at least 2 (one for chat streams, one for the rest).")
    if not args.header_timeout > 0:
        raise ConfigError("--header-timeout must be a positive number of seconds (e.g. 30).")
    config = Config.load()
    port = args.port if args.port is not None else config.port
    check_config(config)
    for line in config.warnings:  # before logging is set up, logging's last resort writes it to stderr
        log.warning("%s", line)
    from hermes_tui.memory.store import MemoryStore

    MemoryStore(config.db_path).close()  # a damaged or unusable store: StoreError, one line, now
    from hermes_tui.logs import setup_logging

    setup_logging(config)
    _raise_open_file_limit()
    options = {
        "bind": _bind(args.host, port),
        "workers": 1,
        "worker_class": "hermes_tui.web.serve.Worker",
        "timeout": 60,  # the worker's heartbeat, and the longest wait for a request body's next bytes
        "graceful_timeout": GRACEFUL_SECONDS,
        "asgi_loop": "asyncio",
        "asgi_lifespan": "on",  # the bridge's shutdown step closes the app's state
        "keepalive": 5,
        "forwarded_allow_ips": "",  # forwarded headers are ProxyFix's job, per HERMES_WEB_TRUSTED_PROXIES
        "proc_name": "hermes-web",
        "control_socket_disable": True,  # no runtime control interface (a unix socket in $HOME)
        "worker_exit": _close_state,
    }
    _Gunicorn(config, options, args.threads, args.host, args.header_timeout).run()
