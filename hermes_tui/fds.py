"""Waiting on a descriptor without ``select.select``, whose descriptor numbers stop at 1,024.

A long-running TUI or a web worker can hold more than 1,024 descriptors (sockets, databases, pipes of
earlier commands); ``select`` then raises ``ValueError`` for every new pipe. ``poll`` has no ceiling.
"""

from __future__ import annotations

import select
from typing import IO


def readable(fd: int | IO[bytes], seconds: float) -> bool:
    """True once ``fd`` has data or is closed at the other end, False after ``seconds`` without either."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(0.0, seconds) * 1000))
