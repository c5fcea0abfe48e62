"""An editor for tests: the ACP SDK's client side driving a real ``hermes-tui acp`` process.

``Editor`` is the client (it records every session update and answers permission requests as
told); ``acp_agent`` starts the installed entry point with the test's environment and yields the
SDK's ``ClientSideConnection`` to it, already initialized.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from asyncio.subprocess import Process
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    Implementation,
    InitializeResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.helpers import HERMES_TUI

BOUND = 300.0  # seconds a whole exchange may take (litellm's import on a loaded machine), not a timing check


@dataclass
class Editor:
    """The ACP client: ``answer`` is the option id it picks when asked, or "cancelled";
    ``when_asked`` runs before it answers (a test cancels the prompt there)."""

    answer: str = "once"
    when_asked: Callable[[ToolCallUpdate], Awaitable[None]] | None = None
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[tuple[ToolCallUpdate, list[str]]] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(self, options: list[Any], session_id: str, tool_call: ToolCallUpdate,
                                 **_: Any) -> RequestPermissionResponse:
        self.asked.append((tool_call, [option.option_id for option in options]))
        if self.when_asked is not None:
            await self.when_asked(tool_call)
        if self.answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=self.answer, outcome="selected"))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))
        self._arrived.set()

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Wait for the updates that make ``predicate`` true (the exchange's bound stops a stuck test)."""
        while not predicate():
            self._arrived.clear()
            await self._arrived.wait()

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for _, update in self.updates if update.session_update == kind)


@contextlib.asynccontextmanager
async def acp_agent(editor: Editor, stderr: Path, cwd: Path | None = None
                    ) -> AsyncIterator[tuple[ClientSideConnection, InitializeResponse]]:
    """``hermes-tui acp`` in its own process, its stderr in ``stderr``; initialized."""
    async with acp_process(editor, stderr, cwd) as (conn, hello, _process):
        yield conn, hello


@contextlib.asynccontextmanager
async def acp_process(editor: Editor, stderr: Path, cwd: Path | None = None
                      ) -> AsyncIterator[tuple[ClientSideConnection, InitializeResponse, Process]]:
    """``acp_agent`` with the process itself (for signals)."""
    with stderr.open("ab") as err:
        async with spawn_agent_process(editor, HERMES_TUI, "acp", env=dict(os.environ), cwd=cwd,
                                       transport_kwargs={"stderr": err, "shutdown_timeout": 60.0}) as (conn, process):
            hello = await asyncio.wait_for(conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_info=Implementation(name="test-editor", version="1")), BOUND)
            yield conn, hello, process


def run(scenario: Awaitable[None]) -> None:
    """Run one editor's exchange, bounded."""
    asyncio.run(asyncio.wait_for(scenario, BOUND))
