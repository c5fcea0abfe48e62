"""The one agent runtime every surface uses: build an agent for a surface, drive its turns.

Headless, the TUI and the web differ only in what ``Surface`` declares (where sessions are
recorded as coming from, which tools are on, who approves) and in what they do with the events.
``start_turn`` runs a turn on a thread of the surface's one runner (``background.Background``,
whose ``shutdown(deadline)`` cancels and waits for every agent thread the surface started) and
hands every event, in order, to the surface's ``sink``; ``cancel()`` may be called from any
thread. The sink is called on the turn's thread, so the TUI's sink only posts messages (it never
touches a widget).

Whatever goes wrong inside the agent, the surface gets an ``Error`` and a ``TurnFinished``,
and ``on_end`` is called once the thread is done with the agent (curator included).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hermes_tui.agent.toolkit import FAMILIES
from hermes_tui.background import Background
from hermes_tui.events import Error, Event, TurnFinished

if TYPE_CHECKING:
    from hermes_tui.agent.fixed_prompt import Report
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.agent.tools import Approver
    from hermes_tui.config import Config
    from hermes_tui.llm import ModelHost
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

Sink = Callable[[Event], None]


@dataclass(frozen=True)
class Surface:
    """What differs between the places Hermes runs: declared here, not tested for elsewhere."""

    source: str  # stored with the session ("tui", "web", "headless")
    enabled: frozenset[str] = FAMILIES  # the tool families offered (toolkit.FAMILIES)
    approver: Approver | None = None  # None: no one is asked (see AgentLoop / ToolRegistry)
    host: ModelHost | None = None  # where its model calls run (``warm``); None: litellm in this process
    mcp: McpManager | None = None  # the MCP servers whose tools this surface offers
    mcp_offers: Callable[[str], bool] | None = None  # which of them, by server name (None: all)


def tui_surface(approver: Approver | None, host: ModelHost, mcp: McpManager | None = None) -> Surface:
    """``host``: the app's (``warm.app_host``): never this process, whose thread must stay
    responsive (LiteLLM's parsing would take the GIL from the thread that echoes keys)."""
    return Surface("tui", approver=approver, host=host, mcp=mcp)


def headless_surface(approver: Approver | None, mcp: McpManager | None = None) -> Surface:
    """``approver`` None means ``--yes``: shell commands, writes and MCP tools run without asking."""
    return Surface("headless", approver=approver, mcp=mcp)


def web_surface(config: Config, mcp: McpManager | None = None, host: ModelHost | None = None) -> Surface:
    """Shell and writes only with their environment flags, and then each call is asked about in
    the page (``web/approvals.py``; every loop gets its own policy, so ``approver`` is None here).
    ``host``: the warm helper's (``warm.attach``), None when it is off (litellm in this process).
    The web offers an MCP server's tools when they would not ask (``"trust": true``) or when
    HERMES_WEB_ENABLE_MCP allows every server's (run without asking); workspace servers still
    need their approval."""
    def offers(server: str) -> bool:
        return config.web_enable_mcp or (mcp is not None and mcp.trusted(server))

    enabled = frozenset(family for family, on in (("shell", config.web_enable_shell),
                                                   ("write", config.web_enable_write)) if on)
    return Surface("web", enabled=enabled, host=host, mcp=mcp, mcp_offers=offers)


def build_agent(
    config: Config,
    memory: MemoryStore,
    skills: SkillManager,
    surface: Surface,
    *,
    session_id: int | None = None,
    host: ModelHost | None = None,
    approver: Approver | None = None,
) -> AgentLoop:
    """A new agent (a new session, or ``session_id`` resumed); raises ValueError for an unknown id.
    ``host``: where its model calls run (``warm.WarmHost`` for ``-p``); default: per the surface.
    ``approver``: this agent's own, instead of the surface's (the web: one policy per conversation)."""
    from hermes_tui.agent.loop import AgentLoop  # the agent modules load after a surface has painted
    from hermes_tui.llm import LLMClient

    host = host if host is not None else surface.host
    extra = None
    if surface.mcp is not None:
        from hermes_tui.agent.mcp.bridge import McpTools

        extra = McpTools(surface.mcp, surface.mcp_offers)
    return AgentLoop(config, memory, skills, session_id=session_id, source=surface.source,
                     families=surface.enabled, approver=approver if approver is not None else surface.approver,
                     llm=LLMClient(config, host), extra_tools=extra)


def context_report(config: Config, memory: MemoryStore, skills: SkillManager, surface: Surface,
                   loop: AgentLoop | None = None) -> Report:
    """The fixed prompt of ``loop``'s session, or the one a new session of ``surface`` would send."""
    from hermes_tui.agent import fixed_prompt
    from hermes_tui.agent.context import ContextWindow

    if loop is None:
        from hermes_tui.agent.tools import ToolRegistry
        from hermes_tui.llm import LLMClient
        from hermes_tui.redaction import Secrets

        tools = ToolRegistry(config.workspace, memory, skills, home=config.home,
                             secrets=Secrets.from_config(config), families=surface.enabled)
        prompt = fixed_prompt.build(config.workspace, config.home, tools.names, tools.specs(), skills)
        window = ContextWindow(LLMClient(config, surface.host), config)
    else:
        prompt, window = loop.fixed_prompt, loop.context
    if loop is None or not loop.memory_frozen:  # what the first message will add
        from hermes_tui.memory import facts

        prompt = replace(prompt, memory=facts.for_config(config).prompt_block(""))
    return fixed_prompt.Report(tuple(prompt.parts(window.count)), window.limit(), prompt.instructions)


class RunningTurn:
    """A turn (or any agent event stream, such as ``/learn``) running on a thread of ``runner``.

    A daemon thread, cancelled (and waited for, within its deadline) by ``runner.shutdown``: a
    curator still thinking never holds the process; the messages of the turn are stored as they
    complete, so nothing is lost when the process ends.
    """

    def __init__(self, events: Iterator[Event], sink: Sink, runner: Background, *,
                 cancel: Callable[[], None] | None = None, on_end: Callable[[], None] | None = None,
                 name: str = "hermes-events", is_turn: bool = False) -> None:
        self._events = events
        self._runner = runner
        self._name = name
        self._is_turn = is_turn  # a failed turn still ends with TurnFinished: surfaces wait for it
        self._sink = sink
        self._cancel = cancel
        self._on_end = on_end
        self.finished = threading.Event()  # TurnFinished was delivered (the user may type again)
        self.done = threading.Event()  # the thread is done with the agent (curator included)
        self.stopped_reason: str | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> RunningTurn:
        self._thread = self._runner.start(self._name, self._run, cancel=self.cancel)
        return self

    def cancel(self) -> None:
        if self._cancel is not None and not self.done.is_set():
            self._cancel()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it ended."""
        assert self._thread is not None, "join() before start()"
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _deliver(self, event: Event) -> None:
        if isinstance(event, TurnFinished):
            self.stopped_reason = event.stopped_reason
        self._sink(event)
        if isinstance(event, TurnFinished):
            self.finished.set()

    def _run(self) -> None:
        try:
            for event in self._events:
                self._deliver(event)
        except Exception as exc:  # the surface gets one line; the log the details
            log.exception("%s failed", self._name)
            if not self.finished.is_set():
                detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                self._deliver(Error(f"Unexpected failure: {type(exc).__name__}: {detail} (details in the log)."))
                if self._is_turn:
                    self._deliver(TurnFinished(stopped_reason="error"))
        finally:
            self.done.set()
            if self._on_end is not None:
                self._on_end()


def start_turn(agent: AgentLoop, text: str, sink: Sink, runner: Background, *,
               on_end: Callable[[], None] | None = None) -> RunningTurn:
    """Run one user turn of ``agent`` on ``runner``; ``cancel()`` stops it."""
    return RunningTurn(agent.run_turn(text), sink, runner, cancel=agent.cancel, on_end=on_end,
                       name=f"hermes-turn-{agent.session_id}", is_turn=True).start()


class EventQueue:
    """A sink for surfaces that consume events on another thread (headless main thread, web response).

    ``get`` returns the next event, None once the turn's thread is done, or raises ``queue.Empty``
    after ``timeout`` seconds without one (the web sends a keep-alive then).
    """

    _END = object()

    def __init__(self) -> None:
        self._queue: queue.Queue[object] = queue.Queue()

    def put(self, event: Event) -> None:
        self._queue.put(event)

    def end(self) -> None:
        self._queue.put(self._END)

    def get(self, timeout: float) -> Event | None:
        item = self._queue.get(timeout=timeout)
        return None if item is self._END else item  # type: ignore[return-value]  # the queue holds Events and the _END marker
