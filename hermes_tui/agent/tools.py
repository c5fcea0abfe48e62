"""ToolRegistry: the tools the model may call, their JSON schemas, and their safe execution.

A tool problem is never an exception: unknown tools, bad JSON, wrong argument types, paths outside
the workspace, denials and timeouts all come back as ``ToolResult(ok=False, output=...)`` with a
message the model can act on.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.agent.paths import PathError, display_path, resolve_in_workspace
from hermes_tui.memory.store import HIT_END, HIT_START
from hermes_tui.skills.schema import SkillError

if TYPE_CHECKING:
    from hermes_tui.memory.store import MemoryStore
    from hermes_tui.skills.manager import SkillManager

log = logging.getLogger(__name__)

Approver = Callable[[str, dict[str, Any]], "bool | str"]
"""Called with (tool name, arguments) before run_bash / write_file.

True allows the call; False denies it; a string denies it and is the reason the model is given.
"""

BASH_DEFAULT_TIMEOUT = 120
BASH_MAX_TIMEOUT = 600
OUTPUT_CAP = 20_000  # characters of tool output handed back to the model
READ_CAP = 200_000  # bytes read_file returns before truncating
LIST_CAP = 500  # entries list_dir returns
APPROVAL_TOOLS = frozenset({"run_bash", "write_file"})


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    output: str


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[..., ToolResult]

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_STR = {"type": "string"}
_INT = {"type": "integer"}
_STR_LIST = {"type": "array", "items": {"type": "string"}}


class ToolRegistry:
    """Owns the tool set of one surface; ``enable_shell``/``enable_write`` remove tools entirely."""

    def __init__(
        self,
        workspace: Path,
        memory: MemoryStore,
        skills: SkillManager,
        *,
        enable_shell: bool = True,
        enable_write: bool = True,
        approver: Approver | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.memory = memory
        self.skills = skills
        self.approver = approver
        self._tools = {t.name: t for t in self._build(enable_shell, enable_write)}

    # -- public API ---------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of exactly the enabled tools."""
        return [tool.spec() for tool in self._tools.values()]

    def parse_arguments(self, arguments: dict[str, Any] | str | None) -> dict[str, Any] | str:
        """A dict of arguments, or an error message when they are not a JSON object."""
        if arguments is None or arguments == "":
            return {}
        if isinstance(arguments, dict):
            return arguments
        if not isinstance(arguments, str):
            return "arguments must be a JSON object"
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return f"arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
        return value if isinstance(value, dict) else "arguments must be a JSON object"

    def execute(
        self,
        name: str,
        arguments: dict[str, Any] | str | None,
        cancel: threading.Event | None = None,
    ) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(False, f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}.")
        args = self.parse_arguments(arguments)
        if isinstance(args, str):
            return ToolResult(False, f"{name}: {args}")
        problem = _check_arguments(tool.parameters, args)
        if problem:
            return ToolResult(False, f"{name}: {problem}")
        if name in APPROVAL_TOOLS and self.approver is not None:
            verdict = self.approver(name, args)
            if verdict is not True:
                return ToolResult(False, verdict if isinstance(verdict, str) else
                                  f"The user denied this {name} call. Do not retry it; ask the user how to proceed.")
        try:
            extra = {"cancel": cancel} if name == "run_bash" else {}
            return tool.handler(**args, **extra)
        except PathError as exc:
            return ToolResult(False, f"{name}: {exc}")
        except Exception as exc:  # a tool bug must not kill the turn; the model sees it as a failure
            log.exception("tool %s failed", name)
            return ToolResult(False, f"{name} failed: {type(exc).__name__}: {exc}")

    # -- tool set -----------------------------------------------------------------------------

    def _build(self, enable_shell: bool, enable_write: bool) -> list[_Tool]:
        tools: list[_Tool] = []
        if enable_shell:
            tools.append(_Tool(
                "run_bash",
                "Run a bash command in the workspace folder. Returns the exit code and the combined "
                f"stdout+stderr (long output is cut in the middle). Default timeout {BASH_DEFAULT_TIMEOUT} s, "
                f"at most {BASH_MAX_TIMEOUT} s.",
                _schema({"command": _STR, "timeout": _INT | {"description": "seconds"}}, ["command"]),
                self._run_bash,
            ))
        tools.append(_Tool(
            "read_file", "Read a text file inside the workspace.",
            _schema({"path": _STR | {"description": "relative to the workspace"}}, ["path"]), self._read_file,
        ))
        if enable_write:
            tools.append(_Tool(
                "write_file", "Write a text file inside the workspace (replaces it; creates parent folders).",
                _schema({"path": _STR, "content": _STR}, ["path", "content"]), self._write_file,
            ))
        tools += [
            _Tool(
                "list_dir", "List a folder inside the workspace: names, kinds and sizes.",
                _schema({"path": _STR | {"description": "relative to the workspace; default ."}}, []),
                self._list_dir,
            ),
            _Tool(
                "search_memory",
                "Full-text search over every past conversation (all sessions). Use it before saying you don't know.",
                _schema({"query": _STR, "limit": _INT}, ["query"]), self._search_memory,
            ),
            _Tool("list_skills", "List your saved skills (name, use count, description).", _schema({}, []),
                  self._list_skills),
            _Tool(
                "use_skill", "Load a saved skill's step-by-step instructions by name (counts as a use).",
                _schema({"name": _STR}, ["name"]), self._use_skill,
            ),
            _Tool(
                "create_skill",
                "Save a reusable procedure as a skill: a kebab-case name, a one-line description, "
                "trigger keywords and a markdown body of steps.",
                _schema({"name": _STR, "description": _STR, "triggers": _STR_LIST, "body": _STR},
                        ["name", "description", "body"]),
                self._create_skill,
            ),
        ]
        return tools

    # -- handlers -----------------------------------------------------------------------------

    def _run_bash(self, command: str, timeout: int = BASH_DEFAULT_TIMEOUT,
                  cancel: threading.Event | None = None) -> ToolResult:
        if not command.strip():
            return ToolResult(False, "run_bash: command is empty")
        timeout = max(1, min(int(timeout), BASH_MAX_TIMEOUT))
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                ["bash", "-c", command], cwd=self.workspace, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
            outcome = _wait(proc, timeout, cancel)
            _kill_group(proc.pid)  # no orphans: background children die with the command
            out.seek(0)
            text = _cap(out.read().decode("utf-8", errors="replace"), OUTPUT_CAP)
        if outcome == "timeout":
            return ToolResult(False, f"Timed out after {timeout} s; the command and its children were killed.\n{text}")
        if outcome == "cancelled":
            return ToolResult(False, f"Cancelled by the user; the command was killed.\n{text}")
        code = proc.returncode
        return ToolResult(code == 0, f"exit code {code}\n{text}" if text else f"exit code {code}")

    def _read_file(self, path: str) -> ToolResult:
        real = resolve_in_workspace(self.workspace, path)
        if not real.exists():
            return ToolResult(False, f"read_file: {path!r} does not exist")
        if real.is_dir():
            return ToolResult(False, f"read_file: {path!r} is a folder; use list_dir")
        size = real.stat().st_size
        with open(real, "rb") as fh:
            data = fh.read(READ_CAP)
        if b"\x00" in data[:8192]:
            return ToolResult(False, f"read_file: {path!r} is a binary file ({size} bytes); it cannot be shown as text")
        text = data.decode("utf-8", errors="replace")
        if size > READ_CAP:
            text += f"\n[... file is {size} bytes; only the first {READ_CAP} were read ...]"
        return ToolResult(True, text)

    def _write_file(self, path: str, content: str) -> ToolResult:
        real = resolve_in_workspace(self.workspace, path)
        if real.is_dir():
            return ToolResult(False, f"write_file: {path!r} is a folder")
        real.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink planted at the last component after the check is not followed.
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
        return ToolResult(True, f"wrote {len(content.encode('utf-8'))} bytes to {display_path(self.workspace, real)}")

    def _list_dir(self, path: str = ".") -> ToolResult:
        real = resolve_in_workspace(self.workspace, path)
        if not real.is_dir():
            return ToolResult(False, f"list_dir: {path!r} is not a folder")
        entries = sorted(os.scandir(real), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
        lines = [_describe(entry) for entry in entries[:LIST_CAP]]
        if len(entries) > LIST_CAP:
            lines.append(f"[... {len(entries) - LIST_CAP} more entries not shown ...]")
        header = f"{display_path(self.workspace, real)}: {len(entries)} entries"
        return ToolResult(True, "\n".join([header, *lines]))

    def _search_memory(self, query: str, limit: int = 10) -> ToolResult:
        hits = self.memory.search(query, limit=max(1, min(int(limit), 50)))
        if not hits:
            return ToolResult(True, f"No past messages match {query!r}.")
        lines = []
        for hit in hits:
            when = time.strftime("%Y-%m-%d", time.localtime(hit.created))
            snippet = hit.snippet.replace(HIT_START, "**").replace(HIT_END, "**").replace("\n", " ")
            lines.append(f"- session {hit.session_id}, {hit.role}, {when}: {snippet}")
        return ToolResult(True, "\n".join(lines))

    def _list_skills(self) -> ToolResult:
        skills = self.skills.list()
        if not skills:
            return ToolResult(True, "No skills saved yet.")
        return ToolResult(True, "\n".join(
            f"- {s.name} (v{s.version}, used {s.use_count}x): {s.description}" for s in skills
        ))

    def _use_skill(self, name: str) -> ToolResult:
        skill = self.skills.get(name)
        if skill is None:
            return ToolResult(False, f"use_skill: no skill named {name!r}; call list_skills to see the names")
        skill = self.skills.record_use(skill.name)
        return ToolResult(True, f"# {skill.name} (v{skill.version})\n{skill.description}\n\n{skill.body}")

    def _create_skill(self, name: str, description: str, body: str, triggers: list[str] | None = None) -> ToolResult:
        try:
            skill = self.skills.create(name, description, triggers or [], body)
        except SkillError as exc:
            return ToolResult(False, f"create_skill: {exc}")
        return ToolResult(True, f"saved skill {skill.name} (v{skill.version})")


# -- helpers ----------------------------------------------------------------------------------


def _check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """Validate against our own small schemas: required keys and primitive types."""
    properties = schema["properties"]
    missing = [key for key in schema["required"] if key not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    for key, value in args.items():
        spec = properties.get(key)
        if spec is None:
            return f"unexpected argument {key!r}; allowed: {', '.join(properties) or 'none'}"
        kind = spec["type"]
        if kind == "string" and not isinstance(value, str):
            return f"{key!r} must be a string"
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            if not (isinstance(value, float) and value.is_integer()):
                return f"{key!r} must be an integer"
        if kind == "array" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"{key!r} must be a list of strings"
    return None


def _wait(proc: subprocess.Popen[bytes], timeout: float, cancel: threading.Event | None) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            proc.wait(timeout=0.05)
            return "done"
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            _kill_group(proc.pid)
            proc.wait()
            return "cancelled"
        if time.monotonic() >= deadline:
            _kill_group(proc.pid)
            proc.wait()
            return "timeout"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _cap(text: str, limit: int) -> str:
    """Keep the head and the tail of long output, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"


def _describe(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name} -> (symlink)"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return entry.name
    return f"{entry.name}  {size} B"
