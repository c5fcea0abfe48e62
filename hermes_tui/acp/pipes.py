"""stdin and stdout as the protocol's streams, and nothing else on stdout.

The protocol keeps its own copy of fd 1; fd 1 itself then points at stderr. Whatever else writes
to "stdout" (a print, a library's banner, a child process that inherits it) lands on stderr,
where the editor logs it, instead of in the middle of a JSON-RPC message.
"""

from __future__ import annotations

import asyncio
import os
import sys

STREAM_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line may carry a whole file (the SDK's own default)


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """(reader of stdin, writer to the real stdout); from now on fd 1 is stderr."""
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)  # not inherited by children
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
