"""Running one ``run_bash`` command: bounded output, a whole process group, and no survivors.

* Output is read from a pipe into ``BoundedOutput``, which keeps the head and the tail and only counts
  the middle, so memory stays near twice ``OUTPUT_CAP`` whatever the command prints.
* The command runs in its own session (process group); timeout, cancel and the end of the command
  kill the whole group, so background children (``sleep 60 &``) die with it.
* If Hermes itself dies (even by SIGKILL), a watchdog inside the group notices: it blocks reading a
  pipe whose only writer is Hermes, and kills the group when that pipe closes. This needs no
  ``preexec_fn``, which is unsafe in a threaded program such as the TUI or the web server.
  A process that leaves the group on purpose (``setsid``) is not caught: the shell is not a sandbox.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

BASH_DEFAULT_TIMEOUT = 120
BASH_MAX_TIMEOUT = 600
OUTPUT_CAP = 20_000  # characters of output handed back to the model
_READ = 16 * 1024
_POLL = 0.05
_DRAIN = 1.0  # seconds to collect what is left in the pipe once the group is dead

# $1 is the user's command; {fd} is the read end of the pipe whose writer is Hermes. The watchdog
# subshell stays in the group; the shell then closes its copy and becomes the user's command.
_WRAPPER = '{{ read -r -u {fd} _; kill -KILL 0; }} & exec {fd}<&-; exec bash -c "$1"'


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
    status: Literal["done", "timeout", "cancelled"]
    returncode: int | None
    text: str


def run_command(command: str, cwd: Path, timeout: float, cancel: threading.Event,
                environment: dict[str, str] | None = None) -> CommandOutcome:
    """Run ``command`` with bash in ``cwd``; stop at ``timeout`` or when ``cancel`` is set."""
    read_end, write_end = os.pipe()  # the watchdog's pipe: Hermes holds the only write end
    try:
        proc = subprocess.Popen(
            ["bash", "-c", _WRAPPER.format(fd=read_end), "hermes-bash", command],
            cwd=cwd, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(read_end,),
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    output = BoundedOutput(OUTPUT_CAP)
    assert proc.stdout is not None
    pipe = proc.stdout.fileno()
    try:
        status = _pump(proc, pipe, output, time.monotonic() + timeout, cancel)
    finally:
        os.close(write_end)  # the watchdog kills whatever is left of the group
        kill_group(proc.pid)
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
            ready, _, _ = select.select([pipe], [], [], _POLL)
            chunk = os.read(pipe, _READ) if ready else None
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
        ready, _, _ = select.select([pipe], [], [], _POLL)
        if not ready:
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
