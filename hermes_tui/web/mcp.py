"""The dashboard's MCP servers: started with the app, closed with it, shown at ``GET /api/mcp``.

Which servers' tools the web offers is declared once, in ``runtime.web_surface`` (a trusted
server's, or every server's with HERMES_WEB_ENABLE_MCP); here the manager runs, its failure lines
reach the chat streams running when they happen, and each server is described with what the web
does with it and why. The web never approves or enables a server: that stays with the terminal.

Every string a server sends (tool names, descriptions, failure reasons) is hostile: the JSON fields
are plain text without control or bidi characters (the page inserts them as text), and the panel's
markup comes from ``templates/mcp_panel.html``, whose autoescaping is the boundary, cleaned again
by ``render.panel_html``.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from flask import render_template

from hermes_tui.agent.mcp import report
from hermes_tui.agent.mcp.manager import McpManager, ServerStatus
from hermes_tui.agent.runtime import Surface
from hermes_tui.config import Config
from hermes_tui.textsafe import printable
from hermes_tui.web.render import panel_html

RECENT = 20  # failure lines kept for the panel
DESCRIPTION_CHARS = 160  # of a tool's description, in the panel and the JSON
CLOSE_SECONDS = 3.0

Follower = Callable[[str], None]


class WebMcp:
    """The manager of one app, and the lines it said. ``owned``: closing the app stops it."""

    def __init__(self, manager: McpManager, *, owned: bool = True) -> None:
        self.manager = manager
        self.owned = owned
        self._recent: deque[str] = deque(maxlen=RECENT)
        self._followers: list[Follower] = []
        self._lock = threading.Lock()
        manager.subscribe(self._heard)

    @classmethod
    def start(cls, config: Config) -> WebMcp:
        """The servers ``config`` declares, starting in the background; stopped at exit at the latest."""
        web = cls(McpManager(config.home, config.workspace))
        web.manager.start()
        atexit.register(web.close)  # a plain WSGI server may never tear the app down
        return web

    def close(self) -> None:
        if self.owned:
            self.manager.close(timeout=CLOSE_SECONDS)

    def follow(self, follower: Follower) -> Callable[[], None]:
        """``follower(line)`` hears each failure line from now on; call the result to stop."""
        with self._lock:
            self._followers.append(follower)

        def unfollow() -> None:
            with self._lock:
                if follower in self._followers:
                    self._followers.remove(follower)
        return unfollow

    def _heard(self, line: str) -> None:
        with self._lock:
            self._recent.append(line)
            followers = list(self._followers)
        for follower in followers:
            follower(line)

    # -- what the dashboard shows

    def view(self, surface: Surface, config: Config) -> dict[str, Any]:
        """Every server as plain text fields, plus ``html``: the panel, escaped by its template."""
        offers = surface.mcp_offers or (lambda _server: True)
        with self._lock:
            recent = [printable(line) for line in self._recent]
        data: dict[str, Any] = {
            "servers": [_server(status, offers) for status in self.manager.statuses()],
            "problems": [printable(line) for line in self.manager.problems],
            "recent": recent,
            "enable_mcp": config.web_enable_mcp,
        }
        data["html"] = panel_html(render_template("mcp_panel.html", **data))
        return data


def _server(status: ServerStatus, offers: Callable[[str], bool]) -> dict[str, Any]:
    spec = status.spec
    offered = status.state in ("ready", "failed") and offers(status.name)
    return {
        "name": status.name, "state": status.state, "state_words": report.STATE_WORDS[status.state],
        "transport": spec.transport, "origin": spec.origin, "trust": spec.trust,
        "tool_count": len(status.tools), "tokens": status.tokens,
        "tools": [{"name": printable(tool.name),
                   "description": printable(" ".join(tool.description.split()))[:DESCRIPTION_CHARS]}
                  for tool in status.tools],
        "offered": offered, "why": "" if offered else _why_not(status, offers(status.name)),
        "detail": printable(" ".join(status.detail.split())),
    }


def _why_not(status: ServerStatus, offers: bool) -> str:
    """Why the web does not offer this server's tools now, and what would change it."""
    name = status.name
    if status.state == "unapproved":
        return (f"From the workspace's .mcp.json and not approved: approve it where Hermes runs "
                f"(`hermes-tui mcp approve {name}`, or /mcp in the app). The web never approves a server.")
    if status.state == "disabled":
        return f"Disabled: `hermes-tui mcp enable {name}` turns it on again."
    if offers:  # starting (a failed one is offered: its next call starts it again)
        return "Starting: its tools are offered once it is ready."
    return ("Not offered on the web: its tools would ask first, and the web asks only about shell commands "
            'and file writes. Give it "trust": true in mcp.json, or set HERMES_WEB_ENABLE_MCP=true to run every '
            "server's tools without asking.")
