"""One turn as an NDJSON stream: the ``events.py`` dicts, one per line, plus two web-only lines.

* ``{"type": "keepalive"}`` after ``keepalive`` seconds without an event (long tool runs), so
  proxies and browsers do not time the stream out.
* ``tool_call_started`` carries ``summary`` too: the argument its collapsed header shows (the
  command, the path...), as the terminal app's one-line display of the call.
* ``approval_needed`` (``id``, ``name``, ``arguments``) when a call waits for the page's answer
  (``POST /api/approve``, see ``approvals.py``); closing the stream denies it.
* ``{"type": "text_html", "html": ...}`` when a block of streamed text ends (before a tool call
  starts, and before ``turn_finished``): the block rendered and sanitized on the server, for the
  page to swap in for the plain text it showed while streaming.

The turn runs on the agent runtime's thread so the response can send keep-alives while it is
busy. If the browser goes away mid-turn (the WSGI server closes the response) the turn is cancelled.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable, Iterator
from typing import Any

from hermes_tui.agent.runtime import EventQueue, start_turn
from hermes_tui.agent.tools import summary_argument
from hermes_tui.events import ApprovalNeeded, Event, Notice
from hermes_tui.web.render import markdown_html
from hermes_tui.web.state import Turn

KEEPALIVE = {"type": "keepalive"}
GONE_CHECK = 1.0  # seconds between keep-alives while a call waits for the page: a closed page denies it soon
# Events that end a streamed block of text: it is sent rendered before them (files_changed and the
# receipt come between the answer's last words and turn_finished, and start lines of their own).
_BLOCK_ENDS = frozenset({"tool_call_started", "files_changed", "receipt", "notice", "turn_finished"})


def _line(item: dict[str, Any]) -> bytes:
    return (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8")


class TurnStream:
    """The WSGI response body of one turn: iterate for NDJSON lines; ``close()`` cancels if unfinished.

    ``close`` (called by the WSGI server when the browser goes away, even before the first line was
    sent) is what stops a turn nobody is watching, and frees the browser's turn slot.
    """

    def __init__(self, turn: Turn, text: str, keepalive: float,
                 follow: Callable[[Callable[[str], None]], Callable[[], None]]) -> None:
        self._keepalive = keepalive
        self._turn = turn
        self._events = EventQueue()
        self._finished = False
        # ``follow``: lines said meanwhile (an MCP server that fails) become notices of this turn.
        unfollow = follow(lambda line: self._events.put(Notice(line)))
        questions = turn.questions

        def sink(event: Event) -> None:
            if isinstance(event, ApprovalNeeded):  # open before the page can see it and answer
                questions.expect(event.id)
            self._events.put(event)

        def end() -> None:
            unfollow()
            questions.release()
            turn.release()  # before the stream ends, so the page can send again at once
            self._events.end()

        if turn.notice:
            self._events.put(Notice(turn.notice))
        questions.open_turn()
        self._running = start_turn(turn.loop, text, sink, turn.runner, on_end=end)

    def __iter__(self) -> Iterator[bytes]:
        block: list[str] = []
        while True:
            waiting = self._turn.questions.waiting()
            try:
                event = self._events.get(timeout=min(self._keepalive, GONE_CHECK) if waiting else self._keepalive)
            except queue.Empty:
                yield _line(KEEPALIVE)
                continue
            if event is None:
                self._finished = True
                return
            item = event.to_dict()
            if item["type"] == "text_delta":
                block.append(item["text"])
            elif item["type"] == "tool_call_started":
                item["summary"] = summary_argument(item["name"], item["arguments"])
            elif item["type"] == "subagent" and item["event"]["type"] == "tool_call_started":
                inner = item["event"]  # a sub-agent's call, shown as the turn's (app.js)
                inner["summary"] = summary_argument(inner["name"], inner["arguments"])
            if item["type"] in _BLOCK_ENDS and block:
                yield _line({"type": "text_html", "html": markdown_html("".join(block))})
                block.clear()
            yield _line(item)

    def close(self) -> None:
        if not self._finished:
            self._turn.abandon()
            self._turn.questions.release()  # nobody can answer now: a waiting call is denied
            self._running.cancel()
