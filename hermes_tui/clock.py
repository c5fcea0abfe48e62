"""The one clock type. Whatever waits or stamps time takes a ``Clock`` (``time.monotonic`` or
``time.time`` by default), so tests drive time instead of sleeping through it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds, as ``time.monotonic`` or ``time.time`` give them."""


POLL = 0.05
"""How often a wait looks at its clock (a test's clock moves between two looks): ``wait_for``
and ``Background.shutdown``."""


def wait_for(event: threading.Event, seconds: float, clock: Clock = time.monotonic) -> bool:
    """``event.wait(seconds)`` with the seconds counted on ``clock``: True when the event was set.

    The one way Hermes waits out a delay (a retry's backoff, a runner's deadline): on the real
    clock it is a plain wait; on a test's clock it ends as soon as that clock says so."""
    deadline = clock() + seconds
    while not event.is_set() and (left := deadline - clock()) > 0:
        event.wait(min(left, POLL))
    return event.is_set()
