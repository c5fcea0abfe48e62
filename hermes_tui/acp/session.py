"""One ACP session: one Hermes session (``AgentLoop``), its turns and its questions to the editor.

A turn runs on the agent runtime's thread (``start_turn``), as in every surface. Its events and
its approval questions reach the event loop through one queue, so they go out in the order they
happened: the ``tool_call`` update is sent before the ``session/request_permission`` about it.
The turn's thread waits for the answer; ``session/cancel`` stops the turn and answers a waiting
question "cancel" (the call never runs). The prompt is answered at ``TurnFinished``; what the
thread does after it (the curator learning a skill) is still forwarded, and the next prompt starts
once that thread is done with the agent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import AllowedOutcome, PromptResponse, StopReason

from hermes_tui.acp import updates
from hermes_tui.agent.approvals import CANCEL, DENY, ApprovalPolicy, PendingCall
from hermes_tui.agent.runtime import RunningTurn, Surface, build_agent, start_turn
from hermes_tui.events import Error, Event, TurnFinished

if TYPE_CHECKING:
    from acp.interfaces import Client

    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.background import Background
    from hermes_tui.config import Config
    from hermes_tui.llm import ModelHost
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

# How a turn's end is told to the editor (``TurnFinished.stopped_reason``); "error" is a protocol error.
STOP_REASONS: dict[str, StopReason] = {"done": "end_turn", "cancelled": "cancelled", "max_steps": "max_turn_requests"}
ASK_POLL = 1.0  # seconds between checks, while a question waits, that its turn is still forwarded
OFFERED = frozenset(option.option_id for option in updates.PERMISSION_OPTIONS)  # an answer not offered denies
PROVIDER_ERROR = -32603  # JSON-RPC's "internal error": the turn failed (the message says why and what to do)


@dataclass(frozen=True)
class _Question:
    """An approval the turn's thread waits for (``answer`` is set on the event loop)."""

    call: PendingCall
    answer: concurrent.futures.Future[str]


_END = object()  # the turn's thread is done with the agent


def open_session(config: Config, memory: MemoryStore, skills: SkillManager, host: ModelHost | None,
                 mcp: McpManager | None, client: Client, runner: Background, session_id: int | None) -> AcpSession:
    """A new Hermes session in ``config.workspace``, or the stored ``session_id`` resumed (ValueError:
    there is none), offering every tool family and ``mcp``'s tools. Its calls are approved by the
    one policy, which asks the editor."""
    session = AcpSession(client, runner)
    policy = ApprovalPolicy.for_workspace(session.ask, config.home, config.workspace, on_warning=log.warning)
    session.agent = build_agent(config, memory, skills, Surface("acp", mcp=mcp), session_id=session_id, host=host,
                                approver=policy)
    return session


class AcpSession:
    """A Hermes session as the editor sees it: its id is the Hermes session's."""

    agent: AgentLoop  # set by ``open_session``, which builds it with this session's ``ask``

    def __init__(self, client: Client, runner: Background) -> None:
        self.client = client
        self.runner = runner
        self.ran = False  # a turn ran here (its summary is left pending when the editor goes away)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[object] | None = None
        self._turn: RunningTurn | None = None
        self._pump: asyncio.Task[None] | None = None
        self._asking: asyncio.Task[Any] | None = None
        self._cancelled = False
        self._prompting = False
        # What to wait for before the first turn (the MCP servers), and the lines it tells the editor.
        self.before_first_turn: Callable[[], list[str]] | None = None

    @property
    def acp_id(self) -> str:
        return str(self.agent.session_id)

    @property
    def busy(self) -> bool:
        """A prompt is being answered (its turn has not finished)."""
        return self._prompting

    async def send(self, update: Any) -> None:
        await self.client.session_update(session_id=self.acp_id, update=update)

    # -- a prompt ---------------------------------------------------------------------------------

    async def prompt(self, text: str) -> PromptResponse:
        self._prompting, self._cancelled = True, False
        try:
            if self._pump is not None:  # the last turn's thread (its curator) lets go of the agent first
                await self._pump
            if not self.ran and self.before_first_turn is not None:
                for line in await asyncio.to_thread(self.before_first_turn):
                    await self.send(updates.thought(line))
            if self._cancelled:  # cancelled while it waited: nothing was sent or stored
                return PromptResponse(stop_reason="cancelled")
            return await self._run(text)
        finally:
            self._prompting = False

    async def _run(self, text: str) -> PromptResponse:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._loop, self._queue, self.ran = loop, queue, True
        finished: asyncio.Future[TurnFinished] = loop.create_future()
        errors: list[str] = []

        def put(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        self._pump = asyncio.create_task(self._forward(queue, finished, errors))
        self._turn = start_turn(self.agent, text, put, self.runner, on_end=lambda: put(_END))
        end = await finished
        if self._cancelled:
            return PromptResponse(stop_reason="cancelled")
        if end.stopped_reason in STOP_REASONS:
            return PromptResponse(stop_reason=STOP_REASONS[end.stopped_reason])
        raise RequestError(PROVIDER_ERROR, " ".join(errors) or "The turn failed (details in the log).")

    async def _forward(self, queue: asyncio.Queue[object], finished: asyncio.Future[TurnFinished],
                       errors: list[str]) -> None:
        """Send the turn's events in order and put its questions to the editor, until its thread ends."""
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, _Question):
                    item.answer.set_result(await self._put_question(item.call))
                    continue
                assert isinstance(item, Event)
                if isinstance(item, Error):
                    errors.append(item.message)
                for update in updates.of(item):
                    await self._send_quietly(update)
                if isinstance(item, TurnFinished) and not finished.done():
                    finished.set_result(item)
        except Exception:  # the turn must still end, and its thread never wait for an answer
            log.exception("forwarding a turn to the editor failed: cancelling the turn")
            self.cancel()
            while (item := await queue.get()) is not _END:
                if isinstance(item, _Question):
                    item.answer.set_result(CANCEL)
        finally:
            if not finished.done():  # the runtime always ends a turn with TurnFinished; this is a guard
                finished.set_result(TurnFinished(stopped_reason="error"))

    async def _send_quietly(self, update: Any) -> None:
        """An editor that went away stops the turn; its thread still runs to its end here."""
        try:
            await self.send(update)
        except (ConnectionError, OSError) as exc:
            log.info("the editor is gone (%s): cancelling the turn", exc)
            self.cancel()

    async def _put_question(self, call: PendingCall) -> str:
        """``session/request_permission``; the option chosen is the policy's answer, a cancel is CANCEL."""
        if self._cancelled:
            return CANCEL
        self._asking = asyncio.ensure_future(self.client.request_permission(
            session_id=self.acp_id, tool_call=updates.permission_call(call.id, call.name, call.arguments),
            options=list(updates.PERMISSION_OPTIONS)))
        try:
            await asyncio.wait({self._asking})
        finally:
            asking, self._asking = self._asking, None
        if asking.cancelled():
            return CANCEL
        if (problem := asking.exception()) is not None:
            log.info("no answer to the approval of %s (%s): denied", call.name, problem)
            return DENY
        outcome = asking.result().outcome
        if isinstance(outcome, AllowedOutcome):
            return outcome.option_id if outcome.option_id in OFFERED else DENY
        return CANCEL  # the editor's own "cancelled" (its prompt was cancelled)

    def ask(self, call: PendingCall) -> str:
        """The policy's ``Ask``, on the turn's thread: wait for the editor's answer."""
        loop, queue = self._loop, self._queue
        if loop is None or queue is None or self._cancelled:
            return CANCEL
        answer: concurrent.futures.Future[str] = concurrent.futures.Future()
        loop.call_soon_threadsafe(queue.put_nowait, _Question(call, answer))
        while True:
            try:
                return answer.result(timeout=ASK_POLL)
            except concurrent.futures.TimeoutError:
                if self._pump is None or self._pump.done():  # nobody will put it to the editor now
                    return CANCEL

    # -- cancel -----------------------------------------------------------------------------------

    def cancel(self) -> None:
        """``session/cancel``: stop the running turn (a waiting question is answered CANCEL)."""
        self._cancelled = True
        if self._turn is not None:
            self._turn.cancel()
        if self._asking is not None:
            self._asking.cancel()
