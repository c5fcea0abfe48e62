"""Serve the Flask (WSGI) app from gunicorn's asyncio worker: a slow client costs a socket, not a thread.

Why: gunicorn's ``gthread`` worker hands a connection to a thread as soon as its first bytes
arrive, and the thread then reads the rest of the request; a client that sends half a request
line (or a body at one byte a second) holds that thread for as long as it likes, and a handful of
them take every thread from ``/login``. Here gunicorn's ``asgi`` worker reads headers on its event
loop, this bridge reads the body there too (at most ``max_body`` bytes within ``body_seconds``),
and only a *complete* request is given one of ``threads`` threads to run the unchanged Flask app.
That is what a buffering front (nginx) does for a WSGI server, inside the one Railway process.

Responses go back to the loop through a small queue: a chat stream's NDJSON lines leave as they
are produced, and a client that stops reading stalls only its own thread, for at most
``stall_seconds``. When the client goes away, the app's iterator is closed (``TurnStream.close``
cancels the turn) at its next line, as under a WSGI server.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

log = logging.getLogger(__name__)

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

QUEUE_MESSAGES = 16
MAX_BUFFERED_BYTES = 64 * 1024 * 1024  # request bodies held at once, all clients together


class _Full(Exception):
    """Buffering this body would exceed ``MAX_BUFFERED_BYTES``."""


class _ClientGone(Exception):
    """The client disconnected or stopped reading; stop producing its response."""


class _Channel:
    """Response messages from one app thread to the event loop, with back-pressure."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stall_seconds: float) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[Message] = asyncio.Queue(QUEUE_MESSAGES)
        self.gone = threading.Event()
        self.stall_seconds = stall_seconds

    def put(self, message: Message) -> None:
        """Called on the app thread; raises ``_ClientGone`` instead of waiting for a dead client."""
        if self.gone.is_set():
            raise _ClientGone
        future = asyncio.run_coroutine_threadsafe(self.queue.put(message), self.loop)
        try:
            future.result(timeout=self.stall_seconds)
        except Exception:  # noqa: BLE001 - a timeout, or the loop is shutting down
            future.cancel()
            self.gone.set()
            raise _ClientGone from None


class WSGIBridge:
    """An ASGI application running ``app`` (WSGI) on ``threads`` threads, fed whole requests only."""

    def __init__(self, app: WSGIApp, *, threads: int, max_body: int, body_seconds: float = 30.0,
                 stall_seconds: float = 60.0, head_seconds: float = 30.0) -> None:
        self.app = app
        self.max_body = max_body
        self.body_seconds = body_seconds
        self.head_seconds = head_seconds  # for the request head; serve.Worker enforces it (deadline.py)
        self.stall_seconds = stall_seconds
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="hermes-web")
        self.on_stop: list[Callable[[], None]] = []  # SIGTERM: end what runs (see serve.Worker)
        self.on_close: list[Callable[[], None]] = []  # the worker is exiting: release resources
        self._closed = False
        self._stopping = False
        self._buffered = 0  # bytes of unfinished request bodies (touched on the event loop only)

    # -- lifecycle --------------------------------------------------------------------------

    def stop(self) -> None:
        """Shutdown begins: refuse new requests, run the stop callbacks (on a thread: they may block)."""
        self._stopping = True
        for callback in self.on_stop:
            threading.Thread(target=callback, name="hermes-web-stop", daemon=True).start()

    def close(self) -> None:
        """Release everything once (lifespan shutdown, or gunicorn's worker_exit as a fallback)."""
        if self._closed:
            return
        self._closed = True
        for callback in self.on_close:
            try:
                callback()
            except Exception:  # the other callbacks must still run
                log.exception("shutdown step failed")
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http" and self._stopping:  # e.g. a new chat on a kept-alive connection
            await _refuse(scope, send, 503, "the server is restarting; try again in a moment")
        elif scope["type"] == "http":
            body = await self._read_body(scope, receive, send)
            if body is not None:
                await self._respond(scope, body, receive, send)
        # websockets: not offered; returning without accepting makes the server refuse it

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.get_running_loop().run_in_executor(None, self.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- one request ------------------------------------------------------------------------

    async def _read_body(self, scope: Message, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None after answering 413/408 (or when the client left)."""
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await _refuse(scope, send, 413, "the request body is too large")
            return None
        chunks: list[bytes] = []
        size = 0

        async def collect() -> bool:
            nonlocal size
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return False
                chunk = message.get("body", b"")
                size += len(chunk)
                self._buffered += len(chunk)
                if size > self.max_body:
                    raise OverflowError
                if self._buffered > MAX_BUFFERED_BYTES:
                    raise _Full
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return True

        try:
            complete = await asyncio.wait_for(collect(), timeout=self.body_seconds)
        except OverflowError:
            await _refuse(scope, send, 413, "the request body is too large")
            return None
        except _Full:
            await _refuse(scope, send, 503, "the server is busy; try again shortly")
            return None
        except TimeoutError:
            await _refuse(scope, send, 408, "the request body took too long to arrive")
            return None
        finally:
            self._buffered -= size
        return b"".join(chunks) if complete else None

    async def _respond(self, scope: Message, body: bytes, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        channel = _Channel(loop, self.stall_seconds)
        work = loop.run_in_executor(self.pool, _run_app, self.app, environ_for(scope, body), channel)
        watcher = asyncio.ensure_future(_watch_disconnect(receive, channel))
        try:
            while True:
                getter = asyncio.ensure_future(channel.queue.get())
                racing: list[asyncio.Future[Any]] = [getter, work]
                await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                await _forward(getter.result(), send, channel)
            while not channel.queue.empty():  # every put completed before the thread returned
                await _forward(channel.queue.get_nowait(), send, channel)
            await work
        finally:
            watcher.cancel()
            if not work.done():  # the loop is being torn down mid-response
                channel.gone.set()


async def _forward(message: Message, send: Send, channel: _Channel) -> None:
    if channel.gone.is_set():
        return
    try:
        await send(message)
    except Exception:  # noqa: BLE001 - the connection is gone
        channel.gone.set()


async def _watch_disconnect(receive: Receive, channel: _Channel) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            channel.gone.set()
            return


def _run_app(app: WSGIApp, environ: dict[str, Any], channel: _Channel) -> None:
    """Run one WSGI request on this (pool) thread, passing its response to the loop."""
    pending: list[Any] = []  # [status, headers] once start_response ran
    sent = False

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info is not None and sent:
            raise exc_info[1].with_traceback(exc_info[2])
        pending[:] = [status, headers]
        return write

    def write(data: bytes) -> None:
        nonlocal sent
        if not sent:
            status, headers = pending
            channel.put({"type": "http.response.start", "status": int(status.split(" ", 1)[0]),
                         "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]})
            sent = True
        if data:
            channel.put({"type": "http.response.body", "body": data, "more_body": True})

    iterable: Iterable[bytes] | None = None
    try:
        iterable = app(environ, start_response)
        for chunk in iterable:
            write(chunk)
        write(b"")
        channel.put({"type": "http.response.body", "body": b"", "more_body": False})
    except _ClientGone:
        pass
    except Exception:  # one failed request must not take the worker down
        log.exception("request failed in the WSGI app")
        if not sent:
            try:
                channel.put({"type": "http.response.start", "status": 500,
                             "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
                channel.put({"type": "http.response.body", "body": b"internal error\n", "more_body": False})
            except _ClientGone:
                pass
    finally:
        close = getattr(iterable, "close", None)
        if close is not None:
            close()


def environ_for(scope: Message, body: bytes) -> dict[str, Any]:
    """The PEP 3333 environ of an ASGI HTTP scope whose body was read whole."""
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    path = unquote_to_bytes(raw_path.split(b"?", 1)[0]).decode("latin-1")
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", ""),
        "PATH_INFO": path,
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = str(client[0]), str(client[1])
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        if "_" in name or name in ("content-length", "transfer-encoding"):
            continue  # "_" would alias a dashed header in the environ; the body is already whole
        value = raw_value.decode("latin-1")
        key = "CONTENT_TYPE" if name == "content-type" else "HTTP_" + name.upper().replace("-", "_")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ", ") + value
        environ[key] = value
    if body or scope["method"] not in ("GET", "HEAD", "OPTIONS", "DELETE"):
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def _header(scope: Message, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return None


async def _refuse(scope: Message, send: Send, status: int, reason: str) -> None:
    """Answer without the app: JSON under /api (like every API error), plain text elsewhere."""
    if scope["path"] == "/api" or scope["path"].startswith("/api/"):
        kind, body = b"application/json", json.dumps({"error": reason}).encode("utf-8")
    else:
        kind, body = b"text/plain; charset=utf-8", reason.encode("utf-8") + b"\n"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})
