"""Reading a model's stream: a pump thread, so a cancel or a deadline never waits for the
network, and the assembly of streamed tool call fragments into typed calls. Used by ``llm``; no
litellm here (it hands over litellm's chunks, which this module only reads by attribute).
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hermes_tui.conversation import ToolCall
from hermes_tui.events import Notice, TextDelta, Usage

log = logging.getLogger(__name__)


@dataclass
class _CallParts:
    """A tool call while its fragments arrive; ``arguments`` is the raw JSON text so far."""

    id: str
    name: str
    arguments: str = ""


@dataclass
class StreamResult:
    """What one model call produced, once its stream has ended."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    cancelled: bool = False


StreamItem = TextDelta | Notice | StreamResult  # what a model stream yields, in every host


class ToolCallAccumulator:
    """Assembles streamed tool-call fragments by index *and* id.

    A fragment with a new id at an index already in use starts a new call (some providers reuse
    index 0 for every parallel call); fragments without an id extend the call at their index.
    """

    def __init__(self) -> None:
        self.calls: list[_CallParts] = []
        self._by_index: dict[int, _CallParts] = {}

    def add(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        index = len(self.calls) if index is None else index
        call_id = getattr(fragment, "id", None) or ""
        function = getattr(fragment, "function", None)
        name = getattr(function, "name", None) or ""
        arguments = getattr(function, "arguments", None) or ""
        current = self._by_index.get(index)
        if current is None or (call_id and current.id and call_id != current.id):
            current = _CallParts(id=call_id, name=name)
            self.calls.append(current)
            self._by_index[index] = current
        if call_id and not current.id:
            current.id = call_id
        if name and not current.name:
            current.name = name
        current.arguments += arguments

    def finish(self) -> list[ToolCall]:
        """The calls, typed and their arguments checked once (``conversation.ToolCall``)."""
        return [ToolCall.parse(c.id or f"call_{n}_{random.getrandbits(32):08x}", c.name, c.arguments.strip() or "{}")
                for n, c in enumerate(self.calls) if c.name]


class Pump:
    """Reads a litellm stream on its own thread so that cancel never waits for the network.

    The consumer waits on a queue with a short timeout and checks ``cancel`` in between; on
    cancel the reader thread closes the stream at its next chunk and ends by itself.
    """

    _END = object()

    def __init__(self, open_stream: Any) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stream: Any = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(open_stream,), name="llm-stream", daemon=True)
        self._thread.start()

    def _run(self, open_stream: Any) -> None:
        try:
            if self._closed.is_set():  # given up before this thread ran: the request is never sent
                self._queue.put(self._END)
                return
            self._stream = open_stream()
            for chunk in self._stream:
                if self._closed.is_set():
                    break
                self._queue.put(chunk)
            self._queue.put(self._END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
            self._queue.put(exc)
        finally:
            self._close_stream()

    def iterate(self, cancel: threading.Event, deadline: float | None = None) -> Iterator[Any]:
        while not cancel.is_set() and (deadline is None or time.monotonic() < deadline):
            try:
                item = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None and hasattr(stream, "close"):
            try:
                stream.close()
            except Exception:  # best effort, the connection is being dropped
                log.debug("closing the stream failed", exc_info=True)

    def close(self) -> None:
        """Ask the reader thread to close the stream; it does so at its next chunk or at once
        when it is done. Closing from here would race its ``for`` loop over the same stream."""
        self._closed.set()

    def abandon(self) -> None:
        """Close the stream now, even while the reader thread waits for the next chunk: a request
        nobody waits for must not keep a one-at-a-time server busy until its next token. The
        reader then fails on the closed stream, which nobody reads any more."""
        self._closed.set()
        if self._thread.is_alive():
            self._close_stream()
