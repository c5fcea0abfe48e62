"""Model streams parsed in a helper process, for surfaces whose own thread must stay quick.

LiteLLM spends about a millisecond of Python per streamed chunk. At 1,000 tokens a second a
worker thread parsing them holds the GIL nine tenths of the time, and the app's thread waits for
it between every step of a screen update: key echo doubled (bench/stream_render.py). Here the
parsing runs in one helper process per Hermes process (``shared()``), and only the small parsed
events (``TextDelta``, ``Notice``, ``StreamResult``, ``LLMError``) cross to the caller.

The helper runs ``llm_host.main()`` in a new interpreter. It listens on a Unix socket in a private
temporary folder, answers only clients that know a random key (given on its stdin, never on its
command line), serves each stream on a connection of its own, and exits when its stdin closes,
that is when the process that started it ends, kill -9 included. If it cannot start, or dies,
the caller gets one readable error and the next stream starts a new helper; if none can start
at all (say a temporary folder whose socket path is too long), streams are parsed in the caller.

What a helper serves (this one, and the per-user warm helper of ``warm.py``) is one request record
per ``llm.ModelHost`` method, each with its arguments by name (``CompleteRequest.timeout``...),
answered from one table (``SERVED``) by a ``LocalHost`` in the helper's process.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

from hermes_tui import wire
from hermes_tui.config import Config
from hermes_tui.events import Notice, TextDelta
from hermes_tui.llm import LocalHost, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.llm_stream import StreamItem
from hermes_tui.wire import Cancel, Channel, Failure, Records, WireError

log = logging.getLogger(__name__)

POLL = 0.05  # seconds between checks of the caller's cancel event while waiting for the helper
CANCEL_GRACE = 2.0  # after a cancel, how long the helper may take to end the stream itself
START_TIMEOUT = 120.0  # importing litellm takes seconds, many on a loaded machine


# -- the requests a helper serves: one record per ``ModelHost`` method --------------------------


@dataclass(frozen=True)
class StreamRequest:
    """``ModelHost.stream``: answered by stream items, then a ``StreamResult`` or an ``LLMError``."""

    config: Config
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


@dataclass(frozen=True)
class CompleteRequest:
    """``ModelHost.complete`` (the caller's cancel reaches it as for a stream)."""

    config: Config
    messages: list[dict[str, Any]]
    timeout: float


@dataclass(frozen=True)
class CountRequest:
    """``ModelHost.count_tokens``."""

    config: Config
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


@dataclass(frozen=True)
class CountManyRequest:
    """``ModelHost.count_many``: one answer, a count per list."""

    config: Config
    message_lists: list[list[dict[str, Any]]]


@dataclass(frozen=True)
class WindowRequest:
    """``ModelHost.max_input_tokens``."""

    config: Config


Request = StreamRequest | CompleteRequest | CountRequest | CountManyRequest | WindowRequest


@dataclass(frozen=True)
class Answer:
    """The one reply to a request other than a stream."""

    value: str | int | list[int] | None


@dataclass(frozen=True)
class Start:
    """What a helper process reads on its stdin: its key (hex; the warm helper makes its own) and
    the configuration it warms up for."""

    config: Config | None
    logging_on: bool
    key: str = ""
    warm_up: bool = True
    """Make one offline call for ``config``'s model before saying ready. Not when the starter's own
    request follows at once (a cold ``-p`` run): that request is the warm-up, ~0.1 s sooner."""


RECORDS: Records = {
    "stream": StreamRequest, "complete": CompleteRequest, "count": CountRequest,
    "count_many": CountManyRequest, "window": WindowRequest,
    "text": TextDelta, "notice": Notice, "result": StreamResult, "answer": Answer, "error": Failure,
    "cancel": Cancel,
}
"""What crosses a model helper's connection (``wire``): the requests, their items, a cancel."""
STARTUP: Records = {"start": Start}


def start_line(start: Start) -> bytes:
    """The helper's first stdin line: ``Start`` as JSON (a pipe from its parent: not signed)."""
    return wire.dumps(STARTUP, start) + b"\n"


def read_start() -> Start:
    start = wire.loads(STARTUP, sys.stdin.buffer.readline())
    assert isinstance(start, Start)
    return start


class Unavailable(Exception):
    """No helper could be started or reached; the stream is parsed in the caller's process."""


class StreamHost:
    """The TUI's ``ModelHost``: starts the helper and sends it every model call, one per
    connection, so the TUI's process never imports litellm (~200 MB, seconds of CPU). The context
    meter's many small counts go as one ``CountManyRequest``. When no helper can start, this
    process serves itself (``LocalHost``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None
        self._address = ""
        self._key = b""
        self._ready = threading.Event()
        self._unavailable = False  # given up on: this process parses its own streams
        self._local = LocalHost()

    def start(self, config: Config | None = None) -> None:
        """Start the helper unless it runs; returns at once (it gets ready in the background).
        With ``config``, the helper also warms litellm up for its model (``llm.warm``)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            self._stop_locked()
            self._key = secrets.token_bytes(32)
            self._ready = threading.Event()
            logging_on = any(getattr(h, "_hermes", False) for h in logging.getLogger().handlers)
            # Not ``-m``: the interpreter would look for modules in the current folder first, the
            # user's workspace, where the model writes files. It runs in its private folder, and
            # finds this package where the caller found it (appended: the standard library wins).
            root = str(Path(__file__).resolve().parent.parent)
            code = f"import sys; sys.path.append({root!r}); from hermes_tui.llm_host import main; main()"
            process = None
            try:
                self._folder = tempfile.mkdtemp(prefix="hermes-llm-")  # mode 0700: only this user
                self._address = os.path.join(self._folder, "socket")
                process = subprocess.Popen(
                    [sys.executable, "-c", code, self._address], cwd=self._folder,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    start_new_session=True,  # terminal signals (ctrl+c) are the app's to handle
                )
                assert process.stdin is not None
                process.stdin.write(start_line(Start(config, logging_on, self._key.hex())))
                process.stdin.flush()  # stdin stays open: its end is the helper's signal to exit
            except OSError:  # a full disk, no process to spare, or it died at once
                log.warning("cannot start the model helper process", exc_info=True)
                self._process = process
                self._stop_locked()
                return
            self._process = process
            threading.Thread(target=self._await_ready, args=(process, self._ready), name="llm-host-start",
                             daemon=True).start()

    @staticmethod
    def _await_ready(process: subprocess.Popen[bytes], ready: threading.Event) -> None:
        assert process.stdout is not None
        process.stdout.readline()  # "ready", or nothing when the helper died first
        ready.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Until the helper started by ``start()`` has litellm loaded (or died); False on timeout
        or when none was started."""
        with self._lock:
            process, ready = self._process, self._ready
        return process is not None and ready.wait(timeout)

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    try:
                        stream.close()  # the helper exits when its stdin closes
                    except OSError:
                        pass  # it is gone already
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None else None

    def _connect(self, cancel: threading.Event) -> Channel | None:
        """A connection to a ready helper (started if needed); None when cancelled meanwhile.

        A helper found dead (killed, out of memory) is replaced once, unnoticed: nothing was sent.
        Raises ``Unavailable`` when no helper can be started or reached.
        """
        problem = ""
        for _attempt in (1, 2):
            self.start()
            with self._lock:
                process, ready, address, key = self._process, self._ready, self._address, self._key
            if process is None:
                raise Unavailable("it could not be started (see the log)")
            deadline = time.monotonic() + START_TIMEOUT
            while not ready.wait(POLL):
                if cancel.is_set():
                    return None
                if time.monotonic() > deadline:
                    self._replace(process)
                    raise Unavailable(f"it was not ready after {START_TIMEOUT:.0f} s")
            try:
                return Channel(Client(address, family="AF_UNIX", authkey=key), key, RECORDS)
            except (OSError, EOFError) as exc:
                problem = f"exit code {process.poll()}, {exc!r}"
                log.warning("the model helper process is unreachable (%s)", problem)
                self._replace(process)
        raise Unavailable(problem)

    def _replace(self, process: subprocess.Popen[bytes]) -> None:
        """Stop ``process`` if it is still the helper, so the next ``start()`` makes a new one."""
        with self._lock:
            if self._process is process:
                self._stop_locked()

    def _send(self, request: Request, cancel: threading.Event) -> Channel | None:
        """A connection to the helper on which ``request`` was sent; None when cancelled while
        the helper started. Raises ``Unavailable`` (from now on: this process serves itself)."""
        if self._unavailable:
            raise Unavailable("it was unavailable before")
        try:
            connection = self._connect(cancel)
        except Unavailable as exc:  # slower keys while it streams, but the answer still comes
            log.warning("streaming in this process from now on: the model helper process is unavailable (%s)", exc)
            self._unavailable = True
            raise
        if connection is None:
            return None
        try:
            connection.send(request)
        except (EOFError, OSError) as exc:
            connection.close()
            raise _went_away(exc, "") from exc
        return connection

    # -- ModelHost: every call runs in the helper (here only when it is unavailable)

    def stream(self, config: Config, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               cancel: threading.Event) -> Iterator[StreamItem]:
        """``LocalHost.stream``, parsed in the helper: the same items, the same errors."""
        try:
            connection = self._send(StreamRequest(config, messages, tools), cancel)
        except Unavailable:
            yield from self._local.stream(config, messages, tools, cancel)
            return
        if connection is None:
            yield StreamResult(cancelled=True)
            return
        yield from relay_stream(connection, cancel)

    def complete(self, config: Config, messages: list[dict[str, Any]], *, timeout: float,
                 cancel: threading.Event) -> str:
        """Cancelled as a stream is: the helper closes the provider's connection."""
        try:
            connection = self._send(CompleteRequest(config, messages, timeout), cancel)
        except Unavailable:
            return self._local.complete(config, messages, timeout=timeout, cancel=cancel)
        if connection is None:
            raise LLMError(f"{config.provider} ({config.model}): the request was abandoned.")
        return answer_text(connection, cancel, config)

    def count_tokens(self, config: Config, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None) -> int:
        connection = self._send_uncancelled(CountRequest(config, messages, tools))
        if connection is None:
            return self._local.count_tokens(config, messages, tools)
        return answer_count(connection, config)

    def count_many(self, config: Config, message_lists: list[list[dict[str, Any]]]) -> list[int]:
        connection = self._send_uncancelled(CountManyRequest(config, message_lists))
        if connection is None:
            return self._local.count_many(config, message_lists)
        return answer_counts(connection, config, len(message_lists))

    def max_input_tokens(self, config: Config) -> int | None:
        connection = self._send_uncancelled(WindowRequest(config))
        if connection is None:
            return self._local.max_input_tokens(config)
        return answer_window(connection, config)

    def _send_uncancelled(self, request: Request) -> Channel | None:
        """``_send`` for a request nobody cancels; None: serve it here (no helper)."""
        try:
            return self._send(request, threading.Event())
        except Unavailable:
            return None


def _relay(connection: Channel, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    """The items a helper serves on ``connection`` (the request already sent) up to its
    ``StreamResult`` or ``Answer``; ``cancel`` reaches it, and a helper that goes away is one
    ``LLMError``. Closes ``connection``."""
    text = ""
    cancelled_at: float | None = None
    try:
        while True:
            if cancel.is_set() and cancelled_at is None:
                connection.send(Cancel())
                cancelled_at = time.monotonic()
            if cancelled_at is not None and time.monotonic() - cancelled_at > CANCEL_GRACE:
                yield StreamResult(text=text, cancelled=True)
                return
            if not connection.poll(POLL):
                continue
            item = connection.recv()
            if isinstance(item, LLMError):
                raise item
            if isinstance(item, TextDelta):
                text += item.text
            yield item
            if isinstance(item, (StreamResult, Answer)):
                return
    except (EOFError, OSError, WireError) as exc:
        log.warning("the model helper process went away mid-stream: %r", exc)
        raise _went_away(exc, text) from exc
    finally:
        connection.close()


def relay_stream(connection: Channel, cancel: threading.Event) -> Iterator[StreamItem]:
    """The items of the stream a helper serves on ``connection`` (a ``StreamRequest`` sent)."""
    for item in _relay(connection, cancel):
        if isinstance(item, Answer):
            raise _out_of_turn()
        yield item


def _answer(connection: Channel, cancel: threading.Event, config: Config) -> str | int | list[int] | None:
    """The value of the ``Answer`` a helper serves on ``connection``; a request abandoned
    (``cancel``) is an ``LLMError``, as in ``LocalHost``."""
    for item in _relay(connection, cancel):
        if isinstance(item, Answer):
            return item.value
    if cancel.is_set():
        raise LLMError(f"{config.provider} ({config.model}): the request was abandoned.")
    raise _out_of_turn()


def answer_text(connection: Channel, cancel: threading.Event, config: Config) -> str:
    """The answer to a ``CompleteRequest``."""
    value = _answer(connection, cancel, config)
    if not isinstance(value, str):
        raise _out_of_turn()
    return value


def answer_count(connection: Channel, config: Config) -> int:
    """The answer to a ``CountRequest``."""
    value = _answer(connection, threading.Event(), config)
    if not isinstance(value, int):
        raise _out_of_turn()
    return value


def answer_counts(connection: Channel, config: Config, expected: int) -> list[int]:
    """The answer to a ``CountManyRequest`` of ``expected`` lists."""
    value = _answer(connection, threading.Event(), config)
    if not isinstance(value, list) or len(value) != expected or not all(isinstance(v, int) for v in value):
        raise _out_of_turn()
    return value


def answer_window(connection: Channel, config: Config) -> int | None:
    """The answer to a ``WindowRequest``."""
    value = _answer(connection, threading.Event(), config)
    if value is not None and not isinstance(value, int):
        raise _out_of_turn()
    return value


def _out_of_turn() -> LLMError:
    return LLMError("The helper process that talks to the model answered out of turn.")


def _went_away(exc: BaseException, text: str) -> LLMError:
    return LLMError("The helper process that talks to the model stopped unexpectedly"
                    + (f" after {len(text):,} characters of the answer (they are kept)" if text else "")
                    + ". Send the message again: a new helper starts.", retryable=True)


_shared: StreamHost | None = None
_shared_lock = threading.Lock()


def shared() -> StreamHost:
    """This process's one helper (created, not started: ``start()`` or the first stream does)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = StreamHost()
            atexit.register(_shared.stop)
        return _shared


# -- the helper process ------------------------------------------------------------------------


_LOCAL = LocalHost()
Served = Callable[[Any, threading.Event], Iterator[StreamItem | Answer]]


def _stream(request: StreamRequest, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    yield from _LOCAL.stream(request.config, request.messages, request.tools, cancel)


def _complete(request: CompleteRequest, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    yield Answer(_LOCAL.complete(request.config, request.messages, timeout=request.timeout, cancel=cancel))


def _count(request: CountRequest, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    yield Answer(_LOCAL.count_tokens(request.config, request.messages, request.tools))


def _count_many(request: CountManyRequest, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    yield Answer(_LOCAL.count_many(request.config, request.message_lists))


def _window(request: WindowRequest, cancel: threading.Event) -> Iterator[StreamItem | Answer]:
    yield Answer(_LOCAL.max_input_tokens(request.config))


SERVED: dict[type, Served] = {StreamRequest: _stream, CompleteRequest: _complete, CountRequest: _count,
                              CountManyRequest: _count_many, WindowRequest: _window}


def _serve(connection: Channel) -> None:
    """One request read from ``connection`` and served (``serve_request``)."""
    try:
        request = connection.recv()
    except (EOFError, OSError, WireError):
        log.debug("refused a request", exc_info=True)
        request = None
    serve_request(connection, request)


def serve_request(connection: Channel, request: object) -> None:
    """A ``Request``: its items (``SERVED``), ending in a ``StreamResult``, an ``Answer`` or an
    ``LLMError``. Anything else closes the connection. Closes ``connection`` either way."""
    served = SERVED.get(type(request))
    if served is None:
        connection.close()
        return
    _serve_items(connection, lambda cancel: served(request, cancel))


def _serve_items(connection: Channel, items: Callable[[threading.Event], Iterator[StreamItem | Answer]]) -> None:
    """One request: run it, send its items; a "cancel", or the caller hanging up, cancels it.

    The watcher owns the connection's reads and its closing; sends and the close share a lock,
    so no send can reach a closed (and maybe reused) descriptor.
    """
    cancel = threading.Event()
    lock = threading.Lock()
    closed = False

    def watch() -> None:
        nonlocal closed
        try:
            while isinstance(connection.recv(), Cancel):
                cancel.set()
        except (EOFError, OSError, WireError):
            pass
        finally:
            cancel.set()
            with lock:
                closed = True
                connection.close()

    def send(item: object) -> bool:
        """False when the caller is gone (hung up, or cancelled and closed)."""
        with lock:
            if closed:
                return False
            try:
                connection.send(item)
            except OSError:  # it hung up while the item was on its way
                return False
            return True

    threading.Thread(target=watch, name="llm-host-watch", daemon=True).start()
    try:
        for item in items(cancel):
            if not send(item):
                cancel.set()  # the caller is gone: close the provider's stream too
        return
    except LLMError as exc:
        error = exc
    except Exception as exc:  # the caller gets one line; this log the details
        log.exception("a request failed in the helper process")
        error = LLMError(f"Unexpected failure while talking to the model: {type(exc).__name__}: "
                         f"{str(exc).strip()[:200]}")
    send(error)


def _exit_when_orphaned(folder: str) -> None:
    """The caller's end of stdin closes when it exits, however it exits."""
    while sys.stdin.buffer.read(4096):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


def main() -> None:
    from hermes_tui import llm

    address = sys.argv[1]
    start = read_start()
    key, config = bytes.fromhex(start.key), start.config
    if start.logging_on and config is not None:
        from hermes_tui.logs import setup_logging

        setup_logging(config)
    threading.Thread(target=_exit_when_orphaned, args=(os.path.dirname(address),), daemon=True).start()
    listener = Listener(address, family="AF_UNIX", authkey=key)
    llm.warm(config).join()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        try:
            connection = listener.accept()
        except Exception:  # a client without the key, or one that hung up
            log.debug("refused a connection", exc_info=True)
            continue
        threading.Thread(target=_serve, args=(Channel(connection, key, RECORDS),), name="llm-host-stream",
                         daemon=True).start()

