"""The one clock type. Whatever waits or stamps time takes a ``Clock`` (``time.monotonic`` or
``time.time`` by default), so tests drive time instead of sleeping through it."""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds, as ``time.monotonic`` or ``time.time`` give them."""
