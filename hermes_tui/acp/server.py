"""``hermes-tui acp``: Hermes as an Agent Client Protocol agent, for editors (Zed, Neovim, JetBrains).

The editor starts this process and speaks JSON-RPC on its stdin and stdout (the ``acp`` package,
the protocol's Python SDK). stdout carries the protocol and nothing else: the process's fd 1 is
pointed at stderr before anything runs (``pipes.protocol_streams``), so a stray print, a library's
banner or a child's output cannot corrupt it; logs go to the log file.

Every ACP session is a Hermes session, built by the one runtime (``build_agent``) on the same
stores as the other surfaces: the memory database, the skills, the curated facts, the lasting
permissions, the warm helper (as ``-p`` uses it). The editor's ``cwd`` is the workspace, read as
HERMES_WORKSPACE is, so the tools stay inside it. Bad input (an unknown session, a ``cwd`` that
is no folder, a missing key, a provider's error) is answered with a protocol error whose message
says what to do; nothing raised here ends the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import sqlite3
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from hermes_tui import __version__
from hermes_tui.acp import updates
from hermes_tui.acp.session import AcpSession, open_session
from hermes_tui.agent.attachments import AttachmentError
from hermes_tui.background import Background
from hermes_tui.config import Config, ConfigError
from hermes_tui.memory.errors import StoreError
from hermes_tui.redaction import process_environment

if TYPE_CHECKING:
    from acp.interfaces import Agent, Client

    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.warm import WarmHost

log = logging.getLogger(__name__)

BAD_INPUT = -32602  # JSON-RPC's "invalid params": the message says which and why
QUIT_GRACE = 5.0  # seconds the turns still running get to stop when the editor goes away


def _refused(message: str) -> RequestError:
    return RequestError(BAD_INPUT, message)


class HermesAgent:
    """The ACP ``Agent``: one per connection; its stores are opened at the first session."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.runner = Background()
        self._memory: MemoryStore | None = None
        self._skills: SkillManager | None = None
        self._host: WarmHost | None = None
        self._host_config: Config | None = None
        self._mcp: dict[Path, _Servers] = {}  # a workspace's MCP servers, shared by its sessions
        self._lock = asyncio.Lock()  # sessions open one at a time (the stores are opened by the first)
        self._in_flight = 0  # requests being answered (new, load, prompt)
        self._idle = asyncio.Event()
        self._idle.set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True,
                                                 prompt_capabilities=PromptCapabilities(embedded_context=True, image=True)),
            agent_info=Implementation(name="hermes", title="Hermes", version=__version__))

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        with self._answering():
            session = await self._open(cwd, None)
            return NewSessionResponse(session_id=session.acp_id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        """A stored Hermes session, by its id; its conversation is replayed to the editor first."""
        number = _session_number(session_id)
        running = self.sessions.get(session_id)
        if running is not None and running.busy:
            raise _refused(f"Session {session_id} is running a turn here: cancel it first.")
        with self._answering():
            session = await self._open(cwd, number)
            messages = await asyncio.to_thread(session.agent.memory.get_messages, number)
            for update in updates.replay(messages):
                await session.send(update)
            return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise _refused(f"There is no open session {session_id}: start one (session/new) or load it.")
        if session.busy:
            raise _refused(f"Session {session_id} is running a turn: wait for it or cancel it.")
        text = updates.prompt_text(prompt)
        if not text.strip():
            raise _refused("The prompt has no text.")
        for name, data in updates.prompt_images(prompt):
            try:  # checked before anything is stored or sent, as -p --image does
                session.agent.attach_image(name, data=data)
            except AttachmentError as exc:
                session.agent.attached.clear()
                raise _refused(str(exc)) from None
        with self._answering():
            return await session.prompt(text)

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    async def idle(self) -> None:
        """Until no request is being answered."""
        await self._idle.wait()

    # -- sessions ---------------------------------------------------------------------------------

    async def _open(self, cwd: str, number: int | None) -> AcpSession:
        if self.client is None:
            raise RequestError.internal_error({"details": "not connected"})
        async with self._lock:
            config = await asyncio.to_thread(_config_for, cwd)
            memory, skills = await asyncio.to_thread(self._stores, config)
            if self._host_config is None:
                from hermes_tui import warm

                self._host_config, self._host = config, warm.attach(config)
            servers = self._mcp.get(config.workspace)
            if servers is None:
                servers = self._mcp[config.workspace] = await asyncio.to_thread(_Servers.start, config)
            try:
                session = await asyncio.to_thread(open_session, config, memory, skills, self._host,
                                                  servers.manager if servers.manager.statuses() else None,
                                                  self.client, self.runner, number)
            except ValueError as exc:  # an unknown session id
                raise _refused(str(exc)) from None
            if servers.manager.statuses():  # as -p: the first request waits (bounded) for them
                session.before_first_turn = functools.partial(servers.before_first_turn, config.mcp_wait)
            self.sessions[session.acp_id] = session
            log.info("acp session %s in %s", session.acp_id, config.workspace)
            return session

    def _stores(self, config: Config) -> tuple[MemoryStore, SkillManager]:
        """The memory database and the skill library, opened once (HERMES_HOME is the process's)."""
        if self._memory is None or self._skills is None:
            from hermes_tui.memory.store import MemoryStore
            from hermes_tui.skills.manager import SkillManager

            try:
                memory = MemoryStore(config.db_path, on_upgrade=log.warning)
            except StoreError as exc:
                raise _refused(str(exc)) from None
            if memory.read_only:
                memory.close()
                raise _refused(memory.notice or f"{config.db_path} is read-only: Hermes cannot store the session.")
            self._memory, self._skills = memory, SkillManager.for_config(config)
        return self._memory, self._skills

    def stop_turns(self) -> None:
        """On the event loop: cancel every running turn (and its open question)."""
        for session in self.sessions.values():
            session.cancel()

    def close(self) -> None:
        """Off the event loop, once the turns are cancelled: wait for their threads, stop the MCP
        servers, and leave each session that ran a turn a pending summary (written by the warm
        helper when idle, else by the next TUI, web or ``doctor``)."""
        from hermes_tui.learning import pending

        self.runner.shutdown(time.monotonic() + QUIT_GRACE)
        for servers in self._mcp.values():
            servers.manager.close(timeout=3.0)
        if self._memory is None:
            return
        ran = [session for session in self.sessions.values() if session.ran]
        for session in ran:
            session.agent.end_jobs()
            try:
                pending.mark(self._memory, session.agent.session_id, told=True)
            except (sqlite3.Error, OSError) as exc:  # its summary is then not written; nothing else is lost
                log.warning("session %s not marked for its summary: %s", session.acp_id, exc)
        if ran and self._host is not None and self._host_config is not None and self._host.ensure():
            self._host.hand_over(self._host_config, self._host_config.db_path)
        self._memory.close()


@dataclass
class _Servers:
    """A workspace's MCP servers (``mcp.json``, and its approved ``.mcp.json``) and what they said."""

    manager: McpManager
    said: list[str] = field(default_factory=list)  # the manager's lines (an unapproved server, a failure)

    @classmethod
    def start(cls, config: Config) -> _Servers:
        from hermes_tui.agent.mcp.manager import McpManager

        servers = cls(McpManager(config.home, config.workspace))
        servers.manager.subscribe(servers.heard)
        servers.manager.start()
        return servers

    def heard(self, line: str) -> None:
        log.info("%s", line)
        self.said.append(line)

    def before_first_turn(self, seconds: float) -> list[str]:
        """Wait for the servers still starting; what a session's editor is told before its first turn."""
        late = self.manager.wait_ready(seconds)
        return [*self.said, *(f"MCP server {name} is not ready after {seconds:g} s: this turn runs without "
                              "its tools." for name in late)]


def _session_number(session_id: str) -> int:
    try:
        number = int(session_id)
    except ValueError:
        number = 0
    if number < 1:
        raise _refused(f"{session_id!r} is no Hermes session id (a number: the sessions pane and "
                       "`hermes-tui -c` show them).")
    return number


def _config_for(cwd: str) -> Config:
    """The configuration of a session working in ``cwd``: as if ``hermes-tui`` ran there with
    HERMES_WORKSPACE set to it (its ``.env`` read as there, the privileged settings never)."""
    path = Path(cwd)
    if not path.is_absolute():
        raise _refused(f"The working directory must be an absolute path, not {cwd!r}.")
    if not path.is_dir():
        raise _refused(f"The working directory {cwd!r} does not exist or is not a folder.")
    environ = process_environment()
    environ["HERMES_WORKSPACE"] = str(path)
    try:
        config = Config.load(environ, cwd=path)
        config.require_api_key()
    except ConfigError as exc:
        raise _refused(str(exc)) from None
    for line in config.warnings:
        log.warning("%s", line)
    return config


async def serve() -> None:
    """Answer the editor on stdin/stdout. At the end of stdin the requests already received are
    answered first (a script's last prompt runs); SIGTERM or SIGHUP stop at once (turns cancelled).
    Either way the sessions are closed as ``HermesAgent.close`` says."""
    from hermes_tui.acp.pipes import protocol_streams

    reader, writer = await protocol_streams()
    agent = HermesAgent()
    # The SDK routes the methods an agent defines; the others (modes, forks...) answer "method not found".
    connection = AgentSideConnection(cast("Agent", agent), writer, reader, listening=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    try:
        if await _until(connection.listen(), stop):
            await asyncio.sleep(0)  # the requests read last start (and count as in flight) first
            if await _until(agent.idle(), stop):
                await asyncio.sleep(0)  # their answers are queued before the connection closes
    finally:
        agent.stop_turns()
        await asyncio.to_thread(agent.close)
        await connection.close()


async def _until(work: Coroutine[Any, Any, object], stop: asyncio.Event) -> bool:
    """Run ``work`` until it ends (True) or ``stop`` is set (False: it is cancelled)."""
    task, stopped = asyncio.ensure_future(work), asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    for pending in (task, stopped):
        pending.cancel()
    return not stop.is_set()
