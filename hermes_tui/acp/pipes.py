"""stdin and stdout as the protocol's streams, and nothing else on stdout.

The protocol keeps its own copy of fd 1; fd 1 itself then points at stderr. Whatever else writes
to "stdout" (a print, a library's banner, a child process that inherits it) lands on stderr,
where the editor logs it, instead of in the middle of a JSON-RPC message.

Editors connect pipes; a file works too (``hermes-tui acp < requests > replies``, a test, a
script): asyncio's pipe transports refuse regular files, so those are read on a thread and
written directly (a file never makes a write wait).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any, BinaryIO

STREAM_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line may carry a whole file (the SDK's own default)


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """(reader of stdin, writer to the real stdout); from now on fd 1 is stderr."""
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)  # not inherited by children
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    if _is_pipe(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        _read_on_a_thread(loop, reader, sys.stdin.buffer)
    protocol: Any
    if _is_pipe(protocol_out.fileno()):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
    else:
        transport, protocol = _FileWriter(protocol_out), asyncio.streams.FlowControlMixin()
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def _is_pipe(fd: int) -> bool:
    """What asyncio's pipe transports take: a pipe, a socket or a terminal."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _read_on_a_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: BinaryIO) -> None:
    def feed() -> None:
        try:
            while data := source.readline():
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=feed, name="hermes-acp-stdin", daemon=True).start()


class _FileWriter(asyncio.WriteTransport):
    """A regular file as the protocol's output: each message written whole, at once."""

    def __init__(self, out: BinaryIO) -> None:
        super().__init__()
        self._out = out

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[self._out.write(view) or 0:]

    def is_closing(self) -> bool:
        return self._out.closed

    def close(self) -> None:
        self._out.close()
