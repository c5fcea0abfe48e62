"""``delegate``: a task handed to a sub-agent, so the parent's context keeps only its answer.

A sub-agent is a fresh ``AgentLoop`` on the parent's model host, with its own session (stored
with the parent's id), its own history (the task is its first user message), the instruction files
and the skills index, and not the parent's conversation. It gets the read-only tools
(``default_names``) and, only when the parent names them in ``tools``, others the parent has now
(in plan mode the parent has read-only ones only). Its calls go through the parent's approval
policy, each question labelled with the sub-agent. It cannot delegate further and learns nothing.

Several ``delegate`` calls of one model step run at once (``Batch``: at most
``Config.delegates``); the parent passes their events on as ``Subagent`` events (an approval
question as a plain ``ApprovalNeeded`` naming the sub-agent, so every surface can answer it) and
each of its model calls' tokens as a ``Usage`` of the parent's turn. Cancelling the parent cancels every sub-agent.
Whatever ends a sub-agent (an answer, an error, its step cap, a cancel) is the tool's result.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hermes_tui.agent.toolkit import CANCELLED, FAMILIES, STR, STR_LIST, Tool, ToolContext, ToolResult, schema
from hermes_tui.conversation import Status, ToolCall
from hermes_tui.events import ApprovalNeeded, Error, Event, Subagent, TextDelta, TurnFinished, Usage

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop

log = logging.getLogger(__name__)

DELEGATE = "delegate"
ANSWER_CAP = 8_000  # characters of a sub-agent's answer returned to the parent
LABEL_CHARS = 60  # of the task, in the label an approval question shows
NAMES_SHOWN = 10  # of the unavailable tools a refusal names (a model may send thousands, or huge ones)
PER_STEP = 10  # sub-agents one model step may start; a hostile model may ask for hundreds (a thread each)

Sink = Callable[[Event], None]


def run_delegate(ctx: ToolContext, task: str, tools: list[str] | None = None) -> ToolResult:
    if not task.strip():
        return ToolResult(False, "delegate: task is empty; say what to do and what to report back")
    if ctx.delegates is None:
        return ToolResult(False, "delegate: a sub-agent cannot delegate further; do the task with your own tools")
    return ctx.delegates.run(task, tools or [], ctx.call_id, ctx.cancel, ctx.events)


DELEGATE_TOOL = Tool(
    DELEGATE,
    "Give a self-contained task to a sub-agent with a fresh context; its final answer is the result. "
    "It sees only `task` (what to do, what to report), not this conversation, and reads only unless "
    "`tools` names more. Calls in one step run in parallel: use it for wide reading you need summarised.",
    schema({"task": STR, "tools": STR_LIST}, ["task"]),
    run_delegate, cancellable=True, summary_arg="task",
)


def default_names() -> frozenset[str]:
    """What every sub-agent gets: the declared read-only tools, except ``delegate`` itself."""
    from hermes_tui.agent.tools import TOOLS  # tools.py gathers this module's record

    return frozenset(t.name for t in TOOLS if t.read_only and t.name != DELEGATE)


def label(number: int, task: str) -> str:
    """How a sub-agent is named to the user ("sub-agent 2: <its task's start>")."""
    line = " ".join(task.split())
    return f"sub-agent {number}: {line[:LABEL_CHARS]}{'…' if len(line) > LABEL_CHARS else ''}"


def _some(names: list[str]) -> str:
    """At most ``NAMES_SHOWN`` of ``names``, each cut to ``LABEL_CHARS``, and how many more."""
    shown = ", ".join(n if len(n) <= LABEL_CHARS else f"{n[:LABEL_CHARS]}…" for n in names[:NAMES_SHOWN])
    return shown + (f" (and {len(names) - NAMES_SHOWN:,} more)" if len(names) > NAMES_SHOWN else "")


def capped(text: str, cap: int = ANSWER_CAP) -> str:
    """``text`` as returned to the parent: cut at ``cap`` characters, saying so."""
    if len(text) <= cap:
        return text
    return f"{text[:cap]}\n[... the sub-agent's answer was cut here: {cap:,} of {len(text):,} characters shown ...]"


@dataclass
class Outcome:
    """What a sub-agent's turn came to, gathered from its events."""

    answer: str = ""  # the text of its last model call: its answer when it ended "done"
    said: str = ""  # the text of its last model call that wrote any (narration on the way, maybe)
    reason: str = "error"
    error: str = ""

    def result(self, session_id: int) -> ToolResult:
        where = f"(sub-agent session {session_id})"
        said = f" What it said last:\n{capped(self.said)}" if self.said.strip() else ""
        if self.reason == "done":  # an empty answer is no cue to pass its narration off as one
            return ToolResult(True, capped(self.answer) if self.answer.strip()
                              else f"The sub-agent finished without an answer {where}.{said}")
        if self.reason == "cancelled":
            return ToolResult(False, f"Cancelled by the user; the sub-agent stopped {where}.",
                              refusal=Status.CANCELLED)
        if self.reason == "max_steps":
            from hermes_tui.agent.loop import MAX_STEPS

            return ToolResult(False, f"The sub-agent stopped after {MAX_STEPS} steps without a final answer "
                                     f"{where}.{said}")
        return ToolResult(False, f"The sub-agent failed: {self.error or 'no answer'} {where}.{said}")


class Delegates:
    """The sub-agents of one parent ``AgentLoop``: built, run (``slots`` at once), cancelled together."""

    def __init__(self, parent: AgentLoop) -> None:
        self.parent = parent
        self._slots = threading.BoundedSemaphore(parent.config.delegates)
        self._running: set[AgentLoop] = set()
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def cancel(self) -> None:
        """Cancel every running sub-agent (the parent's turn is being stopped)."""
        with self._lock:
            running = list(self._running)
        for sub in running:
            sub.cancel()

    def tools_for(self, named: Sequence[str]) -> list[Tool] | str:
        """The records a sub-agent gets: the read-only ones and ``named``, all among what the parent
        is offered now; or why ``named`` cannot be had."""
        offered = self.parent.tools.offered()
        missing = list(dict.fromkeys(n for n in named if n not in offered or n == DELEGATE))
        if missing:
            why = " (plan mode: read-only tools only)" if self.parent.plan else ""
            choices = ", ".join(n for n in offered if n != DELEGATE)
            return f"delegate: not available to a sub-agent{why}: {_some(missing)}. Choose among: {choices}."
        chosen = default_names() | set(named)
        return [tool for name, tool in offered.items() if name in chosen]

    def run(self, task: str, named: Sequence[str], call_id: str, cancel: threading.Event,
            events: Sink | None) -> ToolResult:
        """Run one sub-agent's turn on this thread (``Batch`` runs several); its result."""
        tools = self.tools_for(named)
        if isinstance(tools, str):
            return ToolResult(False, tools)
        sink = events or (lambda _event: None)
        with self._slots:
            if cancel.is_set():
                return ToolResult(False, CANCELLED, refusal=Status.CANCELLED)
            sub = self._build(tools, label(next(self._numbers), task), cancel)
            turn = sub.run_turn(task)  # clears the sub-agent's own cancel flag: registered after
            with self._lock:
                self._running.add(sub)
            if cancel.is_set():
                sub.cancel()
            try:
                outcome = _follow(turn, sub, call_id, sink)
            finally:
                with self._lock:
                    self._running.discard(sub)
                sub.end_jobs()
        return outcome.result(sub.session_id)

    def _build(self, tools: list[Tool], name: str, cancel: threading.Event) -> AgentLoop:
        from hermes_tui.agent.approvals import ApprovalPolicy
        from hermes_tui.agent.loop import AgentLoop
        from hermes_tui.agent.prompts import SUBAGENT_NOTE

        parent = self.parent
        approver = parent.tools.approver
        if isinstance(approver, ApprovalPolicy):
            approver = approver.for_agent(name, cancel)
        families = FAMILIES | {t.family for t in tools if t.family}
        return AgentLoop(replace(parent.config, learn="off"), parent.memory, parent.skills, source="subagent",
                         families=frozenset(families), approver=approver, llm=parent.llm, tools=tools,
                         parent_id=parent.session_id, brief=SUBAGENT_NOTE, checkpoints=False, name=name)


def _follow(turn: Iterator[Event], sub: AgentLoop, call_id: str, sink: Sink) -> Outcome:
    """Pass the sub-agent's events on and gather its outcome; a failure of its own is its outcome."""
    outcome = Outcome()
    words: list[str] = []  # the text of the model call streaming now
    final = last = ""  # the text of the last model call; of the last one that wrote any
    try:
        for event in turn:
            if isinstance(event, ApprovalNeeded):
                sink(replace(event, agent=sub.name))  # plain: each surface answers it as the parent's
                continue
            if isinstance(event, TextDelta):
                words.append(event.text)
            elif isinstance(event, Usage):  # a model call ended
                final, words = "".join(words), []
                last = final if final.strip() else last
                if event.prompt_tokens or event.completion_tokens:  # a call of the parent's turn, as its own
                    sink(replace(event, context_tokens=None, context_limit=None, context_assumed=False))
            elif isinstance(event, Error):
                outcome.error = event.message
            elif isinstance(event, TurnFinished):
                outcome.answer, outcome.said, outcome.reason = final, last or event.text, event.stopped_reason
            sink(Subagent(call_id, sub.session_id, event))
    except Exception as exc:  # a sub-agent's bug is the call's failure, never the parent's crash
        log.exception("sub-agent %s failed", sub.session_id)
        outcome.reason, outcome.error = "error", f"{type(exc).__name__}: {exc}"
    return outcome


class Batch:
    """The ``delegate`` calls of one model step, each on a thread of its own; ``wait`` passes their
    events on, in the order they come, until the call asked for is done."""

    def __init__(self, parent: AgentLoop, calls: Sequence[ToolCall], cancel: threading.Event) -> None:
        self._queue: queue.Queue[Event | tuple[int, ToolResult]] = queue.Queue()
        self._results: dict[int, ToolResult] = {}
        for index, call in enumerate(calls):
            threading.Thread(target=self._run, args=(parent, index, call, cancel),
                             name=f"hermes-delegate-{parent.session_id}-{index}", daemon=True).start()

    def _run(self, parent: AgentLoop, index: int, call: ToolCall, cancel: threading.Event) -> None:
        result = ToolResult(False, "delegate: the sub-agent's thread ended unexpectedly")
        try:
            result = parent.tools.execute(DELEGATE, dict(call.arguments), cancel=cancel, call_id=call.id,
                                          events=self._queue.put)
        finally:  # always reported: ``wait`` blocks until it is
            self._queue.put((index, result))

    def wait(self, index: int) -> Generator[Event, None, ToolResult]:
        """Yield the sub-agents' events until call ``index`` of the batch is done; its result."""
        while index not in self._results:
            item = self._queue.get()
            if isinstance(item, tuple):
                self._results[item[0]] = item[1]
            else:
                yield item
        return self._results[index]
