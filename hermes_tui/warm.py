"""The warm helper: one background process per user that keeps LiteLLM loaded between ``-p`` runs.

This module is the caller's side (reaching, starting, stopping the helper) and what both sides
share; the helper process itself is ``warm_helper.py``.

``import litellm`` is most of a one-shot turn (seconds, ~200 MB). A ``hermes-tui -p`` run that finds
this helper asks it to do every model call for it (streams parsed there, token counts, one-shot
completions), so the run itself never imports litellm. A run that finds none starts it at once
and sets up its turn meanwhile: the helper's import runs on the second core. Answering in-process
and starting the helper after the answer (issue 39) was built and measured against it with
bench/headless_turn.py --variant (interleaved rounds, both orders, 2 shared cores), and kept out:
load 2-5, 1.01x a helper-off run against 0.91x at once; load 3.8-8.1, 3.52 s against 3.05 s
(1.20x against 1.04x off; per round at once/after median 0.96x, 0.76-1.32x); only at load 5.4-6.9
was it ahead, 4.97 s against 5.15 s (0.91x against 0.94x), within the noise. It also costs the
run ~240 MB instead of 35 and a second litellm import's CPU per cold start. Once the first call no
longer waited for a warm-up (``Start.warm_up``), the gap held: a turn answered in-process is the
helper-off turn plus a spawn, and off was 2,240 ms against 2,097 ms at once (load 0.9-1.2).

``hermes-tui helper start`` starts it and waits until it is ready (a login service can run that:
``helper_units``). The web
dashboard (``web/serve.build``) attaches to it the same way at start-up (``attach``), sends it
every model call, and holds it while it runs (``WarmHost.hold``): every worker, one helper.

* **Where:** a Unix socket in a private runtime folder (mode 0700, ours, not a symlink):
  ``$XDG_RUNTIME_DIR/hermes``, else ``<tmp>/hermes-<uid>``. The helper answers only its owner: the
  peer's uid (``SO_PEERCRED``) must be ours, and the client must know the random key the helper
  writes to a 0600 file next to the socket (the HMAC handshake of ``multiprocessing.connection``);
  every message is JSON signed with that key (``wire``): nothing on the socket is unpickled.
* **Which:** every request carries this installation's identity (version, place, and the sizes
  and times of its source files); a helper of another version is asked to retire and a new one
  takes its socket, so an upgrade never runs old code.
* **When it ends:** after ``HERMES_HELPER_IDLE`` seconds without a request (default 600),
  on ``hermes-tui helper stop``, or when a newer helper replaced it. ``HERMES_HELPER=off``: none.
* **Secrets:** it starts with no secret in its environment or memory; a request carries only the
  key it needs, dropped with the request (litellm's cached clients too). A summary job keeps its
  key until its summaries are written.
* **While idle** it writes the pending session summaries (``learning/pending.py``) that runs handed
  it, giving way to any new request.

If the helper cannot be reached or started, the run parses in its own process, with one log line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import logging
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

from hermes_tui import __version__, fds
from hermes_tui.config import Config
from hermes_tui.llm import LocalHost, ModelHost
from hermes_tui.llm_host import (
    RECORDS,
    CompleteRequest,
    CountManyRequest,
    CountRequest,
    Request,
    Start,
    StreamRequest,
    WindowRequest,
    answer_count,
    answer_counts,
    answer_text,
    answer_window,
    relay_stream,
    start_line,
)
from hermes_tui.llm_stream import StreamItem
from hermes_tui.wire import Channel, Records, WireError

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0  # importing litellm takes seconds, many on a loaded machine
HOLD_EVERY = 60.0  # at most this many seconds between a holder's hellos (``WarmHost.hold``)
# What the helper's environment keeps of the caller's: no key, password or token reaches it.
_ENV_KEEP = ("PATH", "HOME", "LANG", "TZ", "TMPDIR", "USER", "LOGNAME", "SSL_CERT_FILE", "SSL_CERT_DIR",
             "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
             "http_proxy", "https_proxy", "no_proxy", "all_proxy", "LITELLM_LOCAL_MODEL_COST_MAP")
_ENV_KEEP_PREFIXES = ("LC_", "XDG_")


class Unavailable(Exception):
    """The helper cannot be reached or started."""


# -- what a run asks the helper besides model calls (``llm_host.Request``), and its replies ------


@dataclasses.dataclass(frozen=True)
class Hello:
    """Which helper runs (its reply says, as to every request)."""


@dataclasses.dataclass(frozen=True)
class Stop:
    """Retire: ``hermes-tui helper stop``, or a run of another version taking over."""


@dataclasses.dataclass(frozen=True)
class Summaries:
    """Write the pending summaries of the store at ``db_path`` while idle."""

    config: Config
    db_path: str


@dataclasses.dataclass(frozen=True)
class Welcome:
    """The helper serves the request."""

    pid: int


@dataclasses.dataclass(frozen=True)
class Stale:
    """The helper is of another installation (``identity``) and serves nothing but ``Stop``."""

    identity: str
    pid: int


@dataclasses.dataclass(frozen=True)
class Identity:
    """A run's first message: this installation's ``identity()``; its request follows."""

    value: str


Control = Hello | Stop | Summaries
WARM_RECORDS: Records = {**RECORDS, "identity": Identity, "hello": Hello, "stop": Stop, "summaries": Summaries,
                         "welcome": Welcome, "stale": Stale}
"""What crosses the warm helper's socket: the model helpers' records and the helper's own."""


def folder() -> Path:
    """The helper's runtime folder (not created): ``$XDG_RUNTIME_DIR/hermes`` as platformdirs'
    ``user_runtime_dir`` has it, else ``<tmp>/hermes-<uid>`` (not platformdirs' fallback, which
    it picks silently whenever it deems the runtime folder unsafe)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "hermes"
    return Path(tempfile.gettempdir()) / f"hermes-{os.geteuid()}"


def private_folder() -> Path:
    """The runtime folder, created 0700; ``Unavailable`` when it exists but is not private to us
    (another user could have made it first, to listen in)."""
    path = folder()
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise Unavailable(f"cannot create {path}: {exc.strerror}") from exc
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise Unavailable(f"{path} is not a private folder of this user (owner {info.st_uid}, mode "
                          f"{stat.S_IMODE(info.st_mode):o}); remove it")
    return path


@functools.cache
def identity() -> str:
    """This installation: a helper answers only runs of the very same code."""
    return fingerprint(Path(__file__).resolve().parent)


def fingerprint(package: Path) -> str:
    """The version, the venv, the place of ``package`` and the size and time of each of its
    source files: any edit or upgrade gives another."""
    digest = hashlib.sha256(f"{__version__}\0{sys.prefix}\0{package}".encode())
    for name, info in sorted(_sources(str(package), "")):
        digest.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return f"{__version__}+{digest.hexdigest()[:16]}"


def _sources(folder: str, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
    """(path under the package, stat) of each ``.py`` file below ``folder``: ``os.scandir``, as
    every run computes this before its first request (``identity`` took 3.7 ms with
    ``Path.rglob``, 1.3 ms with this). A folder it may not read is passed over, as rglob did."""
    try:
        entries = os.scandir(folder)
    except PermissionError:
        return
    with entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from _sources(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".py"):
                yield f"{prefix}{entry.name}", entry.stat()


def without_secrets(config: Config, *, keep_key: bool = False) -> Config:
    """``config`` with every secret dropped, but for the provider's key when ``keep_key``."""
    keys: dict[str, str] = {}
    variable = config.key_variable
    if keep_key and variable and config.api_key:
        keys[variable] = config.api_key
    return dataclasses.replace(config, api_keys=keys, flask_secret_key=None, web_password=None, secret_values={})


# -- the caller's side --------------------------------------------------------------------------


class WarmHost:
    """The ``ModelHost`` of a surface: every model call goes to the helper; only when it is
    unavailable are they served by ``fallback`` (default: this process, ``LocalHost``)."""

    def __init__(self, spawn_config: Config | None = None, *, asks_at_once: bool = False,
                 fallback: ModelHost | None = None) -> None:
        self._spawn_config = spawn_config
        self._asks_at_once = asks_at_once  # a helper it starts skips its warm-up call (``Start``)
        self._lock = threading.Lock()
        self._reached = False
        self._fallback = False
        self._local: ModelHost = fallback if fallback is not None else LocalHost()
        self.pid: int | None = None

    # -- reaching the helper

    def ensure(self) -> bool:
        """Reach the helper, starting it (or replacing another version's) when needed. False:
        this run parses in its own process from now on (said once in the log)."""
        with self._lock:
            if self._fallback:
                return False
            if self._reached:
                return True
            try:
                self._reach()
            except Unavailable as exc:
                log.warning("parsing in this process: the warm helper is unavailable (%s)", exc)
                self._fallback = True
                return False
            self._reached = True
            return True

    def _reach(self) -> None:
        self.pid, _seconds = start(self._spawn_config, warm_up=not self._asks_at_once)

    def _open(self, request: Control | Request, *, restart: bool = True) -> Channel:
        """A connection on which ``request`` was accepted; reaches (or restarts) the helper once."""
        for attempt in (1, 2):
            try:
                connection, reply = _open(private_folder(), request)
            except Unavailable:
                if attempt == 2 or not restart:
                    raise
                with self._lock:
                    self._reached = False
                if not self.ensure():
                    raise
                continue
            if isinstance(reply, Welcome):
                return connection
            connection.close()
            raise Unavailable(f"a helper of another version ({reply.identity}) took over")
        raise AssertionError("unreachable")

    def _request(self, request: Request) -> Channel | None:
        """A connection on which the helper accepted ``request``; None: serve it here."""
        if self.ensure():
            try:
                return self._open(dataclasses.replace(request, config=without_secrets(request.config,
                                                                                      keep_key=True)))
            except Unavailable as exc:
                self._give_up(exc)
        return None

    # -- ModelHost

    def stream(self, config: Config, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               cancel: threading.Event) -> Iterator[StreamItem]:
        connection = self._request(StreamRequest(config, messages, tools))
        if connection is None:
            yield from self._local.stream(config, messages, tools, cancel)
            return
        yield from relay_stream(connection, cancel)

    def complete(self, config: Config, messages: list[dict[str, Any]], *, timeout: float,
                 cancel: threading.Event) -> str:
        connection = self._request(CompleteRequest(config, messages, timeout))
        if connection is None:
            return self._local.complete(config, messages, timeout=timeout, cancel=cancel)
        return answer_text(connection, cancel, config)

    def count_tokens(self, config: Config, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None) -> int:
        connection = self._request(CountRequest(config, messages, tools))
        if connection is None:
            return self._local.count_tokens(config, messages, tools)
        return answer_count(connection, config)

    def count_many(self, config: Config, message_lists: list[list[dict[str, Any]]]) -> list[int]:
        connection = self._request(CountManyRequest(config, message_lists))
        if connection is None:
            return self._local.count_many(config, message_lists)
        return answer_counts(connection, config, len(message_lists))

    def max_input_tokens(self, config: Config) -> int | None:
        connection = self._request(WindowRequest(config))
        if connection is None:
            return self._local.max_input_tokens(config)
        return answer_window(connection, config)

    def _give_up(self, exc: Exception) -> None:
        log.warning("parsing in this process: the warm helper is unavailable (%s)", exc)
        with self._lock:
            self._fallback = True

    def hold(self, stop: threading.Event) -> threading.Thread:
        """Keep the helper running until ``stop`` (a surface that lives for days: the web): a
        hello every ``hold_every()`` seconds counts as a request, and a helper that went away
        (killed, out of memory) is started again, so no turn waits for one. A host that had
        given up on it (parsing in its own process) sends to it again. A helper of another
        version is left alone (after an upgrade, the new code's runs use it; this host's next
        request replaces it): holding it back would swap the two every minute. When it cannot be
        started, the tries thin out (``hold_backoff``) and the log says so once, not every minute:
        a surface open all day would otherwise pay a failing start (a litellm import) each time."""
        every = hold_every(self._spawn_config)

        def run() -> None:
            wait = every
            while not stop.wait(wait):
                try:
                    with contextlib.suppress(Unavailable):
                        if isinstance(_ask(private_folder(), Hello()), Stale):
                            wait = every
                            continue
                    pid, _seconds = start(self._spawn_config)
                except Unavailable as exc:
                    if wait == every:
                        log.warning("the warm helper could not be kept running (%s); trying again less often", exc)
                    wait = hold_backoff(wait)
                    continue
                wait = every
                with self._lock:
                    if self._fallback:
                        log.info("model calls go to the warm helper again (pid %s)", pid)
                    self.pid, self._reached, self._fallback = pid, True, False

        thread = threading.Thread(target=run, name="hermes-warm-hold", daemon=True)
        thread.start()
        return thread

    def hand_over(self, config: Config, db_path: Path) -> bool:
        """Ask the helper to write the pending summaries of ``db_path`` while idle."""
        if self._fallback or not self._reached:
            return False
        try:
            connection = self._open(Summaries(without_secrets(config, keep_key=True), str(db_path)),
                                    restart=False)  # a helper that died mid-run is not worth a wait
        except Unavailable as exc:
            log.info("pending summaries not handed to the helper: %s", exc)
            return False
        connection.close()
        return True


def attach(config: Config, *, asks_at_once: bool = False) -> WarmHost | None:
    """The host of a surface's model calls (``-p``, ``acp``, the web): the warm helper, reached (or
    started) in the background now, so the first call finds it ready; None when
    ``HERMES_HELPER=off``. When it is off or cannot be reached, litellm is imported in this
    process meanwhile instead, for the calls then made here. The log says which.
    ``asks_at_once``: the surface's first call follows now (``-p``), so nothing warms up for it
    (``Start.warm_up``): that call would only wait for the warm-up's."""
    started = time.monotonic()
    host = WarmHost(config, asks_at_once=asks_at_once) if config.helper else None

    def reach() -> None:
        if host is not None and host.ensure():
            log.info("model calls go to the warm helper (pid %s), reached in %.1f s", host.pid,
                     time.monotonic() - started)
            return
        from hermes_tui import llm

        llm.warm(None if asks_at_once else config).join()
        log.info("LLM layer warmed in %.1f s", time.monotonic() - started)

    threading.Thread(target=reach, name="hermes-warm-reach", daemon=True).start()
    return host


def app_host(config: Config, stop: threading.Event, on_ready: Callable[[], None]) -> ModelHost:
    """The host of an app that must never import litellm in its own process (the full-screen
    app: its thread echoes keys). With the helper on, the per-user warm helper, reached or
    started in the background now and held until ``stop``: an app started while one runs (for
    ``-p`` runs, the web, an editor) pays no litellm import at all. With ``HERMES_HELPER=off``,
    or no helper to be had, the app's own stream helper (``llm_host``), which ends with it.
    ``on_ready`` runs once either can answer."""
    from hermes_tui import llm_host

    own = llm_host.shared()
    host = WarmHost(config, fallback=own) if config.helper else None

    def reach() -> None:
        if host is not None and host.ensure():
            log.info("the app's model calls go to the warm helper (pid %s)", host.pid)
        else:
            own.start(config)  # with the config: the helper warms litellm up for its model
            own.wait_ready()
        on_ready()

    threading.Thread(target=reach, name="hermes-app-host", daemon=True).start()
    if host is None:
        return own
    host.hold(stop)
    return host


HOLD_BACKOFF_MAX = 900.0  # seconds between a holder's tries while the helper cannot be started


def hold_backoff(wait: float) -> float:
    """A holder's next wait after a failed start: twice this one, up to ``HOLD_BACKOFF_MAX``."""
    return max(wait, min(wait * 2, HOLD_BACKOFF_MAX))


def hold_every(config: Config | None) -> float:
    """Seconds between a holder's hellos: well inside the helper's idle time (``HERMES_HELPER_IDLE``)."""
    idle = config.helper_idle if config is not None else Config.helper_idle
    return max(0.5, min(HOLD_EVERY, idle / 3))


def start(config: Config | None, *, warm_up: bool = True) -> tuple[int, float | None]:
    """The running helper's pid, and the seconds it took to start and get ready when this call
    started it (None: it ran already). ``warm_up``: see ``Start``. Raises ``Unavailable``."""
    where = private_folder()
    with contextlib.suppress(Unavailable):
        return _running_pid(where), None
    with _locked(where / "lock"):  # one starter at a time; the others find its helper
        with contextlib.suppress(Unavailable):
            return _running_pid(where), None
        seconds = _spawn(where, config, warm_up)
        pid = _running_pid(where)
    log.info("started the warm helper (pid %s, ready in %.1f s)", pid, seconds)
    return pid, seconds


def _running_pid(where: Path) -> int:
    """The running helper's pid; a helper of another version is asked to retire first."""
    reply = _ask(where, Hello())
    if isinstance(reply, Stale):
        log.info("retiring the warm helper of another version (%s, pid %s)", reply.identity, reply.pid)
        _ask(where, Stop())
        raise Unavailable("another version's helper was running")
    return reply.pid


def _open(where: Path, request: Control | Request) -> tuple[Channel, Welcome | Stale]:
    """Connect, send this installation's identity and ``request``, read the helper's answer."""
    try:
        key = (where / "key").read_bytes()
        connection = Channel(Client(str(where / "socket"), family="AF_UNIX", authkey=key), key, WARM_RECORDS)
    except (OSError, EOFError, AuthenticationError) as exc:
        raise Unavailable(f"no helper answers at {where / 'socket'} ({type(exc).__name__})") from exc
    try:
        connection.send(Identity(identity()))
        connection.send(request)
        reply = connection.recv()
    except (OSError, EOFError, WireError) as exc:
        connection.close()
        raise Unavailable(f"the helper hung up ({type(exc).__name__})") from exc
    if not isinstance(reply, (Welcome, Stale)):
        connection.close()
        raise Unavailable(f"the helper answered {type(reply).__name__}")
    return connection, reply


def _ask(where: Path, request: Control) -> Welcome | Stale:
    connection, reply = _open(where, request)
    connection.close()
    return reply


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _helper_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items()
            if name in _ENV_KEEP or name.startswith(_ENV_KEEP_PREFIXES)}


def _spawn(where: Path, config: Config | None, warm_up: bool) -> float:
    """Start a helper in the background and wait until it is ready; seconds it took."""
    started = time.monotonic()
    # Not ``-m``: the interpreter would look for modules in the current folder first (the user's
    # workspace). It runs in its private folder and finds this package where the caller found it.
    root = str(Path(__file__).resolve().parent.parent)
    code = f"import sys; sys.path.append({root!r}); from hermes_tui.warm_helper import main; main()"
    logging_on = config is not None  # to the same log file as the runs it serves
    warm_config = without_secrets(config) if config is not None else None
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", code, str(where)], cwd=where, env=_helper_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,  # not in the terminal's process group: ctrl+c is the run's
        )
    except OSError as exc:
        raise Unavailable(f"cannot start it: {exc.strerror}") from exc
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(start_line(Start(warm_config, logging_on, warm_up=warm_up)))
        process.stdin.close()
        line = process.stdout.readline() if fds.readable(process.stdout, START_TIMEOUT) else b""
    except OSError as exc:
        line = b""
        log.warning("the warm helper failed to start: %r", exc)
    finally:
        process.stdout.close()
    if line.strip() != b"ready":
        process.kill()
        raise Unavailable(f"it did not get ready (exit code {process.poll()})")
    return time.monotonic() - started


def stop() -> int | None:
    """Stop the running helper (``hermes-tui helper stop``); its pid, or None when none runs."""
    try:
        where = private_folder()
        reply = _ask(where, Stop())
    except Unavailable:
        return None
    pid = reply.pid
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid


def status() -> tuple[int, str] | None:
    """(pid, identity) of the running helper, or None."""
    try:
        reply = _ask(private_folder(), Hello())
    except Unavailable:
        return None
    return (reply.pid, identity()) if isinstance(reply, Welcome) else (reply.pid, reply.identity)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as info:
            return info.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
