"""A deadline for the request head: a connection that has not finished its first head in time is closed.

Why: gunicorn's asyncio worker waits for a new connection's first request head with no time limit
(its keep-alive timer only runs between requests), so clients that open a connection and send
half a head, or nothing, hold a file descriptor each for as long as they like; enough of them
and the process cannot accept anyone. ``HeadDeadline`` wraps gunicorn's protocol object for one
connection, passes every event through unchanged, and answers 408 and closes the connection if
the blank line that ends the head has not arrived within ``seconds``. Later requests on a kept-alive
connection are bounded by gunicorn's keep-alive timer; bodies by ``WSGIBridge.body_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)

HEAD_SECONDS = 30.0
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class HeadDeadline(asyncio.Protocol):
    """``inner`` (gunicorn's protocol) for one connection, closed if its first head takes over ``seconds``."""

    def __init__(self, inner: asyncio.Protocol, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.inner = inner
        self.loop = loop
        self.seconds = seconds
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""  # the last bytes seen, so a "\r\n\r\n" split between reads is found

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.timer = self.loop.call_later(self.seconds, self._expire)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.timer is not None:
            seen = self.tail + data
            if b"\r\n\r\n" in seen or b"\n\n" in seen:
                self._cancel()
            else:
                self.tail = seen[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def _cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expire(self) -> None:
        self.timer = None
        if self.transport is None or self.transport.is_closing():
            return
        log.info("closed a connection whose request head was unfinished after %.0f s", self.seconds)
        self.transport.write(_TIMEOUT)
        self.transport.close()


def with_head_deadline(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    """Make every server ``loop`` creates from now on wrap its connections in ``HeadDeadline``."""
    create = loop.create_server

    async def create_server(factory: Any, *args: Any, **kwargs: Any) -> asyncio.Server:
        return await create(lambda: HeadDeadline(factory(), loop, seconds), *args, **kwargs)

    loop.create_server = create_server  # type: ignore[method-assign, assignment]  # wraps the loop's own, same calls
