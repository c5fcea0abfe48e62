"""AgentLoop: one conversation (session) with the model, its tools, its memory and its skills.

``run_turn`` is a generator of events (``hermes_tui.events``) meant to be consumed on a worker
thread; ``cancel`` may be called from any other thread. Every message is written to the memory
store as soon as it is complete, the user's first, so nothing typed is ever lost.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hermes_tui.agent import attachments, fixed_prompt
from hermes_tui.agent.checkpoints import NoCheckpoints, TurnCheckpoints
from hermes_tui.agent.context import ContextWindow
from hermes_tui.agent.delegate import DELEGATE, PER_STEP, Batch, Delegates
from hermes_tui.agent.hooks import Hooks, Verdict, framed
from hermes_tui.agent.hooks.events import (
    BY_NAME,
    POST_TOOL_USE,
    PRE_COMPACT,
    PRE_TOOL_USE,
    SESSION_END,
    SESSION_START,
    STOP,
    STOP_LIMIT,
    SUBAGENT_EVENTS,
    USER_PROMPT_SUBMIT,
)
from hermes_tui.agent.hooks.inputs import tool_fields, tool_response, write_transcript
from hermes_tui.agent.prompts import PLAN_NOTE, relevant_skills_note
from hermes_tui.agent.sandbox import Sandbox
from hermes_tui.agent.toolkit import CANCELLED, FAMILIES, Tool, ToolResult
from hermes_tui.agent.tools import TOOLS, Approver, ToolRegistry
from hermes_tui.config import Config
from hermes_tui.conversation import ChatMessage, ImageRef, Status, ToolCall
from hermes_tui.events import (
    ApprovalNeeded,
    Error,
    Event,
    Notice,
    Receipt,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Unsent,
    Usage,
)
from hermes_tui.learning.outcome import call_outcomes, failures_note, is_correction, worked
from hermes_tui.llm import LLMClient, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.memory import facts, resume
from hermes_tui.memory.facts import claims_to_remember
from hermes_tui.memory.store import MemoryStore
from hermes_tui.redaction import Secrets
from hermes_tui.skills.lifecycle import Provenance, TurnCost
from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

MAX_STEPS = 25
LEARN_THRESHOLD = 3  # tool calls in one turn that make it worth distilling a skill
RELEVANT_SKILLS = 3
PERSIST_EVERY = 1.0  # seconds between saves of a streaming answer (kill -9 loses at most this much)


class AgentLoop:
    def __init__(
        self,
        config: Config,
        memory: MemoryStore,
        skills: SkillManager,
        *,
        session_id: int | None = None,
        source: str = "tui",
        families: frozenset[str] = FAMILIES,
        approver: Approver | None = None,
        llm: LLMClient | None = None,
        extra_tools: Callable[[int], Sequence[Tool]] | None = None,
        tools: Sequence[Tool] = TOOLS,
        parent_id: int | None = None,
        brief: str = "",
        checkpoints: bool = True,
        name: str = "",
    ) -> None:
        """``extra_tools(window)``: more tools, asked before each model call with the context
        window in tokens (the MCP servers' tools, which may come and go). A sub-agent
        (``delegate.py``) gets its ``tools``, its ``parent_id`` (its session's parent), a ``brief``
        sent with each user message (never stored), no ``checkpoints`` of its own (its parent's
        turn takes them) and a ``name`` for the user."""
        self.config = config
        self.memory = memory
        self.skills = skills
        self.llm = llm or LLMClient(config)
        self.name = name
        self.brief = brief
        self.tools = ToolRegistry(
            config.workspace, memory, skills, families=families,
            approver=None if config.approval == "always" else approver,
            home=config.home, secrets=Secrets.from_config(config), sandbox=Sandbox.from_config(config),
            fetch_private=config.fetch_allow_private, tools=tools,
            extra_tools=(lambda: extra_tools(self.context.limit())) if extra_tools is not None else None,
        )
        self.delegates = Delegates(self) if DELEGATE in self.tools.names else None
        self.tools.delegates = self.delegates
        self.checkpoints: TurnCheckpoints | NoCheckpoints = (
            TurnCheckpoints(config.home, config.workspace) if checkpoints else NoCheckpoints())
        # The user's hooks and the project's approved ones, as they are when the session starts.
        self.hooks = Hooks.load(config.home, self.tools.workspace, self.tools.secrets,
                                SUBAGENT_EVENTS if parent_id is not None else frozenset(BY_NAME))
        self._hooks_started = False  # SessionStart ran (at the first turn); SessionEnd then runs at the end
        self._hook_stopped = False  # a tool hook answered "continue": false: the turn ends after its call
        self._cancel = threading.Event()
        self._last_turn: list[ChatMessage] = []
        self._last_provenance: Provenance | None = None
        self.context = ContextWindow(self.llm, config)
        self._fixed: tuple[str, int] | None = None  # (tool names, tokens of system prompt + tools)
        self._sent_tokens = 0
        self._context_lock = threading.Lock()  # the compaction state changes under it
        self.context_fill: tuple[int, int] | None = None  # (tokens, window) of the last request, for status bars
        if session_id is None:
            self.session_id = memory.new_session(source=source, workspace=str(config.workspace),
                                                 parent_id=parent_id)
            # The conversation as stored, typed; what is sent of it is ``context.view`` (repaired there).
            self.history: list[ChatMessage] = []
        else:
            if memory.get_session(session_id) is None:
                raise ValueError(f"There is no session {session_id}; /sessions lists them.")
            self.session_id = session_id
            # Whatever a crash or a full disk left behind: ``context.view`` repairs what is sent.
            self.history = resume.sendable(memory, session_id)
            compaction = memory.latest_compaction(session_id)
            if compaction is not None:
                self.context.restore(self.history, compaction.summary, compaction.through_id,
                                     compaction.trim_through_id)
        # Built once: byte-identical for the whole session so providers can cache it.
        self.facts = facts.for_config(config)
        self.tools.facts, self.tools.session_id = self.facts, self.session_id
        self.fixed_prompt = fixed_prompt.build(config.workspace, config.home, self.tools.names,
                                               self.tools.specs(), skills)
        self.system_prompt = self.fixed_prompt.system
        self._memory_frozen = False  # the facts join the prompt at the first turn, then stay as they are
        self.attached: list[ImageRef] = []  # images that go with the next message (``attach_image``)

    # -- control ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the running turn: closes the stream, kills a running run_bash group, and cancels
        every running sub-agent."""
        self._cancel.set()
        if self.delegates is not None:
            self.delegates.cancel()

    @property
    def plan(self) -> bool:
        """Plan mode: the model gets read-only tools only (``ToolRegistry.plan``) and answers with a
        plan. The session's own state; surfaces only toggle it, between turns."""
        return self.tools.plan

    @plan.setter
    def plan(self, on: bool) -> None:
        self.tools.plan = on

    def set_model(self, provider: str | None = None, model: str | None = None) -> Config:
        """Switch provider/model for the next call (``/model``); raises ``ConfigError``."""
        self.config = self.config.switched_to(provider=provider, model=model)
        self.llm = self.llm.with_config(self.config)
        self.context.reset_model(self.llm, self.config)
        return self.config

    def attach_image(self, given: str, data: bytes | None = None, base: Path | None = None) -> ImageRef:
        """Attach an image to the next message (``/image``, a pasted path, the web's upload): checked,
        fitted and kept by ``agent.attachments``; raises ``AttachmentError`` (one line) for a file
        that is no image Hermes can send. ``attached`` is what waits for the next message."""
        ref = attachments.attach(self.config.home, given, self.config.provider_info, data=data, base=base)
        self.attached.append(ref)
        return ref

    def compact(self, focus: str | None = None) -> Iterator[Event]:
        """Compact what is sent now (``/compact [focus]``), between turns."""
        with self._context_lock:  # /compact runs on its own thread; a turn may start meanwhile
            done = yield from self._compact(focus=focus, manual=True)
        if not done:
            yield Notice("Nothing to compact yet: the conversation is short.")
        yield self.context_usage()

    # -- one turn -----------------------------------------------------------------------------

    def run_turn(self, text: str) -> Iterator[Event]:
        """The events of one user turn; after ``TurnFinished`` maybe a ``SkillLearned``.

        The cancel flag is reset here, when the turn is asked for, not when its thread first runs
        it: a ``cancel()`` in between (a browser that left at once) then still stops it."""
        self._cancel.clear()
        return self._turn(text)

    def _turn(self, text: str) -> Iterator[Event]:
        start = len(self.history)
        yield TurnStarted(self.session_id)
        hook_context = yield from self._start_hooks(text)
        if hook_context is None:  # a UserPromptSubmit hook blocked it: never stored, never sent
            yield Unsent(text)
            yield TurnFinished("", 0, "blocked")
            return
        self._freeze_memory(text)
        if is_correction(text) and (previous := self._last_user_id()) is not None:
            self.skills.correct_turn(previous)  # "no, that's wrong": the turn before did not work
        images, self.attached = tuple(self.attached), []
        message_id = self.memory.add_message(self.session_id, "user", text, images=images)
        self.tools.message_id = message_id
        note = (relevant_skills_note(self.skills.hint(text, limit=RELEVANT_SKILLS)) + (PLAN_NOTE if self.plan else "")
                + self.brief)
        self.history.append(ChatMessage(message_id, self.session_id, "user", text + note + hook_context,
                                        images=images))
        self.checkpoints.start_turn(self.session_id, message_id, text)

        texts: list[str] = []
        tool_count = receipts = model_calls = tokens = 0
        reason = "max_steps"
        retried_too_long = False
        stops = 0  # times a Stop hook sent the model back this turn
        self._hook_stopped = False
        for _step in range(MAX_STEPS):
            try:
                result = yield from self._call_model(texts)
            except LLMError as exc:
                if self.context.overflowed(exc, self._sent_tokens) and not retried_too_long:
                    retried_too_long = True  # compact, then retry once
                    with self._context_lock:
                        self.context.learn(exc, self._sent_tokens)
                        yield from self._compact()
                    continue
                yield Error(self._explain(exc), exc.retryable)
                reason = "error"
                break
            retried_too_long = False
            model_calls += 1
            if result.usage is not None:
                tokens += result.usage.prompt_tokens + result.usage.completion_tokens
            if result.cancelled:
                reason = "cancelled"
                break
            if not result.tool_calls:
                if (yield from self._stop_hooks(stops, texts)):
                    stops += 1
                    continue
                reason = "done"
                break
            tool_count += len(result.tool_calls)
            receipts += yield from self._run_calls(result.tool_calls)
            if self._cancel.is_set():
                reason = "cancelled"
                break
            if self._hook_stopped:
                reason = "blocked"
                break
        else:
            yield Notice(f"Stopped after {MAX_STEPS} steps without a final answer. Ask me to continue if needed.")
        if (changed := self.checkpoints.end_turn()) is not None:
            yield changed
        if reason in TURN_STATUS:
            self._record_status(message_id, TURN_STATUS[reason])
        if reason == "error" and self.history[-1].id == message_id:  # nothing answered
            self.history.pop()  # never sent again, nor folded into a compaction summary
            yield Unsent(text)
            if images:  # they go with the message when it is sent again
                self.attached = [*images, *self.attached]
                yield Notice(f"{_images_line(images)} still attached to your next message.")
        if not receipts and claims_to_remember("".join(texts)):
            yield Notice("The answer says it will remember something, but nothing was saved (no memory call "
                         "succeeded). /remember TEXT saves a fact yourself.")
        cost = TurnCost(model_calls, tool_count, tokens)
        self.skills.finish_turn(message_id, reason, cost)  # the outcome and cost of the skills this turn used
        yield TurnFinished("\n\n".join(t for t in texts if t), tool_count, reason)  # calls apart, as printed
        self._last_turn = self.history[start:]
        self._last_provenance = Provenance(f"{self.config.provider}:{self.config.model}", self.session_id,
                                           message_id, cost)
        calls = call_outcomes(self._last_turn)
        # Only a turn whose work ended well teaches (learning/outcome.py); failures on the way are pitfalls.
        if self.config.learn != "off" and tool_count >= LEARN_THRESHOLD and worked(reason, calls):
            learned = self._propose(failures_note(calls))  # cancel() abandons it
            if learned is not None:
                yield learned

    def _explain(self, exc: LLMError) -> str:
        """The error's line; a refusal of a request that carried images says so (a text-only model
        refuses any image, and the provider's words do not always name the cause)."""
        message = self.context.explain(exc, self._sent_tokens)
        if exc.status == 400 and any(m.images for m in self.history[self.context.start:]):
            message = (f"{message.rstrip('.')}. This conversation sends images: if this model cannot read "
                       "them, switch with /model (or start a new session without them).")
        return message

    def learn_now(self) -> Iterator[Event]:
        """Force the curator on the last turn (``/learn``), whatever its tool count."""
        self._cancel.clear()  # a cancel of the turn before does not abandon this request (see run_turn)
        return self._learn()

    def _learn(self) -> Iterator[Event]:
        if not self._last_turn:
            yield Notice("Nothing to learn from yet: run a task first.")
            return
        learned = self._propose(failures_note(call_outcomes(self._last_turn)))
        yield learned or Notice("Nothing worth saving as a skill in the last turn.")

    def _propose(self, failures: str) -> Event | None:
        from hermes_tui.learning.curator import propose_skill  # after a turn: not on the way to the answer

        return propose_skill(self.llm, self.skills, self._last_turn, self._cancel, failures=failures,
                             provenance=self._last_provenance, review=self.config.learn == "review")

    def _last_user_id(self) -> int | None:
        """The store id of the last user message still in the conversation (the turn a correction names)."""
        return next((m.id for m in reversed(self.history) if m.role == "user"), None)

    def end_jobs(self) -> None:
        """The session ends: its background jobs are stopped (SIGTERM, SIGKILL after a grace), and
        the SessionEnd hooks run once (when SessionStart ran: the session had a turn)."""
        self.tools.jobs.stop_all()
        if self._hooks_started and self.hooks.has(SESSION_END):
            self._hooks_started = False
            for line in self.hooks.fire(SESSION_END, self._hook_base(), {"reason": "other"}).notices:
                log.warning("%s", line)

    def close(self, timeout: float = 15.0, cancel: threading.Event | None = None) -> str | None:
        """End the session: stop its jobs, store and return its summary (None when empty, unreachable
        or abandoned: at ``timeout`` or ``cancel`` the request's connection is closed). One that does
        not finish stays pending and is written later (pending.py)."""
        from hermes_tui.learning import pending
        from hermes_tui.learning.curator import propose_memories

        self.end_jobs()

        deadline = time.monotonic() + timeout
        summary = pending.close_session(self.memory, self.llm, self.session_id, timeout, cancel=cancel)
        left = deadline - time.monotonic()
        if left > 1 and not (cancel is not None and cancel.is_set()):  # alongside, within the same budget
            messages = self.memory.get_messages(self.session_id)
            if messages and self.config.learn != "off":
                propose_memories(self.llm, messages, self.facts, session_id=self.session_id, timeout=left,
                                 cancel=cancel, review=self.config.learn == "review")
        return summary

    # -- internals ----------------------------------------------------------------------------

    def _call_model(self, texts: list[str]) -> Generator[Event, None, StreamResult]:
        """Stream one model call; store the assistant message; return the ``StreamResult``.

        The request is counted first and compacted when it reaches the threshold. The answer is
        saved while it streams (every ``PERSIST_EVERY`` s), so a killed process keeps its text.
        """
        specs = self.tools.specs()
        with self._context_lock:
            tokens = self.context.tokens(self.history, self._fixed_tokens(specs))
            if tokens >= self.context.threshold():
                yield from self._compact()
                tokens = self.context.tokens(self.history, self._fixed_tokens(specs))
            self._sent_tokens = tokens
            view = self.context.view(self.history)
        messages = [{"role": "system", "content": self.system_prompt},
                    *attachments.inline(view, self.config.home, self.config.provider_info)]
        partial: list[str] = []
        result: StreamResult | None = None
        saved = _PartialAnswer(self.memory, self.session_id)
        try:
            for item in self.llm.stream(messages, specs, self._cancel):
                if isinstance(item, StreamResult):
                    result = item
                elif isinstance(item, TextDelta):
                    partial.append(item.text)
                    saved.update(partial)
                    yield item
                else:
                    yield item
        finally:
            text = "".join(partial)
            texts.append(text)
            # As stored and sent: arguments that are not a JSON object become {} (``ToolCall.json``).
            calls = tuple(ToolCall.parse(c.id, c.name, c.json) for c in (result.tool_calls if result else []))
            if text or calls:  # a cut or cancelled stream keeps the text it had; no half tool calls
                stored = saved.finish(text, [c.to_llm() for c in calls] or None)
                self._store("assistant", text or None, calls=calls, stored_as=stored)
        assert result is not None
        self.context_fill = (tokens, self.context.limit())
        yield replace(result.usage or Usage(), context_tokens=tokens, context_limit=self.context_fill[1],
                      context_assumed=self.context.assumed)
        return result

    def _compact(self, focus: str | None = None, manual: bool = False) -> Generator[Event, None, bool]:
        """Compact what is sent; store the state so a resumed session sends the same; True if done."""
        verdict = yield from self._fire(PRE_COMPACT, trigger="manual" if manual else "auto",
                                        custom_instructions=focus or "")
        if verdict.blocked and verdict.reason:
            yield Notice(f"PreCompact hook: {verdict.reason.splitlines()[0][:200]}")
        fixed = self._fixed_tokens(self.tools.specs())
        done = self.context.compact(self.history, fixed, focus=focus, manual=manual)
        if done is None:
            return False
        checkpoint = self.context.checkpoint(self.history)
        if checkpoint is not None and self.context.summary:
            self.memory.add_compaction(self.session_id, checkpoint[0], self.context.summary, checkpoint[1])
        how = f" ({done.note})" if done.note else ""
        yield Notice(f"Compacted the conversation: {done.before:,} → {done.after:,} tokens of "
                     f"{self.context.limit():,}{how}.")
        return True

    def context_usage(self) -> Usage:
        """A zero-token usage event that tells surfaces how full the window is now (after a
        compaction, or a resume: the status line shows it before the next call)."""
        specs = self.tools.specs()
        self.context_fill = (self.context.tokens(self.history, self._fixed_tokens(specs)), self.context.limit())
        return Usage(context_tokens=self.context_fill[0], context_limit=self.context_fill[1],
                     context_assumed=self.context.assumed)

    def _freeze_memory(self, first_message: str) -> None:
        """Put the curated facts in the system prompt once, ranked against the session's first message
        (a resumed session's as its first turn sent them: ``fixed_prompt.for_session``)."""
        if self._memory_frozen:
            return
        self._memory_frozen = True
        try:
            self.fixed_prompt = fixed_prompt.for_session(self.fixed_prompt, self.memory, self.session_id,
                                                         lambda: self.facts.prompt_block(first_message))
        except OSError as exc:
            log.warning("memory facts unreadable: %s", exc)
            return
        self.system_prompt = self.fixed_prompt.system
        self._fixed = None

    @property
    def memory_frozen(self) -> bool:
        return self._memory_frozen

    def prompt_parts(self) -> list[fixed_prompt.Part]:
        """Each part of the fixed prompt with its tokens, for ``/context``."""
        return self.fixed_prompt.parts(self.context.count)

    def _fixed_tokens(self, specs: list[dict[str, Any]]) -> int:
        """Tokens of the system prompt and the tool schemas (counted once per tool set)."""
        key = ",".join(str(spec.get("function", {}).get("name")) for spec in specs)
        if self._fixed is None or self._fixed[0] != key:
            system = [{"role": "system", "content": self.system_prompt}]
            self._fixed = (key, self.context.count(system, specs))
        return self._fixed[1]

    def _run_calls(self, calls: Sequence[ToolCall]) -> Generator[Event, None, int]:
        """Run one step's calls; the number of receipts. The ``delegate`` calls run last and
        together (``delegate.Batch``), the others one by one in their order before them."""
        together = self.delegates is not None
        alongside = [c for c in calls if together and c.name == DELEGATE and c.valid]
        receipts = 0
        for call in calls:
            if not (together and call.name == DELEGATE and call.valid):
                receipts += yield from self._run_tool(call)
        if not alongside:
            return receipts
        started = time.monotonic()
        fields: dict[str, dict[str, Any]] = {}
        for call in alongside[PER_STEP:]:
            yield ToolCallStarted(call.id, call.name, dict(call.arguments))
            too_many = ToolResult(False, f"Not run: one step may start at most {PER_STEP} sub-agents; "
                                  "ask for the rest in the next step.", refusal=Status.DENIED)
            receipts += yield from self._finish_call(call, too_many, started)
        del alongside[PER_STEP:]
        for call in list(alongside):
            yield ToolCallStarted(call.id, call.name, dict(call.arguments))
            fields[call.id] = self._hook_fields(call)
            _hook, refused = yield from self._before_call(fields[call.id])
            if refused is not None:  # as for any call: it never starts
                alongside.remove(call)
                receipts += yield from self._finish_call(call, refused, started)
        if not alongside:
            return receipts
        offered = self.tools.offered()
        writes = any(offered[n].changes_files for c in alongside for n in _named_tools(c) if n in offered)
        if writes and (notice := self.checkpoints.before_change()):
            yield Notice(notice)
        batch = Batch(self, alongside, self._cancel)
        for index, call in enumerate(alongside):
            result = yield from batch.wait(index)
            if result.refusal is None:
                result = yield from self._post_tool_hooks(fields[call.id], result)
            receipts += yield from self._finish_call(call, result, started)
        if writes:
            self.checkpoints.after_change()  # what the sub-agents changed is this turn's
        return receipts

    def _run_tool(self, call: ToolCall) -> Generator[Event, None, int]:
        """Run one call; returns 1 when it produced a receipt."""
        shown = dict(call.arguments) if call.valid else {"raw": call.raw}
        yield ToolCallStarted(call.id, call.name, shown)
        started = time.monotonic()
        fields = self._hook_fields(call)
        hook, refused = yield from self._before_call(fields)
        if refused is not None:
            result = refused
        else:
            if self.tools.changes_files(call.name) and (notice := self.checkpoints.before_change()):
                yield Notice(notice)
            if call.valid and self.tools.asks(call.name, dict(call.arguments), hook=hook.decision):
                yield ApprovalNeeded(call.id, call.name, shown, self.tools.target(call.name, dict(call.arguments)))
            # Arguments that are no JSON object go as they came: the tool's error names the fault.
            result = self.tools.execute(call.name, dict(call.arguments) if call.valid else call.raw,
                                        cancel=self._cancel, call_id=call.id, hook=hook.decision)
            if self.tools.changes_files(call.name):
                self.checkpoints.after_change()  # only what changed during the call is the turn's
            if result.refusal is None:  # it ran (denied or cancelled calls never did)
                result = yield from self._post_tool_hooks(fields, result)
        return (yield from self._finish_call(call, result, started))

    def _hook_fields(self, call: ToolCall) -> dict[str, Any]:
        """A call as its hooks read it (``hooks.inputs.tool_fields``)."""
        arguments = dict(call.arguments) if call.valid else {}
        return {**tool_fields(call.name, arguments, self.tools.workspace), "tool_use_id": call.id}

    def _before_call(self, fields: dict[str, Any]) -> Generator[Event, None, tuple[Verdict, ToolResult | None]]:
        """PreToolUse for one call: its verdict, and the call's result when it must not run
        (the turn is cancelled, a hook blocked it, or a hook of a call before it ended the turn)."""
        hook = Verdict()
        if not self._cancel.is_set() and not self._hook_stopped:
            hook = yield from self._fire(PRE_TOOL_USE, **fields)
        if self._cancel.is_set():
            return hook, ToolResult(False, CANCELLED, refusal=Status.CANCELLED)
        if hook.blocked:
            why = framed(PRE_TOOL_USE, [("", hook.reason)])  # hook output: framed and guarded as any
            return hook, ToolResult(False, f"Blocked by the user's PreToolUse hook.\n{why}", refusal=Status.DENIED)
        if self._hook_stopped:
            return hook, ToolResult(False, "Not run: a hook of the user ended the turn.", refusal=Status.DENIED)
        return hook, None

    def _finish_call(self, call: ToolCall, result: ToolResult, started: float) -> Generator[Event, None, int]:
        """Store a call's result and report it; 1 when it produced a receipt."""
        output = result.output
        if call.error:  # what was stored (and is sent) as the call's arguments is {}
            output = f"{call.note()}\n\n{output}"
        self._store("tool", output, tool_call_id=call.id, name=call.name,
                    status=result.status)  # a resumed view draws the call's ✓ or ✗ from it
        yield ToolCallFinished(call.id, call.name, output, result.ok, round(time.monotonic() - started, 3))
        if result.ok and result.receipt:
            yield Receipt(call.name, result.receipt)
            return 1
        return 0

    # -- hooks (agent/hooks/) ---------------------------------------------------------------------

    def _hook_base(self) -> dict[str, Any]:
        """What every hook is told, as Claude Code tells it."""
        return {"session_id": str(self.session_id), "transcript_path": write_transcript(self.config, self.memory, self.session_id),
                "permission_mode": "plan" if self.plan else "default"}

    def _fire(self, event: str, **fields: Any) -> Generator[Event, None, Verdict]:
        """Run one event's hooks; their warnings are notices."""
        if not self.hooks.has(event):
            return Verdict()
        verdict = self.hooks.fire(event, self._hook_base(), fields, cancel=self._cancel)
        for line in verdict.notices:
            yield Notice(line)
        if verdict.stopped and event in (PRE_TOOL_USE, POST_TOOL_USE, STOP):  # Claude Code stops; the user is told why
            self._hook_stopped = True
            yield Notice(f"A {event} hook ended the turn: {verdict.reason.splitlines()[0][:200]}")
        return verdict

    def _start_hooks(self, text: str) -> Generator[Event, None, str | None]:
        """SessionStart (at the session's first turn) and UserPromptSubmit: the context they add
        to the prompt, or None when a hook blocked the prompt (the user is told why)."""
        context = ""
        if not self._hooks_started:
            self._hooks_started = True
            started = yield from self._fire(SESSION_START, source="resume" if self.history else "startup")
            if started.blocked and started.reason:
                yield Notice(f"SessionStart hook: {started.reason.splitlines()[0][:200]}")
            context += f"\n\n{started.context}" if started.context else ""
        submitted = yield from self._fire(USER_PROMPT_SUBMIT, prompt=text)
        if submitted.blocked:
            yield Error(f"A UserPromptSubmit hook blocked this prompt, so it was not sent: {submitted.reason}")
            return None
        return context + (f"\n\n{submitted.context}" if submitted.context else "")

    def _post_tool_hooks(self, fields: dict[str, Any], result: ToolResult) -> Generator[Event, None, ToolResult]:
        """PostToolUse: what its hooks say for the model is added to the call's result."""
        verdict = yield from self._fire(POST_TOOL_USE, **fields, tool_response=tool_response(fields, result))
        extra = [framed(POST_TOOL_USE, [("", verdict.reason)])] if verdict.decision == "block" and verdict.reason else []
        extra += [verdict.context] if verdict.context else []
        return replace(result, output="\n\n".join([result.output, *extra])) if extra else result

    def _stop_hooks(self, stops: int, texts: list[str]) -> Generator[Event, None, bool]:
        """Stop: True when a hook sends the model back to work (at most ``STOP_LIMIT`` times a turn)."""
        verdict = yield from self._fire(STOP, stop_hook_active=stops > 0,
                                        last_assistant_message=texts[-1] if texts else "")
        if not verdict.blocked or verdict.stopped or self._cancel.is_set():
            return False
        if stops >= STOP_LIMIT:
            yield Notice(f"A Stop hook asked to go on {stops + 1} times; the turn ends here (at most {STOP_LIMIT}).")
            return False
        why = verdict.reason or "a Stop hook says the task is not finished"
        yield Notice(f"A Stop hook sent the model back to work: {why.splitlines()[0][:200]}")
        self._store("user", framed(STOP, [("", why)]) + "\nGo on with the task if that is right.")
        return True

    def _record_status(self, message_id: int, status: Status) -> None:
        """A mark for exports and resumed views; losing it (a full disk) loses no message."""
        try:
            self.memory.set_status(message_id, status)
        except (sqlite3.Error, OSError) as exc:
            log.warning("could not record that message %s ended %s: %s", message_id, status, exc)

    def _store(self, role: str, content: str | None, *, calls: tuple[ToolCall, ...] = (),
               tool_call_id: str | None = None, name: str | None = None, status: Status = Status.OK,
               stored_as: int | None = None) -> None:
        """Store a message (unless it is stored already, as ``stored_as``) and add it to the history."""
        if stored_as is None:
            stored_as = self.memory.add_message(self.session_id, role, content,
                                                tool_calls=[c.to_llm() for c in calls] or None,
                                                tool_call_id=tool_call_id, name=name, status=status)
        self.history.append(ChatMessage(stored_as, self.session_id, role, content, calls, tool_call_id, name,
                                        status=status))


def _images_line(images: Sequence[ImageRef]) -> str:
    return ("The image " if len(images) == 1 else "The images ") + ", ".join(i.describe() for i in images) + (
        " is" if len(images) == 1 else " are")


def _named_tools(call: ToolCall) -> list[str]:
    """The tools a ``delegate`` call names for its sub-agent (anything else in ``tools`` ignored)."""
    named = call.arguments.get("tools")
    return [n for n in named if isinstance(n, str)] if isinstance(named, list) else []


TURN_STATUS = {"cancelled": Status.CANCELLED, "error": Status.FAILED}
"""A turn that ended so marks its user message (``messages.status``)."""


class _PartialAnswer:
    """Saves a streaming answer as it grows: inserted at its first text, rewritten at most every
    ``PERSIST_EVERY`` s. A failing save (full disk) is logged and does not stop the stream."""

    def __init__(self, memory: MemoryStore, session_id: int) -> None:
        self.memory, self.session_id = memory, session_id
        self.message_id: int | None = None
        self._saved_at = 0.0

    def update(self, parts: list[str]) -> None:
        now = time.monotonic()
        if self.message_id is not None and now - self._saved_at < PERSIST_EVERY:
            return
        self._saved_at = now
        text = "".join(parts)
        try:
            if self.message_id is None:
                self.message_id = self.memory.add_message(self.session_id, "assistant", text)
            else:
                self.memory.update_message(self.message_id, text)
        except sqlite3.Error as exc:
            log.warning("could not save the streaming answer: %s", exc)

    def finish(self, text: str, tool_calls: list[dict[str, Any]] | None) -> int | None:
        """Store the final form over the partial one; its id, or None when nothing was saved yet."""
        if self.message_id is not None:
            self.memory.update_message(self.message_id, text or None, tool_calls)
        return self.message_id

