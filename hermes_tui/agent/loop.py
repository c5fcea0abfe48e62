"""AgentLoop: one conversation (session) with the model, its tools, its memory and its skills.

``run_turn`` is a generator of events (``hermes_tui.events``) meant to be consumed on a worker
thread; ``cancel`` may be called from any other thread. Every message is written to the memory
store as soon as it is complete, the user's first, so nothing typed is ever lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from hermes_tui.agent.prompts import MAIN_SYSTEM_PROMPT, relevant_skills_note, skills_index
from hermes_tui.agent.tools import APPROVAL_TOOLS, Approver, ToolRegistry
from hermes_tui.config import Config
from hermes_tui.events import (
    ApprovalNeeded,
    Error,
    Event,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Usage,
)
from hermes_tui.learning.curator import propose_skill, summarize_session
from hermes_tui.llm import LLMClient, LLMError, StreamResult, ToolCallRequest
from hermes_tui.memory.store import MemoryStore
from hermes_tui.secrets import Secrets
from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

MAX_STEPS = 25
LEARN_THRESHOLD = 3  # tool calls in one turn that make it worth distilling a skill
RELEVANT_SKILLS = 3


class AgentLoop:
    def __init__(
        self,
        config: Config,
        memory: MemoryStore,
        skills: SkillManager,
        *,
        session_id: int | None = None,
        source: str = "tui",
        enable_shell: bool = True,
        enable_write: bool = True,
        approver: Approver | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        self.config = config
        self.memory = memory
        self.skills = skills
        self.llm = llm or LLMClient(config)
        self.tools = ToolRegistry(
            config.workspace, memory, skills, enable_shell=enable_shell, enable_write=enable_write,
            approver=None if config.approval == "always" else approver,
            home=config.home, secrets=Secrets.from_config(config),
        )
        self._cancel = threading.Event()
        self._last_turn: list[dict[str, Any]] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd: float | None = None
        if session_id is None:
            self.session_id = memory.new_session(source=source)
            self.history: list[dict[str, Any]] = []
        else:
            if memory.get_session(session_id) is None:
                raise ValueError(f"There is no session {session_id}; /sessions lists them.")
            self.session_id = session_id
            self.history = [m.to_llm() for m in memory.get_messages(session_id) if m.role != "system"]
        # Built once: byte-identical for the whole session so providers can cache it.
        self.system_prompt = MAIN_SYSTEM_PROMPT.format(
            workspace=config.workspace, tool_names=", ".join(self.tools.names),
            skills_index=skills_index(skills.list()),
        )

    # -- control ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the running turn: closes the stream and kills a running run_bash group."""
        self._cancel.set()

    def set_model(self, provider: str | None = None, model: str | None = None) -> Config:
        """Switch provider/model for the next call (``/model``); raises ``ConfigError``."""
        self.config = self.config.with_overrides(provider=provider, model=model)
        self.llm = LLMClient(self.config)
        return self.config

    # -- one turn -----------------------------------------------------------------------------

    def run_turn(self, text: str) -> Iterator[Event]:
        """Yield the events of one user turn; after ``TurnFinished`` maybe a ``SkillLearned``."""
        self._cancel.clear()
        start = len(self.history)
        yield TurnStarted(self.session_id)
        self.memory.add_message(self.session_id, "user", text)
        note = relevant_skills_note(self.skills.search(text, limit=RELEVANT_SKILLS))
        self.history.append({"role": "user", "content": text + note})

        texts: list[str] = []
        tool_count = 0
        reason = "max_steps"
        for _step in range(MAX_STEPS):
            try:
                result = yield from self._call_model(texts)
            except LLMError as exc:
                yield Error(exc.message, exc.retryable)
                reason = "error"
                break
            if result.cancelled:
                reason = "cancelled"
                break
            if not result.tool_calls:
                reason = "done"
                break
            for call in result.tool_calls:
                tool_count += 1
                yield from self._run_tool(call)
            if self._cancel.is_set():
                reason = "cancelled"
                break
        else:
            yield Notice(f"Stopped after {MAX_STEPS} steps without a final answer. Ask me to continue if needed.")
        yield TurnFinished("".join(texts), tool_count, reason)
        self._last_turn = self.history[start:]
        if tool_count >= LEARN_THRESHOLD and reason == "done":
            learned = propose_skill(self.llm, self.skills, self._last_turn)
            if learned is not None:
                yield learned

    def learn_now(self) -> Iterator[Event]:
        """Force the curator on the last turn (``/learn``), whatever its tool count."""
        if not self._last_turn:
            yield Notice("Nothing to learn from yet: run a task first.")
            return
        learned = propose_skill(self.llm, self.skills, self._last_turn)
        yield learned or Notice("Nothing worth saving as a skill in the last turn.")

    def close(self, timeout: float = 15.0) -> str | None:
        """End the session: store and return its summary (None when empty or unreachable)."""
        messages = [m.to_llm() for m in self.memory.get_messages(self.session_id)]
        if not messages:
            return None
        summary = summarize_session(self.llm, messages, timeout=timeout)
        if summary:
            self.memory.set_summary(self.session_id, summary)
        return summary

    # -- internals ----------------------------------------------------------------------------

    def _call_model(self, texts: list[str]) -> Iterator[Event]:
        """Stream one model call; store the assistant message; return the ``StreamResult``."""
        messages = [{"role": "system", "content": self.system_prompt}, *self.history]
        partial: list[str] = []
        result: StreamResult | None = None
        try:
            for item in self.llm.stream(messages, self.tools.specs(), self._cancel):
                if isinstance(item, StreamResult):
                    result = item
                elif isinstance(item, TextDelta):
                    partial.append(item.text)
                    yield item
                else:
                    yield item
        finally:
            text = "".join(partial)
            texts.append(text)
            calls = result.tool_calls if result else []
            if text or calls:  # a cut or cancelled stream keeps the text it had; no half tool calls
                self._store({"role": "assistant", "content": text or None,
                             "tool_calls": [c.to_openai() for c in calls] or None})
        assert result is not None
        if result.usage:
            self._count(result.usage)
            yield result.usage
        return result

    def _run_tool(self, call: ToolCallRequest) -> Iterator[Event]:
        arguments = self.tools.parse_arguments(call.arguments)
        shown = arguments if isinstance(arguments, dict) else {"raw": call.arguments}
        yield ToolCallStarted(call.id, call.name, shown)
        started = time.monotonic()
        if self._cancel.is_set():
            ok, output = False, "Cancelled by the user before it ran."
        else:
            if call.name in APPROVAL_TOOLS and self.tools.approver is not None:
                yield ApprovalNeeded(call.id, call.name, shown)
            result = self.tools.execute(call.name, call.arguments, cancel=self._cancel)
            ok, output = result.ok, result.output
        self._store({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output})
        yield ToolCallFinished(call.id, call.name, output, ok, round(time.monotonic() - started, 3))

    def _store(self, message: dict[str, Any]) -> None:
        self.memory.add_message(
            self.session_id, message["role"], message.get("content"),
            tool_calls=message.get("tool_calls"), tool_call_id=message.get("tool_call_id"),
            name=message.get("name"),
        )
        self.history.append({k: v for k, v in message.items() if v is not None})

    def _count(self, usage: Usage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + usage.cost_usd

