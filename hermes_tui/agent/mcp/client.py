"""One MCP server's connection, on the SDK (``mcp``): started, listed, called, watched, closed.

Everything here runs on the manager's event loop. A connection is one task that enters the
transport and the session and holds them until it is told to stop or the server goes away
(the SDK's contexts must be left by the task that entered them); calls run as other tasks on
the same session. A stream that ends (the process exited) is noticed at once, through a relay
between the transport and the session.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hermes_tui.agent.mcp.config import Resolved

log = logging.getLogger(__name__)

_HTTP_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # a response stream may stay open a while
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
LIST_PAGES = 20  # pages of tools/list read at most (a server that never stops paging is cut)


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it; ``qualified`` is the name the model calls it by."""

    server: str
    name: str
    description: str
    schema: dict[str, Any] = field(hash=False, compare=False)
    read_only: bool = False  # the server says it changes nothing (``annotations.readOnlyHint``)

    @property
    def qualified(self) -> str:
        """``mcp__<server>__<tool>``, in the characters and length providers accept for names."""
        return _NAME_UNSAFE.sub("_", f"mcp__{self.server}__{self.name}")[:64]

    @property
    def parameters(self) -> dict[str, Any]:
        """The input schema as a function's parameters (an object, whatever the server sent)."""
        schema = dict(self.schema) if isinstance(self.schema, dict) else {}
        schema["type"] = "object"
        if not isinstance(schema.get("properties"), dict):
            schema["properties"] = {}
        return schema

    def spec(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.qualified, "description": self.description,
                                                  "parameters": self.parameters}}

    @property
    def tokens(self) -> int:
        """About what its schema costs in the prompt (4 characters a token: no tokenizer needed)."""
        return len(json.dumps(self.spec(), ensure_ascii=False)) // 4 + 1


class ServerGone(RuntimeError):
    """The server is not connected (it never started, exited, or stopped answering)."""


def first_line(exc: BaseException) -> str:
    """The innermost readable cause of a failure, on one line (task groups nest them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # task groups nest them
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """A started server: ``start`` connects and lists its tools; ``ended`` is set when it ends."""

    def __init__(self, resolved: Resolved, cwd: Path, errlog: TextIO) -> None:
        self.resolved = resolved
        self.name = resolved.spec.name
        self.cwd = cwd  # where a stdio server starts (``McpManager.folder_for``)
        self.errlog = errlog  # the server's stderr (a log file: never the terminal)
        self.tools: list[RemoteTool] = []
        self.session: ClientSession | None = None
        self.gone = asyncio.Event()  # the stream ended (or the connection is being closed)
        self.ended = asyncio.Event()  # the connection is over; ``failure`` says why, if it failed
        self.failure: str | None = None  # why it ended, when it was not asked to
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Its failure is read by ``start`` unless start gave up first: never "never retrieved".
        self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float) -> None:
        """Connect and list the tools within ``timeout`` s; raises with the reason otherwise."""
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            await self.close()
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    async def _hold(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                relayed = await self._relay(stack, read)
                session = await stack.enter_async_context(ClientSession(relayed, write))
                await session.initialize()
                self.tools = await self._list(session)
                self.session = session
                self._ready.set_result(None)
                waits = {asyncio.ensure_future(self._stop.wait()), asyncio.ensure_future(self.gone.wait())}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for waiting in waits:
                    waiting.cancel()
                if self.gone.is_set() and not self._stop.is_set():
                    self.failure = "the server exited" if self.resolved.spec.transport == "stdio" else \
                        "the connection closed"
        except Exception as exc:  # the reason becomes the server's one line
            log.info("MCP server %s failed", self.name, exc_info=True)
            self.failure = first_line(exc)
            if not self._ready.done():
                self._ready.set_exception(RuntimeError(self.failure))
        finally:
            self.session = None
            self.gone.set()
            if not self._ready.done():
                self._ready.set_exception(ServerGone(self.failure or "stopped"))
            self.ended.set()

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        """The (read, write) streams. A stdio server gets the SDK's short list of inherited
        variables (PATH, HOME...) plus its own ``env``: none of Hermes' secrets."""
        r = self.resolved
        if r.spec.transport == "http":
            client = await stack.enter_async_context(httpx.AsyncClient(headers=r.headers, timeout=_HTTP_TIMEOUT))
            read, write, _session_id = await stack.enter_async_context(streamable_http_client(r.url, http_client=client))
            return read, write
        params = StdioServerParameters(command=r.command, args=list(r.args), env=r.env or None,
                                       cwd=str(self.cwd))
        return await stack.enter_async_context(stdio_client(params, errlog=self.errlog))

    async def _relay(self, stack: AsyncExitStack, read: Any) -> Any:
        """A copy of the transport's stream that sets ``gone`` when the transport's ends."""
        sender, receiver = anyio.create_memory_object_stream[Any](0)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # runs first on the way out: stops the relay

        async def pump() -> None:
            async with sender:
                async for message in read:
                    await sender.send(message)
            self.gone.set()

        group.start_soon(pump)
        return receiver

    async def _list(self, session: ClientSession) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += [RemoteTool(self.name, t.name, t.description or "", dict(t.inputSchema or {}),
                                 read_only=bool(t.annotations and t.annotations.readOnlyHint))
                      for t in page.tools]
            cursor = page.nextCursor
            if not cursor:
                break
        return tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> types.CallToolResult:
        """Call a tool; on timeout or cancellation the server is told to stop it (and the error
        propagates)."""
        session = self.session
        if session is None or self.gone.is_set():
            raise ServerGone(self.failure or "not connected")
        sent: list[int] = []

        async def send() -> types.CallToolResult:
            sent.append(session._request_id)  # the id call_tool's request takes (no await before it)
            return await session.call_tool(tool, arguments)

        try:
            return await asyncio.wait_for(send(), timeout)
        except (TimeoutError, asyncio.CancelledError):
            if sent:
                await asyncio.shield(self._cancel_request(session, sent[0]))
            raise

    async def _cancel_request(self, session: ClientSession, request_id: int) -> None:
        notice = types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="cancelled by the user"))
        try:
            await asyncio.wait_for(session.send_notification(types.ClientNotification(notice)), 2.0)
        except Exception:  # a server that cannot hear it is going away anyway
            log.info("could not tell MCP server %s to cancel request %s", self.name, request_id, exc_info=True)

    async def close(self) -> None:
        """Stop the server (a stdio server's process ends with its stdin; the SDK then waits a
        little and terminates it). One still starting is cancelled: it may never answer."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if not self._ready.done():
            task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), 10.0)
        except (TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - stuck in its teardown
            task.cancel()
