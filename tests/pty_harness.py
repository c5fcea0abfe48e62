"""Hermes in a real pseudo-terminal: raw bytes in, the screen as a terminal emulator draws it out."""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer

SKILL = """---
name: canary-skill
description: "canary skill \\e]52;c;SEKRET-SKILL\\a \\e]0;PWNED-SKILL\\a"
---
Body \x1b]52;c;SEKRET-SKILL\x07 text.
"""


SIZE = (32, 110)  # rows, columns


class Terminal:
    """A child process on a pty; everything it writes is collected."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int] = SIZE) -> None:
        import fcntl
        import termios

        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
        self.master = master
        self.output = bytearray()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # new output, or the reader is done
        self._ended = False
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                        start_new_session=True, close_fds=True)
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            self._read_until_done()
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _read_until_done(self) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                if self.process.poll() is not None:
                    return
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._changed:
                self.output += data
                self._changed.notify_all()

    def seen(self) -> bytes:
        with self._lock:
            return bytes(self.output)

    def wait_for(self, condition: Callable[[bytes], bool], timeout: float = 45.0) -> None:
        """Wait for output that satisfies ``condition``, woken by each read (no polling)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(bytes(self.output)):
                left = deadline - time.monotonic()
                if left <= 0 or self._ended:
                    tail = bytes(self.output[-2000:])
                    raise AssertionError(f"timed out; exit={self.process.poll()}; last output: {tail!r}")
                self._changed.wait(left)

    def type(self, data: str) -> None:
        os.write(self.master, data.encode())

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._reader.join(5)
        os.close(self.master)


@pytest.fixture
def terminal_env(hermes_home: Path, workspace: Path) -> Iterator[tuple[FakeLLMServer, dict[str, str]]]:
    skill = hermes_home / "skills" / "canary-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)  # YAML turns \e and \a into ESC and BEL
    with FakeLLMServer() as server:
        env = {**os.environ, **wire_env(server, "openai"), "TERM": "xterm-256color", "COLORTERM": "truecolor",
               "HERMES_APPROVAL": "always", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        env.pop("TEXTUAL", None)
        yield server, env
