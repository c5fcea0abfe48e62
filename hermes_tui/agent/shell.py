"""Running one ``run_bash`` command: bounded output, a sandbox, and no survivors.

* Output is read from a pipe into ``BoundedOutput``, which keeps the head and the tail and only counts
  the middle, so memory stays near twice ``OUTPUT_CAP`` whatever the command prints.
* With bubblewrap (``sandbox.py``) the command runs in its own PID namespace: when its first process
  ends, or Hermes kills bwrap (timeout, cancel, end of the command), the kernel ends every process of
  the namespace, ``setsid`` and ``setpgid`` ones too. ``--die-with-parent`` covers Hermes' own death.
* Without it the command runs under ``reaper.py``, a child subreaper that kills every descendant it
  can find when the command ends or when Hermes closes (or, dying, drops) the pipe it watches.
  Neither path needs a ``preexec_fn``, which is unsafe in a threaded program such as the TUI.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes_tui import fds
from hermes_tui.agent import gitguard
from hermes_tui.agent.sandbox import Sandbox

BASH_DEFAULT_TIMEOUT = 120
BASH_MAX_TIMEOUT = 600
OUTPUT_CAP = 20_000  # characters of output handed back to the model
_READ = 16 * 1024
_POLL = 0.05
_DRAIN = 1.0  # seconds to collect what is left in the pipe once the group is dead
REAP = 10.0  # seconds the reaper may take to end everything before Hermes kills it and its group
_REAPER = str(Path(__file__).with_name("reaper.py"))
NO_NETWORK_HINT = "(run_bash has no network in its sandbox: HERMES_SANDBOX_NETWORK=on allows it)"
_NETWORK_FAILURE = re.compile(r"name resolution|resolve host|could not resolve|network is unreachable|getaddrinfo"
                              r"|failed to establish a new connection|no address associated", re.IGNORECASE)


class BoundedOutput:
    """The first and last ``cap`` bytes of a stream, plus how many bytes there were in all."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.cap:
                del self.tail[: len(self.tail) - self.cap]

    def text(self, limit: int) -> str:
        """Decoded output of at most about ``limit`` characters: head and tail, with a note of the cut."""
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        missing = self.total - len(self.head) - len(self.tail)
        if missing == 0 and len(head) + len(tail) <= limit:
            return head + tail
        half = limit // 2
        head_part = head[:half]
        tail_part = (head + tail)[-half:] if missing == 0 else tail[-half:]
        kept = len(head_part.encode("utf-8", errors="replace")) + len(tail_part.encode("utf-8", errors="replace"))
        return f"{head_part}\n[... {max(0, self.total - kept)} bytes cut ...]\n{tail_part}"


@dataclass(frozen=True)
class CommandOutcome:
    """How a command ended, and its output cut to ``OUTPUT_CAP`` (head and tail kept)."""

    status: Literal["done", "timeout", "cancelled"]
    returncode: int | None
    text: str


def run_command(command: str, cwd: Path, timeout: float, cancel: threading.Event,
                environment: Mapping[str, str] | None = None, *, sandbox: Sandbox | None = None,
                home: Path | None = None, readable: Sequence[Path] = ()) -> CommandOutcome:
    """Run ``command`` with bash in ``cwd``; stop at ``timeout`` or when ``cancel`` is set.

    ``environment`` is already free of secrets; only ``sandbox.environment``'s variables of it pass.
    ``home`` (HERMES_HOME) is masked in the sandbox; ``readable`` folders stay readable in it.
    """
    sandbox = sandbox if sandbox is not None else Sandbox()
    env = sandbox.environment(os.environ if environment is None else environment)
    launch = prepare(command, cwd, sandbox, home, readable)
    outcome = _run(launch.argv, cwd, env, timeout, cancel, launch.watch)
    if launch.repositories is None:
        return outcome
    return CommandOutcome(outcome.status, outcome.returncode,
                          finish(outcome.text, outcome.returncode, cwd, launch.repositories, sandbox))


@dataclass(frozen=True)
class Launch:
    """How to start one command: its ``argv``; ``watch``, the reaper's pipe (read end, write end)
    when there is no sandbox; ``repositories``, the workspace's git repositories before it ran
    (``gitguard``) when there is one."""

    argv: list[str]
    watch: tuple[int, int] | None
    repositories: set[str] | None


def prepare(command: str, cwd: Path, sandbox: Sandbox, home: Path | None, readable: Sequence[Path]) -> Launch:
    """The sandboxed (or reaped) argv of ``command``; the one recipe for a foreground command and a job."""
    if sandbox.active:
        before = gitguard.repositories(cwd)
        return Launch(sandbox.wrap(["bash", "-c", command], cwd, home, readable, before), None, before)
    read_end, write_end = os.pipe()  # the reaper's pipe: Hermes holds the only write end
    return Launch([sys.executable, "-I", "-S", _REAPER, str(read_end), "bash", "-c", command],
                  (read_end, write_end), None)


def finish(text: str, returncode: int | None, cwd: Path, before: set[str], sandbox: Sandbox) -> str:
    """The output of a sandboxed command once it ended: what ``gitguard`` removed, a network hint."""
    removed = gitguard.disarm_new(cwd, before)
    if removed:
        text = f"{text}\n{gitguard.notice(removed)}"
    if not sandbox.network and returncode and _NETWORK_FAILURE.search(text):
        return f"{text}\n{NO_NETWORK_HINT}"
    return text


def spawn(argv: list[str], cwd: Path, env: dict[str, str], watch: tuple[int, int] | None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own, output on a pipe; the watch's read end is closed here
    (and its write end too when the start fails)."""
    try:
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(watch[0],) if watch else (),
        )
    except BaseException:
        if watch:
            os.close(watch[1])
        raise
    finally:
        if watch:
            os.close(watch[0])


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, cancel: threading.Event,
         watch: tuple[int, int] | None) -> CommandOutcome:
    """Start ``argv`` in a session of its own and pump its output. ``watch``: the reaper's pipe
    (read end, write end), both closed here."""
    proc = spawn(argv, cwd, env, watch)
    output = BoundedOutput(OUTPUT_CAP)
    assert proc.stdout is not None
    pipe = proc.stdout.fileno()
    try:
        status = _pump(proc, pipe, output, time.monotonic() + timeout, cancel)
    finally:
        if watch:  # the reaper ends the command and all it started, then exits
            os.close(watch[1])
            try:
                proc.wait(timeout=REAP)
            except subprocess.TimeoutExpired:
                pass
        kill_group(proc.pid)  # bwrap: its namespace ends with it; the reaper: a last resort
        proc.wait()
        _drain(pipe, output)
        proc.stdout.close()
    return CommandOutcome(status, proc.returncode if status == "done" else None, output.text(OUTPUT_CAP))


def _pump(proc: subprocess.Popen[bytes], pipe: int, output: BoundedOutput, deadline: float,
          cancel: threading.Event) -> Literal["done", "timeout", "cancelled"]:
    """Read output until the command exits; the reading never holds more than the bounded buffer."""
    open_ = True
    while True:
        if open_:
            chunk = os.read(pipe, _READ) if fds.readable(pipe, _POLL) else None
            if chunk:
                output.add(chunk)
            open_ = chunk != b""
        else:  # every writer closed the pipe; only the exit is left to wait for
            try:
                proc.wait(timeout=_POLL)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is not None:
            return "done"
        if cancel.is_set():
            return "cancelled"
        if time.monotonic() >= deadline:
            return "timeout"


def _drain(pipe: int, output: BoundedOutput) -> None:
    """Collect what the dead group left in the pipe; give up if an escaped process keeps it open."""
    deadline = time.monotonic() + _DRAIN
    while time.monotonic() < deadline:
        if not fds.readable(pipe, _POLL):
            continue
        chunk = os.read(pipe, _READ)
        if not chunk:
            return
        output.add(chunk)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
