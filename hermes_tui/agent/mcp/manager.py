"""The MCP servers of one process: one background thread runs an asyncio loop that owns every
session; the agent's worker threads call in through ``call`` (a sync facade with a timeout and
cancellation that reaches the server).

A server that fails to start or dies is one line (to each ``subscribe``d listener) and a status;
the others keep working, and it is connected again the next time one of its tools is called.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError as FutureCancelled
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from hermes_tui.agent.mcp.code import TooLarge
from hermes_tui.agent.mcp.config import McpState, ResolveError, ServerSpec, declared, lookup, resolve
from hermes_tui.redaction import Secrets

if TYPE_CHECKING:  # the SDK takes seconds to import: only the loop thread imports it (``client``)
    from hermes_tui.agent.mcp.client import Connection, RemoteTool

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0  # seconds a server has to start and list its tools
RUN_FOLDER = "mcp-run"  # under HERMES_HOME: where the user's own stdio servers start
_POLL = 0.05  # seconds between looks at the cancel flag while a call runs

State = Literal["starting", "ready", "failed", "disabled", "unapproved"]


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``/mcp`` and ``hermes-tui mcp list`` show it."""

    spec: ServerSpec
    state: State
    tools: tuple[RemoteTool, ...] = ()
    detail: str = ""  # why it failed, or what to do

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def tokens(self) -> int:
        return sum(tool.tokens for tool in self.tools)


@dataclass(frozen=True)
class Outcome:
    """How a call ended: ``ok`` / ``error`` (the server's own error result) carry ``result``."""

    status: Literal["ok", "error", "timeout", "cancelled", "unavailable", "failed"]
    result: Any = None  # mcp.types.CallToolResult for ok and error
    detail: str = ""


class _Server:
    """The loop thread's mutable record of one server (read by others under the manager's lock)."""

    def __init__(self, spec: ServerSpec, state: State, detail: str = "") -> None:
        self.status = ServerStatus(spec, state, detail=detail)
        self.connection: Connection | None = None
        self.settled = threading.Event()  # no longer "starting"
        self.lock: asyncio.Lock | None = None  # created on the loop
        self.watcher: asyncio.Future[None] | None = None  # held so the loop does not drop the task
        if state != "starting":
            self.settled.set()


class McpManager:
    def __init__(self, home: Path, workspace: Path, *, environ: Mapping[str, str] | None = None,
                 log_dir: Path | None = None) -> None:
        self.home, self.workspace = home, workspace
        self._environ = environ
        self._log_dir = log_dir
        self.state = McpState(home, workspace)
        self.problems: tuple[str, ...] = ()
        self.secrets = Secrets()  # the values its ${NAME} references brought in (scrubbed from results)
        self._servers: dict[str, _Server] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._errlogs: dict[str, TextIO] = {}

    # -- life cycle

    def start(self) -> McpManager:
        """Read the declarations and start every enabled, approved server in the background."""
        if self._thread is not None:
            return self
        found = declared(self.home, self.workspace)
        self.problems = found.problems
        for spec in found.specs:
            if not self.state.enabled(spec):
                self._servers[spec.name] = _Server(spec, "disabled")
            elif not self.state.approved(spec):
                self._servers[spec.name] = _Server(spec, "unapproved", detail=self._why_unapproved(spec))
            else:
                self._servers[spec.name] = _Server(spec, "starting")
        for line in self.problems:
            self._say(line)
        for server in self._servers.values():
            if server.status.state == "unapproved":
                why = "changed since you approved it" if server.status.detail else "is not approved yet"
                self._say(f"MCP server {server.status.name} from the workspace's .mcp.json {why}: "
                          f"/mcp (or `hermes-tui mcp approve {server.status.name}`) shows what it runs and "
                          "approves it.")
        if not self._servers:
            return self
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hermes-mcp", daemon=True)
        self._thread.start()
        for server in self._servers.values():
            if server.status.state == "starting":
                self._submit(self._connect(server))
        return self

    def _why_unapproved(self, spec: ServerSpec) -> str:
        if self.state.changed(spec):
            return "The code it runs from the workspace changed since it was approved: approve it again."
        return ""

    def folder_for(self, spec: ServerSpec) -> Path:
        """Where a stdio server starts. A workspace server (approved with the code it runs) starts
        in the workspace; the user's own start in a folder of their own under HERMES_HOME, so
        ``python -m NAME`` or ``npx NAME`` never finds a module or package the repository ships."""
        if spec.origin == "workspace":
            return self.workspace
        folder = self.home / RUN_FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder

    def close(self, timeout: float = 5.0) -> None:
        """Stop every server (bounded) and the loop."""
        loop = self._loop
        if loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._close_all(), loop)
        try:
            future.result(timeout)
        except Exception:  # quitting goes on whatever a server does
            log.info("MCP servers did not all stop in time", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
            if not self._thread.is_alive():
                loop.close()
        self._loop = None
        for errlog in self._errlogs.values():
            errlog.close()

    def subscribe(self, listener: Callable[[str], None]) -> None:
        """``listener(line)`` hears each failure, on the manager's thread."""
        self._listeners.append(listener)

    # -- what the surfaces read

    def statuses(self) -> list[ServerStatus]:
        with self._lock:
            return [server.status for server in self._servers.values()]

    def wait_ready(self, timeout: float) -> list[str]:
        """Wait (at most ``timeout`` s in all) until no server is starting; the names still starting."""
        deadline = time.monotonic() + timeout
        for server in list(self._servers.values()):
            server.settled.wait(max(0.0, deadline - time.monotonic()))
        return [s.status.name for s in self._servers.values() if s.status.state == "starting"]

    def tools(self) -> list[RemoteTool]:
        """The tools of every enabled server that listed some (a dead one's stay: calling one
        reconnects it)."""
        with self._lock:
            return [tool for server in self._servers.values()
                    if server.status.state in ("ready", "failed") for tool in server.status.tools]

    def trusted(self, server: str) -> bool:
        found = self._servers.get(server)
        return found is not None and found.status.spec.trust

    # -- what the user changes

    def set_enabled(self, name: str, on: bool) -> None:
        server = self._servers[name]
        self.state.set_enabled(server.status.spec, on)
        if not on:
            self._set(server, "disabled")
            self._submit(self._disconnect(server))
        elif self.state.approved(server.status.spec):
            self._start_one(server)
        else:
            self._set(server, "unapproved")

    def approve(self, name: str) -> None:
        """Approve a workspace server's entry and the workspace code it runs as they are now, and
        start it; code too large to bind an approval to stays unapproved, with the reason."""
        server = self._servers[name]
        try:
            self.state.approve(server.status.spec)
        except TooLarge as exc:
            self._set(server, "unapproved", detail=f"Cannot be approved: {exc}.")
            self._say(f"MCP server {name} cannot be approved: {exc}.")
            return
        if self.state.enabled(server.status.spec):
            self._start_one(server)

    def reconnect(self, name: str) -> None:
        server = self._servers[name]
        if server.status.state in ("ready", "failed", "starting"):
            self._start_one(server)

    # -- calls (from any thread)

    def call(self, server: str, tool: str, arguments: dict[str, Any], cancel: threading.Event) -> Outcome:
        """Run one tool call on the loop; returns soon after ``cancel`` is set (the server is told)."""
        loop = self._loop
        found = self._servers.get(server)
        if loop is None or found is None or found.status.state in ("disabled", "unapproved"):
            state = found.status.state if found else "unknown"
            return Outcome("unavailable", detail=f"the MCP server {server!r} is {state}")
        future = asyncio.run_coroutine_threadsafe(self._call(found, tool, arguments), loop)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        while not done.wait(_POLL):
            if cancel.is_set():
                future.cancel()
                return Outcome("cancelled", detail="cancelled by the user; the server was told to stop")
        try:
            return future.result()
        except FutureCancelled:
            return Outcome("cancelled", detail="cancelled")

    # -- on the loop

    def _submit(self, coroutine: Any) -> None:
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _start_one(self, server: _Server) -> None:
        self._set(server, "starting")
        self._submit(self._connect(server, restart=True))

    async def _connect(self, server: _Server, restart: bool = False) -> None:
        from hermes_tui.agent.mcp.client import Connection, first_line

        if server.lock is None:
            server.lock = asyncio.Lock()
        async with server.lock:
            if not restart and server.connection is not None and not server.connection.gone.is_set():
                return
            await self._drop(server)
            self._set(server, "starting")
            spec = server.status.spec
            try:
                resolved = resolve(spec, lookup(self.home, self._environ))
            except ResolveError as exc:
                self._fail(server, str(exc), starting=True)
                return
            self.secrets = Secrets({**self.secrets.values, **resolved.secrets})
            connection = Connection(resolved, self.folder_for(spec), self._errlog(spec.name))
            try:
                await connection.start(CONNECT_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - one line; the log has the rest
                self._fail(server, first_line(exc) if not isinstance(exc, RuntimeError) else str(exc), starting=True)
                return
            if not self.state.enabled(spec):  # disabled while it started
                await connection.close()
                return
            server.connection = connection
            self._set(server, "ready", tools=tuple(connection.tools))
            server.watcher = asyncio.ensure_future(self._watch(server, connection))

    async def _watch(self, server: _Server, connection: Connection) -> None:
        await connection.ended.wait()
        if server.connection is connection and connection.failure:
            self._fail(server, connection.failure, starting=False)

    async def _call(self, server: _Server, tool: str, arguments: dict[str, Any]) -> Outcome:
        from hermes_tui.agent.mcp.client import ServerGone, first_line

        connection = server.connection
        if connection is None or connection.gone.is_set():  # reconnect on its next use
            await self._connect(server)
            connection = server.connection
            if connection is None:
                return Outcome("unavailable", detail=server.status.detail or "it is not connected")
        timeout = server.status.spec.timeout
        try:
            result = await connection.call(tool, arguments, timeout)
        except TimeoutError:
            return Outcome("timeout", detail=f"no result within {timeout:g} s; the server was told to stop")
        except ServerGone as exc:
            return Outcome("unavailable", detail=str(exc))
        except Exception as exc:  # noqa: BLE001 - the model sees a failed result
            if connection.gone.is_set():
                return Outcome("failed", detail=f"the server stopped during the call ({connection.failure or first_line(exc)})")
            return Outcome("failed", detail=first_line(exc))
        return Outcome("error" if result.isError else "ok", result)

    async def _drop(self, server: _Server) -> None:
        connection, server.connection = server.connection, None
        if connection is not None:
            await connection.close()

    async def _disconnect(self, server: _Server) -> None:
        if server.lock is None:
            server.lock = asyncio.Lock()
        async with server.lock:
            await self._drop(server)

    async def _close_all(self) -> None:
        await asyncio.gather(*(self._drop(s) for s in self._servers.values()), return_exceptions=True)

    # -- status

    def _set(self, server: _Server, state: State, *, tools: tuple[RemoteTool, ...] | None = None,
             detail: str = "") -> None:
        with self._lock:
            kept = server.status.tools if tools is None else tools
            server.status = replace(server.status, state=state, tools=kept, detail=detail)
        if state == "starting":
            server.settled.clear()
        else:
            server.settled.set()

    def _fail(self, server: _Server, reason: str, *, starting: bool) -> None:
        if server.status.state == "disabled":
            return
        self._set(server, "failed", detail=reason)
        what = "failed to start" if starting else "stopped"
        self._say(f"MCP server {server.status.name} {what}: {reason.rstrip('.')}. The other servers keep working; "
                  "it is tried again the next time one of its tools is called.")

    def _say(self, line: str) -> None:
        log.warning("%s", line)
        for listener in list(self._listeners):
            try:
                listener(line)
            except Exception:  # a surface that went away
                log.exception("MCP listener failed")

    def _errlog(self, name: str) -> TextIO:
        """The server's stderr goes to its own log file, never to the terminal."""
        if name not in self._errlogs:
            from hermes_tui.logs import log_folder
            from hermes_tui.private import private_file

            folder = self._log_dir or log_folder()
            self._errlogs[name] = open(private_file(folder / f"mcp-{name}.log"), "a", encoding="utf-8")  # noqa: SIM115 - open until close()
        return self._errlogs[name]

