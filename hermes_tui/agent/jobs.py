"""Background jobs: ``run_bash`` commands that keep running after the call returns.

A job is started exactly as a foreground command (``shell.prepare``: bubblewrap, or the reaper;
approved as any ``run_bash``) and read by ``job_output``: what it printed since the last read, kept
in a bounded buffer (head and tail, the middle only counted). ``job_stop`` sends SIGTERM to its
process group and SIGKILL after ``GRACE``. A session owns its ``Jobs`` (on its ``ToolRegistry``);
they end with it (``stop_all``: the end of a ``-p`` run, quitting or leaving a TUI session, a web
session's retirement), and nothing outlives Hermes: bwrap's ``--die-with-parent`` and the reaper's
pipe end them when Hermes dies, kill -9 included.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hermes_tui import fds
from hermes_tui.agent.sandbox import Sandbox
from hermes_tui.agent.shell import OUTPUT_CAP, REAP, BoundedOutput, finish, kill_group, prepare, spawn

log = logging.getLogger(__name__)

GRACE = 3.0  # seconds between SIGTERM and SIGKILL
RECENT = 4_000  # bytes of a job's latest output the user can look at, read or not
MAX_RUNNING = 8  # jobs running at once in one session
_READ = 64 * 1024
_WAKE = 0.5  # seconds the reader sleeps without output before it looks whether the command exited
_POLL = 0.05
_DRAIN = 1.0  # seconds to collect what the dead group left in the pipe

Listener = Callable[[str | None], None]
"""Told when the running jobs change: a one-line notice when one ends, None when one starts."""


class _Unread(BoundedOutput):
    """A job's output not read yet: written by its reader thread, taken by ``job_output``; and its
    last ``RECENT`` bytes, which reading does not take (what ``/jobs N`` shows the user)."""

    def __init__(self, cap: int) -> None:
        super().__init__(cap)
        self.lock = threading.Lock()
        self.recent = bytearray()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            super().add(chunk)
            self.recent += chunk[-RECENT:]
            del self.recent[:-RECENT]

    def take(self, limit: int) -> str:
        """The unread text (head and tail with a note of what was skipped), now read."""
        with self.lock:
            text = self.text(limit)
            self.head, self.tail, self.total = bytearray(), bytearray(), 0
        return text


class Job:
    """One background command: its process, its unread output, and how it ended."""

    def __init__(self, number: int, command: str, cwd: Path, env: dict[str, str], sandbox: Sandbox,
                 home: Path | None, readable: Sequence[Path], on_end: Callable[[Job], None]) -> None:
        self.number = number
        self.command = command
        self.output = _Unread(OUTPUT_CAP)
        self.done = threading.Event()
        self.returncode: int | None = None
        self.stopped = False  # ended by job_stop or the session's end
        self._lock = threading.Lock()
        launch = prepare(command, cwd, sandbox, home, readable)
        self._watch = launch.watch[1] if launch.watch else None
        self._sandboxed = launch.watch is None
        self._proc = spawn(launch.argv, cwd, env, launch.watch)
        assert self._proc.stdout is not None
        self._pipe_fd = self._proc.stdout.fileno()
        os.set_blocking(self._pipe_fd, False)
        self._pipe: int | None = self._pipe_fd  # None once closed
        self._pipe_lock = threading.Lock()  # one reader at a time, so output keeps its order
        self._reader = threading.Thread(target=self._read, args=(cwd, launch.repositories, sandbox, on_end),
                                        name=f"hermes-job-{number}", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def state(self) -> str:
        """"running", or how it ended."""
        if self.running:
            return "running"
        how = "stopped" if self.stopped else "exited"
        return f"{how} (exit code {self.returncode})"

    def terminate(self) -> None:
        """SIGTERM to the command and everything it started, so each may end cleanly: the processes
        below bwrap's namespace init (bwrap would end the namespace at once), or below the reaper.
        Without ``/proc`` to find them, to the whole group."""
        if not self.running:
            return
        found = _below(self._proc.pid, 2 if self._sandboxed else 1)
        for pid in found:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        if not found:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    def kill(self) -> None:
        """The end without grace: bwrap's group killed (its namespace dies with it), or the reaper's
        pipe closed (it kills everything, then exits: killing it first would leave orphans)."""
        if self._sandboxed:
            kill_group(self._proc.pid)
        else:
            self._release_watch()

    def _release_watch(self) -> None:
        with self._lock:
            watch, self._watch = self._watch, None
        if watch is not None:
            os.close(watch)

    def read_new(self) -> str:
        """What it printed since the last read (what is in its pipe now included), head and tail
        with a note of what was skipped."""
        self._pull()
        return self.output.take(OUTPUT_CAP)

    def recent(self) -> str:
        """Its latest output, whether the model read it or not (for the user)."""
        self._pull()
        with self.output.lock:
            return self.output.recent.decode("utf-8", errors="replace")

    def _pull(self) -> bool:
        """Move what is in the pipe into the buffer; False once every writer has closed it."""
        with self._pipe_lock:
            while self._pipe is not None:
                try:
                    chunk = os.read(self._pipe, _READ)
                except BlockingIOError:
                    return True
                if not chunk:
                    return False
                self.output.add(chunk)
            return False

    def _read(self, cwd: Path, before: set[str] | None, sandbox: Sandbox, on_end: Callable[[Job], None]) -> None:
        proc = self._proc
        try:  # bwrap (or the reaper) holds the pipe too: it ends when they exit, not before
            while self._pull() and proc.poll() is None:
                fds.readable(self._pipe_fd, _WAKE)
        finally:
            self._release_watch()  # the reaper ends whatever the command left, then exits
            try:
                proc.wait(timeout=REAP)
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc.pid)
            proc.wait()
            deadline = time.monotonic() + _DRAIN  # what the dead group left (an escaped writer: given up)
            while self._pull() and time.monotonic() < deadline:
                fds.readable(self._pipe_fd, _POLL)
            with self._pipe_lock:
                self._pipe = None
                assert proc.stdout is not None
                proc.stdout.close()
            self.returncode = proc.returncode
            if before is not None:
                note = finish("", self.returncode, cwd, before, sandbox)
                if note:
                    self.output.add(note.encode())
            self.done.set()
            on_end(self)


def _below(root: int, depth: int) -> list[int]:
    """Live processes at least ``depth`` levels below ``root``, by the parent links in ``/proc``."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    level = [root]
    for steps in range(1, 64):
        level = [child for pid in level for child in children.get(pid, [])]
        if not level:
            break
        if steps >= depth:
            found += level
    return found


class Jobs:
    """The background jobs of one session, numbered from 1."""

    def __init__(self, scrub: Callable[[str], str] = str) -> None:
        self._scrub = scrub  # the session's secret scrubber: a notice names the command
        self._jobs: dict[int, Job] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.listener: Listener | None = None
        # bwrap's --die-with-parent fires when the *thread* that started it ends, and a tool runs on
        # its turn's thread: jobs are started from this one, which lives until the session ends.
        self._launcher: ThreadPoolExecutor | None = None

    def start(self, command: str, cwd: Path, environment: Mapping[str, str], *, sandbox: Sandbox,
              home: Path | None, readable: Sequence[Path] = ()) -> Job | str:
        """Start ``command`` in the background: the job, or why not (one line)."""
        with self._lock:
            if self._closed:
                return "the session is ending: no new background job"
            if len(self.running()) >= MAX_RUNNING:
                return f"{MAX_RUNNING} background jobs are running already: stop one with job_stop first"
            number = max(self._jobs, default=0) + 1
            if self._launcher is None:
                self._launcher = ThreadPoolExecutor(1, thread_name_prefix="hermes-jobs")
            job = self._launcher.submit(Job, number, command, cwd, sandbox.environment(environment), sandbox,
                                        home, readable, self._ended).result()
            self._jobs[number] = job
        self._tell(None)
        return job

    def get(self, number: int) -> Job | None:
        return self._jobs.get(number)

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def running(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.running]

    def unknown(self, number: int) -> str:
        """The one line for a job number that does not exist."""
        known = ", ".join(str(n) for n in self._jobs) or "none"
        return f"there is no job {number} in this session (jobs: {known})"

    def stop(self, job: Job, grace: float = GRACE) -> None:
        """SIGTERM, then SIGKILL after ``grace``; returns once it has ended."""
        self._stop([job], grace)

    def stop_all(self, grace: float = GRACE) -> None:
        """The session ends: no new job starts, and every running one is stopped."""
        with self._lock:
            self._closed = True
            launcher, self._launcher = self._launcher, None
        self._stop(self.running(), grace)
        if launcher is not None:
            launcher.shutdown(wait=False)

    def _stop(self, jobs: list[Job], grace: float) -> None:
        for job in jobs:
            job.stopped = job.stopped or job.running
            job.terminate()
        deadline = time.monotonic() + grace
        for job in jobs:
            job.done.wait(max(0.0, deadline - time.monotonic()))
        for job in jobs:
            if job.running:
                job.kill()
        for job in jobs:
            if not job.done.wait(REAP):
                log.warning("background job %d (pid %d) did not end", job.number, job.pid)

    def _ended(self, job: Job) -> None:
        short = job.command if len(job.command) <= 60 else job.command[:57] + "..."
        self._tell(self._scrub(f"Background job {job.number} {job.state()}: {short}"))

    def _tell(self, line: str | None) -> None:
        listener = self.listener
        if listener is not None:
            try:
                listener(line)
            except Exception:  # a surface's display problem never stops a job's bookkeeping
                log.exception("jobs listener failed")
