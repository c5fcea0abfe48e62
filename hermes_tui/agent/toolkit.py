"""The shape of a tool: one declared ``Tool`` record per tool, so adding a tool is one edit.

Kept apart from ``tools.py`` so other modules (the skill tools) can declare records without a
circular import: ``tools.py`` only gathers the records and executes them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_tui.conversation import Status

if TYPE_CHECKING:
    from hermes_tui.agent.delegate import Delegates
    from hermes_tui.agent.jobs import Jobs
    from hermes_tui.agent.sandbox import Sandbox
    from hermes_tui.events import Event
    from hermes_tui.memory.facts import FactStore
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gives back to the loop: the model's text, and what the user is shown."""

    ok: bool
    output: str
    receipt: str | None = None  # what the user is shown once it is done ("remembered: …")
    refusal: Status | None = None  # DENIED or CANCELLED: the call never ran

    @property
    def status(self) -> Status:
        """What is stored with the result (``messages.status``)."""
        return Status.OK if self.ok else (self.refusal or Status.FAILED)


@dataclass
class ToolContext:
    """What a tool may use. ``home`` is HERMES_HOME (refused to the file tools); ``cancel`` is set
    when the user stops the turn, and cancellable tools return soon after."""

    workspace: Path
    memory: MemoryStore
    skills: SkillManager
    home: Path | None = None
    environment: dict[str, str] | None = None  # run_bash's environment, already stripped of secrets
    facts: FactStore | None = None  # curated memory (the memory tool)
    session_id: int | None = None  # the session the call belongs to (provenance)
    message_id: int | None = None  # the user message of the turn (provenance)
    sandbox: Sandbox | None = None  # how run_bash confines commands (None: the default, sandboxed)
    fetch_private: bool = False  # web_fetch may reach private addresses (HERMES_FETCH_ALLOW_PRIVATE)
    jobs: Jobs | None = None  # the session's background jobs (run_bash background, job_output, job_stop)
    delegates: Delegates | None = None  # the session's sub-agents (the delegate tool; None in a sub-agent)
    call_id: str = ""  # the model's id of the call being run
    events: Callable[[Event], None] | None = None  # where a tool reports progress while it runs (a sub-agent's events)
    cancel: threading.Event = field(default_factory=threading.Event)


FAMILIES = frozenset({"shell", "write", "web"})
"""The tool families a surface may switch off (``Surface.enabled``); a tool in none is always on."""

PLAN_REFUSAL = ("{name} is not available in plan mode: only read-only tools run. Nothing was run. "
                "Write the plan as your answer; the user decides whether to carry it out.")
"""The result of a call to a tool plan mode does not offer (nothing ran)."""

DENIED = "The user denied this {name} call. Do not retry it; ask the user how to proceed."
CANCELLED = "Cancelled by the user before it ran."
"""The two results of a call that never ran (the one copy of each)."""


@dataclass(frozen=True)
class ApprovalSpec:
    """How a call is put to the user before it runs, declared with the tool.

    ``exact``: the argument that makes "this exact call" for the session (None: all of them);
    ``exact_label``/``every_label``: the dialog's two session answers (None: "All <tool>");
    ``shows``: what the dialog shows: the ``command``, a ``write``'s diff, an ``edit``'s diff, or the
    ``arguments``; ``lasting``: this exact call (its ``key``) may be allowed for good in this
    workspace (``agent/permissions.py``); ``broad_key``: a wider lasting key of a call, such as the
    program of a plain shell command (None: the tool has none, or this call has none), listed as
    ``broad_label`` (and in the dialog's answer as ``broad_answer``: "Any pytest"); ``noun``: how lists of rules name the tool's calls ("shell: make lint");
    ``target``: for a path, the real path it names in a workspace, relative to it (symlinks
    followed, as the tool will), so "this file" means the file written, not the name it was given.
    """

    exact: str | None = None
    exact_label: str = "This call"
    every_label: str | None = None
    shows: Literal["command", "write", "edit", "arguments"] = "arguments"
    lasting: bool = False
    broad_key: Callable[[dict[str, Any]], str | None] | None = None
    broad_label: str = "any {}"
    broad_answer: str = "Any {}"
    noun: str | None = None
    target: Callable[[Path, str], str | None] | None = None

    def key(self, arguments: dict[str, Any], workspace: Path | None = None) -> str:
        """What "this exact call" compares: the ``exact`` argument (its real ``target`` in
        ``workspace`` where the record has one), else every argument."""
        value = arguments.get(self.exact) if self.exact else None
        if not isinstance(value, str):
            return json.dumps(arguments, sort_keys=True, default=str)
        if self.target is not None and workspace is not None:
            return self.target(workspace, value) or value  # None: the tool refuses the path anyway
        return value

    def broad(self, arguments: dict[str, Any]) -> str | None:
        """The wider lasting key of this call (run_bash: its program), or None."""
        return self.broad_key(arguments) if self.broad_key is not None else None


ASK = ApprovalSpec()
"""The approval of a tool that declares nothing more (an MCP server's)."""


@dataclass(frozen=True)
class Tool:
    """One tool the model may call.

    ``run(ctx, **arguments)`` returns a ``ToolResult``; raising ``PathError`` is turned into a failed
    result. ``approval``: the approver is asked first, as it says (None: never asked).
    ``cancellable``: ``run`` watches ``ctx.cancel``. ``summary_arg``: the argument a one-line
    display of the call shows. ``family``: the family (``FAMILIES``) a surface enables it with.
    ``check``: how the arguments are validated, ``check(parameters, arguments) -> problem or None``;
    None means ``check_arguments`` (our own small schemas; MCP tools bring full JSON Schemas).
    ``changes_files``: it may change files in the workspace, so a checkpoint is taken before its
    first call in a turn. ``keeps``: it saves something later sessions read (a fact, a skill).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[..., ToolResult]
    approval: ApprovalSpec | None = None
    cancellable: bool = False
    summary_arg: str | None = None
    family: str | None = None
    changes_files: bool = False
    check: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None
    keeps: bool = False

    @property
    def needs_approval(self) -> bool:
        return self.approval is not None

    @property
    def read_only(self) -> bool:
        """It changes nothing: no file, no command, nothing kept for later; all plan mode offers.
        The one place this is decided (an MCP tool: ``changes_files`` from its server's readOnlyHint)."""
        return not self.changes_files and self.family is None and not self.keeps

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
STR_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
BOOL: dict[str, Any] = {"type": "boolean"}


def check_arguments(parameters: dict[str, Any], args: dict[str, Any]) -> str | None:
    """Validate against our own small schemas: required keys and primitive types."""
    properties = parameters["properties"]
    missing = [key for key in parameters["required"] if key not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    for key, value in args.items():
        spec = properties.get(key)
        if spec is None:
            return f"unexpected argument {key!r}; allowed: {', '.join(properties) or 'none'}"
        kind = spec["type"]
        if kind == "string" and not isinstance(value, str):
            return f"{key!r} must be a string"
        if (kind == "integer" and (isinstance(value, bool) or not isinstance(value, int))
                and not (isinstance(value, float) and value.is_integer())):
            return f"{key!r} must be an integer"
        if kind == "boolean" and not isinstance(value, bool):
            return f"{key!r} must be true or false"
        if kind == "array" and spec["items"]["type"] == "object":
            if not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
                return f"{key!r} must be a list of objects"
        elif kind == "array" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"{key!r} must be a list of strings"
    return None
