"""The chat's AgentLoop lifecycle: created on first use, replaced by /new, /resume and the setup.

No Textual here. The loop is created lazily so that opening the app (or only browsing skills and
memory) does not leave an empty session behind, and the agent modules load after the first frame.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from hermes_tui.config import Config
from hermes_tui.providers import PROVIDERS
from hermes_tui.tui.stores import Stores

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_tui.agent.jobs import Listener
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.agent.tools import Approver
    from hermes_tui.llm import ModelHost

log = logging.getLogger(__name__)


def parse_model_spec(spec: str) -> tuple[str | None, str | None]:
    """``provider:model``, a bare provider, or a bare model (ollama tags keep their own colons)."""
    spec = spec.strip()
    if spec.lower() in PROVIDERS:
        return spec.lower(), None
    provider, sep, model = spec.partition(":")
    if sep and provider.lower() in PROVIDERS and model:
        return provider.lower(), model
    return None, spec


def model_switch_notice(before: Config, after: Config) -> str:
    """What ``/model`` now uses, naming the endpoint and key whenever the provider changed, so a
    key is never sent somewhere the user did not expect."""
    line = f"Now using {after.provider}:{after.model}"
    if after.provider != before.provider:
        endpoint = after.effective_api_base or after.provider_info.public_base or "the provider's endpoint"
        key = after.key_variable or "no key"
        line += f" at {endpoint} with {key}"
        if before.api_base and before.api_base != after.api_base:
            line += f" ({before.api_base} is {before.provider}'s endpoint)"
    if not after.has_api_key:
        line += f"; {after.key_variable} is not set yet"
    return line + "."


class ChatSession:
    def __init__(self, config: Config, stores: Stores, approver: Callable[[], Approver],
                 mcp: McpManager | None = None, on_host_ready: Callable[[], None] = lambda: None) -> None:
        """``approver`` gives the approval policy when the first agent is built: the app's is
        made then, not before its first frame. ``on_host_ready``: see ``host``."""
        self.config = config
        self.stores = stores
        self.approver = approver
        self.mcp = mcp
        self.on_host_ready = on_host_ready
        self.closed = threading.Event()  # the app has ended: the warm helper is no longer held
        self._host: ModelHost | None = None
        self._host_lock = threading.Lock()
        self.loop: AgentLoop | None = None
        self._plan_first = False  # /plan before the first message: the new session starts in plan mode
        self.on_jobs: Listener | None = None  # told when a session's background jobs change

    @property
    def session_id(self) -> int | None:
        return self.loop.session_id if self.loop else None

    @property
    def plan(self) -> bool:
        """The session's plan mode (``AgentLoop.plan``); a new or resumed session starts without it."""
        return self.loop.plan if self.loop is not None else self._plan_first

    @plan.setter
    def plan(self, on: bool) -> None:
        if self.loop is not None:
            self.loop.plan = on
        else:
            self._plan_first = on

    def host(self) -> ModelHost:
        """Where every model call of the app runs (``warm.app_host``: the warm helper, or the app's
        own stream helper), chosen at the first use, after the first frame; ``on_host_ready``
        runs once it can answer."""
        with self._host_lock:
            if self._host is None:
                from hermes_tui import warm

                self._host = warm.app_host(self.config, self.closed, self.on_host_ready)
            return self._host

    def _make(self, session_id: int | None, *, plan: bool = False) -> AgentLoop:
        from hermes_tui.agent.runtime import build_agent, tui_surface

        loop = build_agent(self.config, self.stores.memory, self.stores.skills,
                           tui_surface(self.approver(), self.host(), self.mcp), session_id=session_id)
        loop.plan, self._plan_first = plan, False
        loop.tools.jobs.listener = self.on_jobs
        return loop

    def ensure_loop(self) -> AgentLoop:
        if self.loop is None:
            self.loop = self._make(None, plan=self._plan_first)
        return self.loop

    def detach(self) -> AgentLoop | None:
        """Forget the current loop (the caller closes it); the next message starts a new session."""
        loop, self.loop = self.loop, None
        self._plan_first = False
        return loop

    def resume(self, session_id: int) -> AgentLoop:
        """Switch to an earlier session (what it sends: ``memory.resume``, as on every surface);
        raises ValueError when it does not exist."""
        self.loop = self._make(session_id)
        return self.loop

    def last_turn_message_id(self) -> int | None:
        """The store id of the last user message still in the conversation (what /undo takes out)."""
        users = [m for m in (self.loop.history if self.loop else []) if m.role == "user"]
        return users[-1].id if users else None

    def retract_last_turn(self) -> tuple[str, list[int]] | None:
        """Take the last user message and everything after it out of what is sent next (the
        memory keeps them, marked undone, so no later resume sends them); return that message's
        text as typed and the ids of the messages taken out, or None when there is no turn. Its
        images are attached again: they go with the message when it is sent again."""
        loop = self.loop
        if loop is None:
            return None
        starts = [i for i, message in enumerate(loop.history) if message.role == "user"]
        if not starts:
            return None
        taken = loop.history[starts[-1]:]
        del loop.history[starts[-1]:]
        loop.attached[:0] = taken[0].images
        ids = [m.id for m in taken]
        from hermes_tui.memory.errors import StoreError  # here: sqlite3 stays off the first frame's path

        try:
            self.stores.memory.mark_undone(ids)
        except StoreError as exc:  # a read-only store: this run leaves them out all the same
            log.warning("marking %d messages undone failed: %s", len(ids), exc)
        loop.skills.correct_turn(ids[0])  # the skills that turn used did not satisfy
        typed = {m.id: m.content for m in self.stores.memory.get_messages(loop.session_id)}
        text = typed.get(ids[0])  # as typed: the history's copy carries the relevant-skills note
        return (text if text is not None else taken[0].content or ""), ids

    def set_config(self, config: Config) -> None:
        """Adopt a new configuration (after the setup saved a key); keeps the session going."""
        self.config = config
        if self.loop is not None:
            self.loop = self._make(self.loop.session_id, plan=self.loop.plan)

    def set_model(self, spec: str) -> Config:
        """Switch model (and maybe provider) for the next call; raises ConfigError."""
        provider, model = parse_model_spec(spec)
        if self.loop is not None:
            self.config = self.loop.set_model(provider, model)
        else:
            self.config = self.config.switched_to(provider=provider, model=model)
        return self.config
