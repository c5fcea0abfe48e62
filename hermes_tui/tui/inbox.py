"""Events from worker threads to the app thread: in order, and coalesced under load.

A worker ``put``s every event. The first one posts ``EventsReady``; after that the receiver
``take``s on its own schedule, and only a ``take`` that finds nothing re-arms the inbox (the next
``put`` posts again). So a lone event is handled at once, while a stream of 1,000 text deltas a
second costs the app a few dozen wake-ups and reaches it as merged strings.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from textual.message import Message
from textual.message_pump import MessagePump

if TYPE_CHECKING:
    from hermes_tui.events import Event, TextDelta


class EventsReady(Message):
    """Some events wait in the inbox; the receiver calls ``EventInbox.take``."""


class EventInbox:
    def __init__(self, receiver: MessagePump) -> None:
        self._receiver = receiver
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._signalled = False

    def put(self, event: Event) -> None:
        """Any thread. Thread-safe: ``post_message`` is Textual's thread-safe entry point."""
        with self._lock:
            self._events.append(event)
            if self._signalled:
                return
            self._signalled = True
        self._receiver.post_message(EventsReady())

    def take(self) -> list[Event]:
        """App thread: everything queued so far, consecutive text deltas merged; when there is
        nothing, the inbox re-arms and the next ``put`` posts ``EventsReady`` again."""
        with self._lock:
            events, self._events = self._events, []
            if not events:
                self._signalled = False
        return coalesce(events)


def coalesce(events: Iterable[Event]) -> list[Event]:
    """Runs of text deltas merged into one (by ``type``: this module stays off the start-up path)."""
    out: list[Event] = []
    run: list[TextDelta] = []

    def close_run() -> None:
        if run:
            out.append(replace(run[0], text="".join(e.text for e in run)))
            run.clear()

    for event in events:
        if event.type == "text_delta":
            run.append(cast("TextDelta", event))
        else:
            close_run()
            out.append(event)
    close_run()
    return out
