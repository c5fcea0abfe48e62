"""What a slash command may reach of the app: the ``Controls`` its handlers get.

Why a protocol and not the App: the handlers (``command_runner``) see these members only, so
what a command can change is listed here, one line each, and a handler cannot reassign the
app's state behind its back (a model switch goes through ``switch_model``). ``HermesApp``
provides them; a test checks that the handlers use nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.screen import Screen

    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.config import Config
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.memory.usage import UsageLedger
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.tui.approval import ApprovalBridge
    from hermes_tui.tui.chat import ChatPane
    from hermes_tui.tui.session import ChatSession
    from hermes_tui.tui.session_controller import SessionController


@runtime_checkable
class Controls(Protocol):
    # what is read
    @property
    def config(self) -> Config: ...
    @property
    def memory(self) -> MemoryStore: ...
    @property
    def skills(self) -> SkillManager: ...
    @property
    def mcp(self) -> McpManager: ...
    @property
    def chat(self) -> ChatPane: ...  # notices, the prompt, the conversation
    @property
    def session(self) -> ChatSession: ...  # the chat's AgentLoop
    @property
    def sessions(self) -> SessionController: ...  # resume, /new, forget, undo, retry, rewind
    @property
    def usage(self) -> UsageLedger: ...
    @property
    def approvals(self) -> ApprovalBridge: ...
    @property
    def screen(self) -> Screen[Any]: ...

    # what is done
    def switch_model(self, spec: str) -> Config: ...
    async def show_pane(self, name: str) -> Any: ...
    def show_header(self) -> None: ...
    def show_usage(self) -> None: ...
    async def send(self, text: str) -> None: ...
    def open_setup(self) -> None: ...
    def push_screen(self, screen: Any, callback: Callable[[Any], Any] | None = None) -> Any: ...
    def notify(self, message: str, **kwargs: Any) -> None: ...
    def copy_to_clipboard(self, text: str) -> None: ...
    def action_quit(self) -> Any: ...
