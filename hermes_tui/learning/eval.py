"""``hermes-tui eval TASKS``: does the skill library help on the user's own model and tasks?

Each task runs in two arms, every turn a real ``hermes-tui -p PROMPT --yes --json`` child in a fresh
workspace and a fresh, temporary HERMES_HOME:

* ``cold``: no skills, no memory; the learning loop runs as it does for a user (the curator may
  write a skill after a successful multi-step turn).
* ``warm``: only the skills that run's cold turns learned (or, with ``--library current``, a copy of
  the user's own library), no memory, no sessions; the prompt, then each paraphrase in turn.

After each turn the task's ``check`` runs in the workspace: exit 0 is a success. The children get
the user's provider, model, endpoint and key through their environment (never a file in the
temporary home), and the warm helper off, so no model call happens outside the measured turn
(except the curator's own request after a cold turn, which the stream does not report). The user's
HERMES_HOME is never opened; ``--library current`` copies its skills folder and nothing else.

This module parses the task file, runs the arms and renders the tables; ``cli.eval_main`` prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from hermes_tui.clock import Clock
from hermes_tui.config import Config
from hermes_tui.redaction import is_secret_variable

ARMS = ("cold", "warm")
TASK_KEYS = ("id", "prompt", "paraphrases", "files", "check")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CHECK_TIMEOUT = 60.0  # seconds a check may take
TURN_TIMEOUT = 900.0  # seconds one headless turn may take
STOP_GRACE = 5.0  # seconds a child gets to cancel cleanly (SIGTERM) before SIGKILL
_CHILD = ("-c", "from hermes_tui.cli import tui_main; tui_main()")  # the same Python, the same hermes_tui


class TaskFileError(ValueError):
    """The task file cannot be used; ``problems`` holds one readable line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    check: str
    paraphrases: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def prompts(self) -> tuple[str, ...]:
        """What the warm arm asks, in order: the prompt, then each paraphrase."""
        return (self.prompt, *self.paraphrases)


def load_tasks(path: Path) -> list[Task]:
    """The tasks of a TASKS file; ``TaskFileError`` lists every problem, one line each."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError([f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})"]) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = getattr(exc, "problem", None) or "not valid YAML"
        raise TaskFileError([f"{path}: not valid YAML{where}: {what}"]) from exc
    return parse_tasks(data, str(path))


def parse_tasks(data: Any, source: str = "TASKS") -> list[Task]:
    """Validate the loaded YAML: a list of tasks, each with the keys of ``TASK_KEYS`` (docs/eval.md)."""
    if not isinstance(data, list) or not data:
        raise TaskFileError([f"{source}: expected a non-empty list of tasks (- id: ..., prompt: ..., check: ...)"])
    problems: list[str] = []
    tasks: list[Task] = []
    seen: set[str] = set()
    for number, entry in enumerate(data, 1):
        name = f"{source}: task {number}"
        if not isinstance(entry, dict):
            problems.append(f"{name}: expected a mapping with id, prompt and check")
            continue
        if isinstance(entry.get("id"), str):
            name += f" ({entry['id']})"
        mine = [f"{name}: {line}" for line in _task_problems(entry, seen)]
        problems += mine
        if not mine:
            seen.add(entry["id"])
            tasks.append(Task(entry["id"], entry["prompt"], entry["check"], tuple(entry.get("paraphrases") or ()),
                              dict(entry.get("files") or {})))
    if problems:
        raise TaskFileError(problems)
    return tasks


def _task_problems(entry: dict[Any, Any], seen: set[str]) -> Iterator[str]:
    for key in entry:
        if key not in TASK_KEYS:
            yield f"unknown key {key!r} (a task has {', '.join(TASK_KEYS)})"
    task_id = entry.get("id")
    if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
        yield "'id' must be letters, digits, '.', '_' or '-' (at most 64, it names folders)"
    elif task_id in seen:
        yield f"id {task_id!r} is used twice"
    for key in ("prompt", "check"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            yield f"'{key}' must be a non-empty string"
    paraphrases = entry.get("paraphrases")
    if paraphrases is not None and (not isinstance(paraphrases, list)
                                    or not all(isinstance(p, str) and p.strip() for p in paraphrases)):
        yield "'paraphrases' must be a list of non-empty strings"
    files = entry.get("files")
    if files is None:
        return
    if not isinstance(files, dict):
        yield "'files' must map relative paths to their content"
        return
    for relative, content in files.items():
        if not isinstance(relative, str) or not _inside(relative):
            yield f"file {relative!r}: the path must be relative and stay inside the workspace"
        elif not isinstance(content, str):
            yield f"file {relative!r}: the content must be a string (quote it)"


def _inside(relative: str) -> bool:
    path = PurePosixPath(relative)
    return bool(relative.strip()) and not path.is_absolute() and ".." not in path.parts and "\\" not in relative


# -- one turn -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One turn of one arm and its check (``--json`` writes these keys)."""

    task: str
    arm: str
    run: int
    success: bool = False
    model_calls: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    skills_used: list[str] = field(default_factory=list)
    variant: int = 0  # 0: the prompt; N: paraphrase N (warm arm)
    skills_learned: list[str] = field(default_factory=list)
    stopped: str = ""  # the turn's stopped_reason, or why there was none (exit code)
    error: str = ""  # the child's last error line, or the check's failure

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Stream:
    """What a child's JSON event lines say about its turn."""

    model_calls: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    used: dict[str, str] = field(default_factory=dict)  # call id -> skill name, until it finished ok
    skills_used: list[str] = field(default_factory=list)
    skills_learned: list[str] = field(default_factory=list)
    stopped: str = ""
    error: str = ""

    def usage(self, event: dict[str, Any]) -> None:
        self.model_calls += 1
        self.prompt_tokens += int(event.get("prompt_tokens") or 0)
        self.completion_tokens += int(event.get("completion_tokens") or 0)

    def tool_started(self, event: dict[str, Any]) -> None:
        self.tool_calls += 1
        arguments = event.get("arguments") or {}
        if event.get("name") == "use_skill" and isinstance(arguments.get("name"), str):
            self.used[str(event.get("id"))] = arguments["name"]

    def tool_finished(self, event: dict[str, Any]) -> None:
        name = self.used.pop(str(event.get("id")), None)
        if name is not None and event.get("ok") and name not in self.skills_used:
            self.skills_used.append(name)

    def learned(self, event: dict[str, Any]) -> None:
        self.skills_learned.append(str(event.get("name")))

    def finished(self, event: dict[str, Any]) -> None:
        self.stopped = str(event.get("stopped_reason") or "")

    def failed(self, event: dict[str, Any]) -> None:
        self.error = str(event.get("message") or "")

    def read(self, lines: str) -> _Stream:
        for line in lines.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and (handler := _EVENT_HANDLERS.get(event.get("type", ""))):
                handler(self, event)
        return self


# The headless --json events that count (events.py); the others (text, notices, files) do not.
_EVENT_HANDLERS: dict[str, Callable[[_Stream, dict[str, Any]], None]] = {
    "usage": _Stream.usage,
    "tool_call_started": _Stream.tool_started,
    "tool_call_finished": _Stream.tool_finished,
    "skill_learned": _Stream.learned,
    "turn_finished": _Stream.finished,
    "error": _Stream.failed,
}


class Interrupted(Exception):
    """Ctrl-C during a run: the child was stopped; ``Eval.rows`` holds what finished."""


@dataclass(frozen=True)
class _Finished:
    code: int | None  # None: timed out
    stdout: str
    stderr: str


def _run(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None, timeout: float,
         stdin: int | None = subprocess.DEVNULL) -> _Finished:
    """Run a child in its own process group; at the timeout, or on Ctrl-C, stop the whole group.

    Ctrl-C reaches only this process (the child has its own session), which stops the child: first
    SIGTERM (a ``hermes-tui -p`` cancels its turn and kills its shell command), then SIGKILL."""
    process = subprocess.Popen(list(argv), cwd=cwd, env=None if env is None else dict(env), stdin=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = _stop(process)
        return _Finished(None, out, err)
    except KeyboardInterrupt:
        _stop(process)
        raise Interrupted from None
    return _Finished(process.returncode, out, err)


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except (ProcessLookupError, PermissionError):
            break
        try:
            return process.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting politely
            continue
    out, err = process.communicate()
    return out, err


def child_environment(config: Config, home: Path, workspace: Path,
                      base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one turn's child: the user's model settings and key, a temporary home.

    Every HERMES_* variable and every secret of ``base`` is dropped first, so nothing but what is
    set here decides where the child reads and writes; the key is the only secret it gets.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("HERMES_") and not is_secret_variable(k)}
    env.update({
        "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace),
        "HERMES_PROVIDER": config.provider, "HERMES_MODEL": config.model,
        "HERMES_COMPACT_AT": str(config.compact_at),
        "HERMES_SANDBOX": "true" if config.sandbox else "false",
        "HERMES_SANDBOX_NETWORK": "true" if config.sandbox_network else "false",
        "HERMES_HELPER": "off",  # no shared process, no session summary written for a temporary home
    })
    if config.api_base:
        env["HERMES_API_BASE"] = config.api_base
    if config.context_tokens:
        env["HERMES_CONTEXT_TOKENS"] = str(config.context_tokens)
    if config.key_variable and config.api_key:
        env[config.key_variable] = config.api_key
    return env


# -- the arms -----------------------------------------------------------------------------------


@dataclass
class Eval:
    """One evaluation: its tasks, its settings, and the rows as they finish."""

    config: Config
    tasks: Sequence[Task]
    root: Path  # a fresh folder: run-N/{cold,warm}/TASK/... are made inside it
    runs: int = 1
    library: Path | None = None  # a copy of the user's skills (--library current); None: what cold learned
    check_timeout: float = CHECK_TIMEOUT
    turn_timeout: float = TURN_TIMEOUT
    on_row: Callable[[Row], None] = lambda row: None
    clock: Clock = time.monotonic
    python: str = sys.executable
    rows: list[Row] = field(default_factory=list)

    def run(self) -> list[Row]:
        """Every run: the cold arm of every task, then the warm arm with what that run learned.

        Raises ``Interrupted`` on Ctrl-C (``rows`` keeps what finished)."""
        for run in range(1, self.runs + 1):
            folder = self.root / f"run-{run}"
            learned = folder / "learned-skills"
            learned.mkdir(parents=True)
            for task in self.tasks:
                home = self._turn(task, "cold", run, 0, folder / "cold" / task.id, library=None)
                _gather_skills(home / "skills", learned)
            library = self.library if self.library is not None else learned
            for task in self.tasks:
                for variant in range(len(task.prompts)):
                    self._turn(task, "warm", run, variant, folder / "warm" / task.id / str(variant), library)
        return self.rows

    def _turn(self, task: Task, arm: str, run: int, variant: int, folder: Path, library: Path | None) -> Path:
        home, workspace = folder / "home", folder / "workspace"
        home.mkdir(parents=True, mode=0o700)
        workspace.mkdir()
        if library is not None:
            shutil.copytree(library, home / "skills", symlinks=True, ignore=shutil.ignore_patterns(".lock"))
        for relative, content in task.files.items():
            target = workspace / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        argv = [self.python, *_CHILD, f"--prompt={task.prompts[variant]}", "--yes", "--json"]  # even "-x..."
        start = self.clock()
        finished = _run(argv, cwd=workspace, env=child_environment(self.config, home, workspace),
                        timeout=self.turn_timeout)
        seconds = self.clock() - start
        stream = _Stream().read(finished.stdout)
        row = Row(task.id, arm, run, model_calls=stream.model_calls, tool_calls=stream.tool_calls,
                  prompt_tokens=stream.prompt_tokens, completion_tokens=stream.completion_tokens,
                  seconds=round(seconds, 3), skills_used=stream.skills_used, variant=variant,
                  skills_learned=stream.skills_learned, stopped=stream.stopped or _why(finished),
                  error=stream.error or (_last_line(finished.stderr) if finished.code else ""))
        check = _run(["/bin/sh", "-c", task.check], cwd=workspace, env=_check_environment(), timeout=self.check_timeout)
        row.success = check.code == 0
        if not row.success and not row.error:
            row.error = ("check timed out" if check.code is None
                         else f"check exited {check.code}" + (f": {tail}" if (tail := _last_line(
                             check.stderr or check.stdout)) else ""))
        self.rows.append(row)
        self.on_row(row)
        return home


def _why(finished: _Finished) -> str:
    return "timeout" if finished.code is None else f"exit {finished.code}"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _check_environment() -> dict[str, str]:
    """A check needs no key and no Hermes setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and not is_secret_variable(k)}


def _gather_skills(skills_dir: Path, library: Path) -> None:
    """Add what a cold home's skills folder holds (all of it learned: it started empty)."""
    if not skills_dir.is_dir():
        return
    for entry in sorted(skills_dir.iterdir()):
        target = library / entry.name
        if entry.name.startswith(".") or target.exists():  # .lock; a name two tasks learned: the first
            continue
        if entry.is_dir():
            shutil.copytree(entry, target, symlinks=True)
        else:
            shutil.copy2(entry, target)


def copy_library(skills_dir: Path, into: Path) -> Path:
    """A copy of the user's skills folder (read only: nothing is opened for writing there)."""
    target = into / "library-current"
    if skills_dir.is_dir():
        shutil.copytree(skills_dir, target, symlinks=True, ignore=shutil.ignore_patterns(".lock"))
    else:
        target.mkdir(parents=True)
    return target


# -- the tables ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """The rows of one arm (one task's, or all): counts and means per turn."""

    turns: int
    successes: int
    model_calls: float
    tool_calls: float
    prompt_tokens: float
    completion_tokens: float
    seconds: float
    skills_used: tuple[str, ...]

    @classmethod
    def of(cls, rows: Sequence[Row]) -> Summary | None:
        if not rows:
            return None
        n = len(rows)
        used = dict.fromkeys(name for row in rows for name in row.skills_used)
        return cls(n, sum(r.success for r in rows), sum(r.model_calls for r in rows) / n,
                   sum(r.tool_calls for r in rows) / n, sum(r.prompt_tokens for r in rows) / n,
                   sum(r.completion_tokens for r in rows) / n, sum(r.seconds for r in rows) / n, tuple(used))

    @property
    def rate(self) -> float:
        return self.successes / self.turns


_HEAD = ("arm", "turns", "success", "model calls", "tool calls", "prompt tok", "compl. tok", "seconds", "skills used")


def render(rows: Sequence[Row], tasks: Sequence[Task]) -> list[str]:
    """A table per task, then the total; figures per turn are means; Δ is warm − cold."""
    lines: list[str] = []
    for task in tasks:
        mine = [r for r in rows if r.task == task.id]
        if mine:
            lines += [f"task {task.id}", *_table(mine), ""]
    if {r.task for r in rows} and len(tasks) > 1:
        lines += ["all tasks", *_table(rows), ""]
    if rows:
        lines.append("Per turn: success = checks passed / turns; calls, tokens and seconds are means per turn. "
                     "Δ = warm − cold (success in percentage points).")
    return lines


def _table(rows: Sequence[Row]) -> list[str]:
    cold = Summary.of([r for r in rows if r.arm == "cold"])
    warm = Summary.of([r for r in rows if r.arm == "warm"])
    cells = [_HEAD]
    for arm, summary in (("cold", cold), ("warm", warm)):
        if summary is not None:
            cells.append((arm, str(summary.turns), f"{summary.successes}/{summary.turns} ({summary.rate:.0%})",
                          f"{summary.model_calls:.1f}", f"{summary.tool_calls:.1f}", f"{summary.prompt_tokens:,.0f}",
                          f"{summary.completion_tokens:,.0f}", f"{summary.seconds:.1f}",
                          ", ".join(summary.skills_used) or "-"))
    if cold is not None and warm is not None:
        cells.append(("Δ", "", f"{(warm.rate - cold.rate) * 100:+.0f} pp", f"{warm.model_calls - cold.model_calls:+.1f}",
                      f"{warm.tool_calls - cold.tool_calls:+.1f}", f"{warm.prompt_tokens - cold.prompt_tokens:+,.0f}",
                      f"{warm.completion_tokens - cold.completion_tokens:+,.0f}",
                      f"{warm.seconds - cold.seconds:+.1f}", ""))
    widths = [max(len(row[i]) for row in cells) for i in range(len(_HEAD))]
    return ["  " + "  ".join(cell.ljust(w) if i in (0, 8) else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in cells]


def progress_line(row: Row) -> str:
    """One line per finished turn, while the evaluation runs."""
    variant = f" paraphrase {row.variant}" if row.variant else ""
    learned = f", learned {', '.join(row.skills_learned)}" if row.skills_learned else ""
    used = f", used {', '.join(row.skills_used)}" if row.skills_used else ""
    why = f" ({row.error})" if row.error and not row.success else ""
    return (f"run {row.run} {row.arm} {row.task}{variant}: {'ok' if row.success else 'FAILED'}{why}, "
            f"{row.model_calls} model calls, {row.tool_calls} tool calls, {row.seconds:.1f} s{learned}{used}")
