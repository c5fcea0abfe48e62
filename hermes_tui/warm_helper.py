"""The warm helper process (``warm.py`` starts it and holds what both sides share): it accepts
connections on the private socket, checks the peer's uid and key, serves the model requests with
``llm_host``, and writes handed-over pending summaries while idle, until idle, stopped or replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import struct
import sys
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path

from hermes_tui.clock import Clock
from hermes_tui.config import Config
from hermes_tui.llm_host import SERVED, read_start, serve_request
from hermes_tui.warm import (
    WARM_RECORDS,
    Identity,
    Stale,
    Stop,
    Summaries,
    Welcome,
    identity,
)
from hermes_tui.wire import Channel, WireError

log = logging.getLogger(__name__)

QUIET = 2.0  # seconds without a request before the helper writes pending summaries
TICK = 0.25  # how often the helper looks at its clock and its socket
AUTH_TIMEOUT = 10  # seconds a client may take over the handshake


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, as the kernel saw it connect."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))
    return int(uid)


class Helper:
    """The helper's server: accepts, checks and serves connections until idle, stopped or replaced.

    ``clock`` and ``owner`` are parameters so tests can drive the idle exit and the uid check.
    """

    def __init__(self, where: Path, *, idle: float = Config.helper_idle, quiet: float = QUIET,
                 clock: Clock = time.monotonic, owner: int | None = None,
                 ident: str | None = None) -> None:
        self.where = where
        self.idle = idle
        self.quiet = quiet
        self.clock = clock
        self.owner = os.geteuid() if owner is None else owner
        self.ident = ident or identity()
        self.key = secrets.token_bytes(32)
        self.stopped = threading.Event()  # serve() is over: socket and key are gone
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._writing = False
        self._last = clock()
        self._jobs: dict[str, Config] = {}
        self._sock: socket.socket | None = None
        self._inode = 0

    # -- life

    def bind(self) -> None:
        """Write the key file, then listen on the socket (both replaced atomically)."""
        pid = os.getpid()
        key_tmp = self.where / f"key.{pid}"
        fd = os.open(key_tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self.key)
        os.replace(key_tmp, self.where / "key")
        sock_tmp = self.where / f"socket.{pid}"
        sock_tmp.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(sock_tmp))
        sock.listen(16)
        os.replace(sock_tmp, self.where / "socket")
        self._inode = os.stat(self.where / "socket").st_ino
        sock.settimeout(TICK)
        self._sock = sock

    def serve(self) -> None:
        """Until idle for ``idle`` seconds, stopped, or replaced by another helper."""
        assert self._sock is not None
        with self._lock:  # idle from now: getting ready (importing litellm) may take longer than ``idle``
            self._last = self.clock()
        threading.Thread(target=self._write_summaries, name="warm-summaries", daemon=True).start()
        try:
            while not self._stopping.is_set() and not self._expired() and self._owns_socket():
                try:
                    sock, _ = self._sock.accept()
                except TimeoutError:
                    continue
                with self._lock:
                    self._active += 1
                    self._last = self.clock()
                threading.Thread(target=self._handle, args=(sock,), name="warm-request", daemon=True).start()
        finally:
            self._shutdown()

    def stop(self) -> None:
        self._stopping.set()

    def _expired(self) -> bool:
        with self._lock:
            return self._active == 0 and not self._writing and self.clock() - self._last >= self.idle

    def _owns_socket(self) -> bool:
        try:
            return os.stat(self.where / "socket").st_ino == self._inode
        except FileNotFoundError:
            return False

    def _shutdown(self) -> None:
        self._stopping.set()
        if self._sock is not None:
            self._sock.close()
        if self._owns_socket():
            (self.where / "socket").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            if (self.where / "key").read_bytes() == self.key:
                (self.where / "key").unlink()
        # Streams still running finish on their own threads (main() waits for them).
        self.stopped.set()
        log.info("warm helper stopped")

    def busy(self) -> bool:
        """A request runs, or one ended less than ``quiet`` seconds ago."""
        with self._lock:
            return self._active > 0 or self.clock() - self._last < self.quiet

    def active(self) -> int:
        with self._lock:
            return self._active

    # -- one connection

    def _handle(self, sock: socket.socket) -> None:
        try:
            uid = peer_uid(sock)
            if uid != self.owner:
                log.warning("warm helper: refused a connection from uid %s", uid)
                sock.close()
                return
            sock.settimeout(None)
            timeout = struct.pack("ll", AUTH_TIMEOUT, 0)  # a client stuck in the handshake gives up
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
            raw = Connection(sock.detach())
            connection = Channel(raw, self.key, WARM_RECORDS)
            try:
                deliver_challenge(raw, self.key)
                answer_challenge(raw, self.key)
                ident = connection.recv()
                request = connection.recv()
                if not isinstance(ident, Identity):
                    raise WireError(f"a connection opened with {type(ident).__name__}")
            except (OSError, EOFError, AuthenticationError, WireError):  # WireError: unsigned, or not a record
                log.info("warm helper: refused a connection", exc_info=True)
                connection.close()
                return
            _clear_timeout(connection)
            self._answer(connection, ident, request)
        except Exception:  # one bad connection never ends the helper
            log.exception("warm helper: a request failed")
        finally:
            with self._lock:
                last = self._active == 1
            if last:  # no request left that could be using a cached client
                from hermes_tui import llm

                llm.forget_clients()
            with self._lock:
                self._active -= 1
                self._last = self.clock()

    def _answer(self, connection: Channel, ident: Identity, request: object) -> None:
        if ident.value != self.ident and not isinstance(request, Stop):
            connection.send(Stale(self.ident, os.getpid()))
            connection.close()
            return
        connection.send(Welcome(os.getpid()))
        if type(request) in SERVED:
            serve_request(connection, request)
            return
        connection.close()
        if isinstance(request, Stop):
            self.stop()
        elif isinstance(request, Summaries):
            with self._lock:
                self._jobs[request.db_path] = request.config

    # -- pending summaries, while idle

    def _write_summaries(self) -> None:
        """Every tick, a handed job once the helper is quiet. (It waited on a "work" event that
        stayed set while the job waited for quiet: a spin that took a core and the GIL from the
        runs it served, the next ``-p`` run twice as slow: bench/headless_turn.py.)"""
        while not self._stopping.wait(TICK):
            with self._lock:
                if not self._jobs or self._active or self.clock() - self._last < self.quiet:
                    continue
                path, config = self._jobs.popitem()
                self._writing = True
            try:
                self._summarize(Path(path), config)
            except Exception:  # the sessions stay pending for the next start
                log.warning("warm helper: pending summaries of %s failed", path, exc_info=True)
            finally:
                del config  # the job's key goes with it
                with self._lock:
                    self._writing = False

    def _summarize(self, path: Path, config: Config) -> None:
        from hermes_tui.learning.pending import Writer
        from hermes_tui.llm import LLMClient
        from hermes_tui.memory.store import MemoryStore

        store = MemoryStore(path)
        try:
            writer = Writer(store, LLMClient(config), busy=self.busy).start()
            while not writer.done.wait(TICK):
                if self._stopping.is_set():
                    writer.stop(wait=5.0)
                    break
            log.info("warm helper: wrote %d pending summaries of %s", writer.written, path)
        finally:
            store.close()


def _clear_timeout(connection: Channel) -> None:
    """Streams wait on their connection for as long as they run: no receive timeout after the handshake."""
    sock = socket.socket(fileno=os.dup(connection.fileno()))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))
    finally:
        sock.close()


def main() -> None:
    """The helper process (started by ``_spawn``): ``sys.argv[1]`` is its folder."""
    from hermes_tui import llm

    where = Path(sys.argv[1])
    start = read_start()
    warm_config = start.config
    if start.logging_on and warm_config is not None:
        from hermes_tui.logs import setup_logging

        setup_logging(warm_config)
    helper = Helper(where, idle=warm_config.helper_idle if warm_config is not None else Config.helper_idle)
    helper.bind()
    llm.warm(warm_config if start.warm_up else None).join()
    os.write(1, b"ready\n")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    log.info("warm helper ready (pid %s, %s, idle exit after %.0f s)", os.getpid(), where, helper.idle)
    helper.serve()
    deadline = time.monotonic() + 60
    while helper.active() and time.monotonic() < deadline:  # streams of runs still going
        time.sleep(0.1)
    logging.shutdown()
    os._exit(0)
