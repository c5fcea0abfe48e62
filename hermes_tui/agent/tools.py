"""ToolRegistry: the declared tools the model may call, and their safe execution.

A tool problem is never an exception: unknown tools, bad JSON, wrong argument types, paths outside
the workspace or holding secrets, denials and timeouts all come back as ``ToolResult(ok=False, ...)``
with a message the model can act on. Every result passes through ``Secrets.scrub`` here, in
``execute``, the one path by which tool output reaches the model, memory, logs and screens.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.agent.approvals import ApprovalPolicy, PendingCall
from hermes_tui.agent.delegate import DELEGATE_TOOL
from hermes_tui.agent.edit import EDIT_TOOL
from hermes_tui.agent.fetch import FETCH_TOOL
from hermes_tui.agent.jobs import GRACE, Job, Jobs
from hermes_tui.agent.mcp.names import SUMMARY_ARGS as BRIDGE_SUMMARY_ARGS
from hermes_tui.agent.memory_tools import MEMORY_TOOLS
from hermes_tui.agent.paths import (
    PathError,
    WriteCancelled,
    display_path,
    open_in_workspace,
    real_target,
    replace_file,
)
from hermes_tui.agent.permissions import command_program
from hermes_tui.agent.reading import READ_CAP, READ_TOOL
from hermes_tui.agent.sandbox import Sandbox
from hermes_tui.agent.search import SEARCH_TOOLS
from hermes_tui.agent.shell import BASH_DEFAULT_TIMEOUT, BASH_MAX_TIMEOUT, OUTPUT_CAP, run_command
from hermes_tui.agent.skill_tools import SKILL_TOOLS
from hermes_tui.agent.toolkit import (
    ASK,
    BOOL,
    CANCELLED,
    DENIED,
    FAMILIES,
    INT,
    PLAN_REFUSAL,
    STR,
    ApprovalSpec,
    Tool,
    ToolContext,
    ToolResult,
    check_arguments,
    schema,
)
from hermes_tui.conversation import Status, ToolCall
from hermes_tui.memory.framing import framed, screened
from hermes_tui.redaction import Secrets

if TYPE_CHECKING:
    from hermes_tui.agent.delegate import Delegates
    from hermes_tui.events import Event
    from hermes_tui.memory.facts import FactStore
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

Approver = Callable[[str, dict[str, Any]], "bool | str"]
"""Called with (tool name, arguments) before a tool that needs approval.

True allows the call; False denies it; a string denies it and is the reason the model is given.
The surfaces pass an ``approvals.ApprovalPolicy``, which is also given the call's id.
"""

LIST_CAP = 500  # entries list_dir returns

__all__ = [
    "APPROVAL_TOOLS",
    "OUTPUT_CAP",
    "READ_CAP",
    "TOOLS",
    "Approver",
    "ToolRegistry",
    "ToolResult",
    "approval_spec",
    "summary_argument",
]


# -- handlers: run(ctx, **arguments) -> ToolResult ---------------------------------------------


def run_bash(ctx: ToolContext, command: str, timeout: int = BASH_DEFAULT_TIMEOUT, background: bool = False) -> ToolResult:
    if not command.strip():
        return ToolResult(False, "run_bash: command is empty")
    if background:
        return _start_job(ctx, command)
    timeout = max(1, min(int(timeout), BASH_MAX_TIMEOUT))
    outcome = run_command(command, ctx.workspace, timeout, ctx.cancel, ctx.environment, sandbox=ctx.sandbox,
                          home=ctx.home, readable=(ctx.skills.skills_dir,))
    if outcome.status == "timeout":
        return ToolResult(False, f"Timed out after {timeout} s; the command and its children were killed.\n{outcome.text}")
    if outcome.status == "cancelled":
        return ToolResult(False, f"Cancelled by the user; the command was killed.\n{outcome.text}")
    code = outcome.returncode
    return ToolResult(code == 0, f"exit code {code}\n{outcome.text}" if outcome.text else f"exit code {code}")


def _start_job(ctx: ToolContext, command: str) -> ToolResult:
    if ctx.jobs is None:
        return ToolResult(False, "run_bash: background jobs are not available here")
    job = ctx.jobs.start(command, ctx.workspace, os.environ if ctx.environment is None else ctx.environment,
                         sandbox=ctx.sandbox or Sandbox(), home=ctx.home, readable=(ctx.skills.skills_dir,))
    if isinstance(job, str):
        return ToolResult(False, f"run_bash: {job}")
    return ToolResult(True, f"started background job {job.number}; read its output with job_output "
                            f"(id {job.number}), end it with job_stop. It ends with this session at the latest.")


def _job(ctx: ToolContext, name: str, number: int) -> Job | ToolResult:
    job = ctx.jobs.get(int(number)) if ctx.jobs is not None else None
    if job is None:
        known = ctx.jobs.unknown(int(number)) if ctx.jobs is not None else f"there is no job {int(number)}"
        return ToolResult(False, f"{name}: {known}")
    return job


def job_output(ctx: ToolContext, id: int) -> ToolResult:
    job = _job(ctx, "job_output", id)
    if isinstance(job, ToolResult):
        return job
    running = job.running  # read before the output: a job seen running may still print after
    text = job.read_new()
    state = "still running" if running else job.state()
    return ToolResult(True, f"job {job.number} {state}\n{text}" if text else f"job {job.number} {state}; no new output")


def job_stop(ctx: ToolContext, id: int) -> ToolResult:
    job = _job(ctx, "job_stop", id)
    if isinstance(job, ToolResult):
        return job
    if not job.running:
        return ToolResult(True, f"job {job.number} had already {job.state()}")
    assert ctx.jobs is not None
    ctx.jobs.stop(job)
    return ToolResult(True, f"job {job.number} {job.state()}; job_output still returns what it printed last")


def write_file(ctx: ToolContext, path: str, content: str) -> ToolResult:
    data = content.encode("utf-8")
    try:
        real = replace_file(ctx.workspace, path, data, home=ctx.home, cancel=ctx.cancel.is_set)
    except WriteCancelled:
        return ToolResult(False, f"write_file: cancelled by the user; {path!r} was not changed")
    return ToolResult(True, f"wrote {len(data)} bytes to {display_path(ctx.workspace, real)}")


def list_dir(ctx: ToolContext, path: str = ".") -> ToolResult:
    with open_in_workspace(ctx.workspace, path, "list", home=ctx.home) as (fd, real):
        entries = []
        with os.scandir(fd) as listing:
            for entry in listing:
                if ctx.cancel.is_set():
                    return ToolResult(False, "list_dir: cancelled by the user")
                entries.append(_describe(entry))
    entries.sort(key=lambda pair: pair[0])
    lines = [line for _, line in entries[:LIST_CAP]]
    if len(entries) > LIST_CAP:
        lines.append(f"[... {len(entries) - LIST_CAP} more entries not shown ...]")
    header = f"{display_path(ctx.workspace, real)}: {len(entries)} entries"
    return ToolResult(True, "\n".join([header, *lines]))


def search_memory(ctx: ToolContext, query: str, limit: int = 10) -> ToolResult:
    # The same hits as the Memory pane: matching session summaries first, then messages.
    hits = ctx.memory.recall(query, limit=max(1, min(int(limit), 50)))
    if not hits:
        return ToolResult(True, f"No past messages match {query!r}.")
    lines = []
    for hit in hits:
        when = time.strftime("%Y-%m-%d", time.localtime(hit.created))
        lines.append(f"- session {hit.session_id}, {hit.role}, {when}: {screened(hit.snippet)}")
    return ToolResult(True, framed(lines))


# -- the declared tool set ---------------------------------------------------------------------

FILE_TOOLS: tuple[Tool, ...] = (
    Tool(
        "run_bash",
        "Run a bash command in the workspace folder. Returns the exit code and the combined "
        f"stdout+stderr (long output keeps its head and tail). Default timeout {BASH_DEFAULT_TIMEOUT} s, "
        f"at most {BASH_MAX_TIMEOUT} s. background: true starts a job (a server, a watcher) and returns its id "
        "at once: no timeout; job_output reads it, job_stop ends it, the session's end too.",
        schema({"command": STR, "timeout": INT | {"description": "seconds"}, "background": BOOL}, ["command"]),
        run_bash, cancellable=True, summary_arg="command", family="shell", changes_files=True,
        approval=ApprovalSpec("command", "This command", "All shell", "command", lasting=True,
                              broad_key=command_program, broad_label="any plain {} command", noun="shell"),
    ),
    Tool(
        "job_output",
        "A background job's output since the last read (long output: head and tail, the bytes skipped "
        "counted), and whether it still runs or its exit code.",
        schema({"id": INT}, ["id"]),
        job_output, family="shell",
    ),
    Tool(
        "job_stop", f"Stop a background job (SIGTERM, SIGKILL after {GRACE:g} s).",
        schema({"id": INT}, ["id"]),
        job_stop, family="shell",
    ),
    READ_TOOL,
    Tool(
        "write_file", "Write a text file inside the workspace (replaces it; creates parent folders).",
        schema({"path": STR, "content": STR}, ["path", "content"]),
        write_file, cancellable=True, summary_arg="path", family="write", changes_files=True,
        approval=ApprovalSpec("path", "This file", "All writes", "write", lasting=True, noun="writes to",
                              target=real_target),
    ),
    EDIT_TOOL,
    *SEARCH_TOOLS,
    FETCH_TOOL,
    Tool(
        "list_dir", "List a folder inside the workspace: names, kinds and sizes.",
        schema({"path": STR | {"description": "relative to the workspace; default ."}}, []),
        list_dir, cancellable=True, summary_arg="path",
    ),
    Tool(
        "search_memory",
        "Full-text search over every past conversation (all sessions) and their summaries. Use it"
        ' before saying you don\'t know. Syntax: "exact phrase", prefix*, a OR b, -exclude,'
        " role:user|assistant|tool, tool:NAME.",
        schema({"query": STR, "limit": INT}, ["query"]), search_memory, summary_arg="query",
    ),
)

TOOLS: tuple[Tool, ...] = (*FILE_TOOLS, *MEMORY_TOOLS, *SKILL_TOOLS, DELEGATE_TOOL)
APPROVAL_TOOLS = frozenset(tool.name for tool in TOOLS if tool.needs_approval)
_BY_NAME = {tool.name: tool for tool in TOOLS}


def approval_spec(name: str) -> ApprovalSpec:
    """How a call to ``name`` is asked about: as its record declares (MCP tools: ``ASK``)."""
    tool = _BY_NAME.get(name)
    return tool.approval if tool is not None and tool.approval is not None else ASK


def summary_argument(name: str, arguments: Mapping[str, Any]) -> str | None:
    """The argument a one-line display of a call to ``name`` shows (``command``, ``path``...):
    its record's ``summary_arg``, the MCP bridge's included (``mcp/names.py``)."""
    tool = _BY_NAME.get(name)
    key = tool.summary_arg if tool is not None else BRIDGE_SUMMARY_ARGS.get(name)
    value = arguments.get(key) if key else None
    return value if isinstance(value, str) else None


class ToolRegistry:
    """Owns the tool set of one surface; a family not in ``families`` is removed entirely.

    ``plan``: plan mode; only read-only tools (``Tool.read_only``) are offered, and a call to any
    other is refused before anything runs, even when the model names it anyway."""

    def __init__(
        self,
        workspace: Path,
        memory: MemoryStore,
        skills: SkillManager,
        *,
        home: Path | None = None,
        secrets: Secrets | None = None,
        sandbox: Sandbox | None = None,
        fetch_private: bool = False,
        families: frozenset[str] = FAMILIES,
        approver: Approver | None = None,
        tools: Sequence[Tool] = TOOLS,
        extra_tools: Callable[[], Sequence[Tool]] | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.memory = memory
        self.skills = skills
        self.home = home
        self.secrets = secrets if secrets is not None else Secrets()
        self.sandbox = sandbox if sandbox is not None else Sandbox()
        self.approver = approver
        self.fetch_private = fetch_private  # web_fetch may reach private addresses
        self.facts: FactStore | None = None  # set by the agent: curated memory of its workspace
        self.session_id: int | None = None
        self.message_id: int | None = None  # the turn's user message, set by the agent
        self.jobs = Jobs(self.secrets.scrub)  # run_bash's background jobs: they end with the session (``AgentLoop.end_jobs``)
        self.delegates: Delegates | None = None  # set by the agent: its sub-agents (none in a sub-agent)
        self._tools = {t.name: t for t in tools if t.family is None or t.family in families}
        self._extra = extra_tools  # asked at each use: e.g. the MCP servers' tools as they come and go
        self.plan = False

    def _all(self) -> dict[str, Tool]:
        """The declared tools plus the extra source's (which never replace a declared one)."""
        if self._extra is None:
            return self._tools
        return {**{t.name: t for t in self._extra()}, **self._tools}

    def _current(self) -> dict[str, Tool]:
        """The tools offered now: in plan mode, the read-only ones only."""
        tools = self._all()
        return {name: t for name, t in tools.items() if t.read_only} if self.plan else tools

    def offered(self) -> dict[str, Tool]:
        """The tools offered now, by name (what a sub-agent's tools are chosen from)."""
        return dict(self._current())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of exactly the enabled tools."""
        return [tool.spec() for tool in self._current().values()]

    def needs_approval(self, name: str) -> bool:
        tool = self._current().get(name)
        return tool is not None and tool.needs_approval and self.approver is not None

    def asks(self, name: str, arguments: dict[str, Any], hook: str = "") -> bool:
        """Will the user be asked about this call (no rule of the policy settles it)? ``hook``: what
        a PreToolUse hook decided ("allow" skips the question, "ask" asks even where a rule allows)."""
        tool = self._current().get(name)
        if tool is None or hook == "allow" or (tool.check or check_arguments)(tool.parameters, arguments):
            return False  # never asked: a hook allowed it, or the arguments fail before the question
        if hook == "ask":
            return self.approver is not None
        if not self.needs_approval(name):
            return False  # no approver, or a tool that is never asked about
        return not (isinstance(self.approver, ApprovalPolicy) and self.approver.settled(name, arguments))

    def target(self, name: str, arguments: dict[str, Any]) -> str:
        """The real path a write or edit goes to when it is not the one given ("" otherwise)."""
        return self.approver.target(name, arguments) if isinstance(self.approver, ApprovalPolicy) else ""

    def changes_files(self, name: str) -> bool:
        tool = self._current().get(name)  # an MCP server's tool may write files too
        return tool is not None and tool.changes_files

    def parse_arguments(self, arguments: dict[str, Any] | str | None) -> dict[str, Any] | str:
        """A dict of arguments, or an error message when they are not a JSON object."""
        if isinstance(arguments, dict):
            return arguments
        if arguments is not None and not isinstance(arguments, str):
            return "arguments must be a JSON object"
        call = ToolCall.parse("", "", arguments)
        return dict(call.arguments) if call.valid else f"arguments are {call.error}; send a JSON object"

    def execute(self, name: str, arguments: dict[str, Any] | str | None,
                cancel: threading.Event | None = None, call_id: str = "", hook: str = "",
                events: Callable[[Event], None] | None = None) -> ToolResult:
        """Run one call (``call_id``: the model's id, for the approval question; ``hook``: a
        PreToolUse hook's decision, as in ``asks``; ``events``: where the tool may report while it
        runs); the result's output is always scrubbed of secret values."""
        result = self._execute(name, arguments, cancel or threading.Event(), call_id, hook, events)
        receipt = self.secrets.scrub(result.receipt) if result.receipt else None
        return replace(result, output=self.secrets.scrub(result.output), receipt=receipt)

    def _execute(self, name: str, arguments: dict[str, Any] | str | None, cancel: threading.Event,
                 call_id: str, hook: str, events: Callable[[Event], None] | None) -> ToolResult:
        current = self._current()
        tool = current.get(name)
        if tool is None and self.plan and name in self._all():
            return ToolResult(False, PLAN_REFUSAL.format(name=name), refusal=Status.DENIED)
        if tool is None:
            return ToolResult(False, f"Unknown tool {name!r}. Available tools: {', '.join(current)}.")
        args = self.parse_arguments(arguments)
        if isinstance(args, str):
            return ToolResult(False, f"{name}: {args}")
        problem = (tool.check or check_arguments)(tool.parameters, args)
        if problem:
            return ToolResult(False, f"{name}: {problem}")
        if self.approver is not None and hook != "allow" and (tool.needs_approval or hook == "ask"):
            verdict = (self.approver.decide(PendingCall(call_id, name, args), force=hook == "ask")
                       if isinstance(self.approver, ApprovalPolicy) else self.approver(name, args))
            if verdict is not True:
                if verdict == CANCELLED:
                    return ToolResult(False, CANCELLED, refusal=Status.CANCELLED)
                return ToolResult(False, verdict if isinstance(verdict, str) else DENIED.format(name=name),
                                  refusal=Status.DENIED)
        if cancel.is_set():
            return ToolResult(False, CANCELLED, refusal=Status.CANCELLED)
        # A tool not declared cancellable is never stopped halfway (e.g. a skill file half written).
        ctx = ToolContext(self.workspace, self.memory, self.skills, home=self.home,
                          cancel=cancel if tool.cancellable else threading.Event(),
                          environment=self.secrets.clean_environment(os.environ),
                          facts=self.facts, session_id=self.session_id, message_id=self.message_id,
                          sandbox=self.sandbox, fetch_private=self.fetch_private, jobs=self.jobs,
                          delegates=self.delegates, call_id=call_id, events=events)
        try:
            return tool.run(ctx, **args)
        except PathError as exc:
            return ToolResult(False, f"{name}: {exc}")
        except Exception as exc:  # a tool bug must not kill the turn; the model sees it as a failure
            log.exception("tool %s failed", name)
            return ToolResult(False, f"{name} failed: {type(exc).__name__}: {exc}")


# -- helpers ----------------------------------------------------------------------------------


def _describe(entry: os.DirEntry[str]) -> tuple[tuple[bool, str], str]:
    """(sort key: folders first, then by name; the listing line)."""
    if entry.is_symlink():
        return (True, entry.name), f"{entry.name} -> (symlink)"
    if entry.is_dir(follow_symlinks=False):
        return (False, entry.name), f"{entry.name}/"
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return (True, entry.name), entry.name
    return (True, entry.name), f"{entry.name}  {size} B"
