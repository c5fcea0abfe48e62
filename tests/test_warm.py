"""The per-user warm helper of ``-p`` runs (hermes_tui/warm.py), against the fake server.

The runs are the installed ``hermes-tui -p`` as a user runs it. One helper serves the whole
module (starting one imports litellm: seconds), so the tests that kill or replace it come last.
What is checked in this process (the uid check, the key, the idle exit on an injected clock)
uses the real ``Helper`` on a real socket.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import warm, warm_helper, wire
from hermes_tui.learning import pending
from hermes_tui.memory.store import MemoryStore
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply
from tests.helpers import HERMES_TUI, MovedClock, cli, run_cli, wait_until

pytestmark = pytest.mark.timeout(900)  # a helper's first start imports litellm: 5 s idle, a minute loaded

ROOT = str(Path(__file__).resolve().parent.parent)
LONG = " ".join(f"word{n}" for n in range(400))
SUMMARY = "I answered the user's question."


def answer(request: RecordedRequest) -> Reply:
    """Summaries and turns told apart by their prompt, so queue order never matters."""
    sent = str(request.messages)
    if "note to your future self" in sent:
        return Reply(text=SUMMARY)
    return Reply(text="Answered: " + str(request.messages[-1]["content"])[:40])


@pytest.fixture
def on(runtime: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HERMES_HELPER", "on")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the runs' log file
    return runtime / "hermes"


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path, on: Path) -> FakeLLMServer:
    fake_llm_env.responder = answer
    return fake_llm_env


def log_text(tmp_path: Path) -> str:
    path = tmp_path / "state" / "hermes" / "log" / "hermes.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


# -- runs ------------------------------------------------------------------------------------------


def imported(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The modules a run imported (PYTHONPROFILEIMPORTTIME's lines on its stderr)."""
    return [line for line in result.stderr.splitlines() if line.startswith("import time:")]


def test_a_cold_run_starts_the_helper_and_leaves_it_for_the_next_run(
        env: FakeLLMServer, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No helper runs: the run starts one at once and sets its turn up meanwhile; the helper
    makes the model calls (the run imports no litellm) and stays for the next runs."""
    warm.stop()
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # every module the run imports, on stderr
    first = run_cli("-p", "first question", timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Answered: first question\n"
    assert not [line for line in imported(first) if "litellm" in line]  # the helper made the calls
    assert wait_until(lambda: warm.status() is not None)  # it stays for the next runs
    running = warm.status()
    assert running is not None and running[1] == warm.identity()

    second = run_cli("-p", "second question", timeout=600)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Answered: second question\n"
    assert not [line for line in imported(second) if "litellm" in line]  # the helper did the model's work
    assert warm.status() == running


def test_a_warm_run_reuses_the_helper_never_imports_litellm_and_its_summary_is_written_later(
        env: FakeLLMServer, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert warm.start(None)[0] > 0  # hermes-tui helper start
    first = run_cli("-p", "first question", timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Answered: first question\n"
    running = warm.status()
    assert running is not None and running[1] == warm.identity()

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # every module the run imports, on stderr
    second = run_cli("-p", "second question")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Answered: second question\n"
    imported = [line for line in second.stderr.splitlines() if line.startswith("import time:")]
    assert any("hermes_tui.agent.loop" in line for line in imported)
    assert not [line for line in imported if "litellm" in line]  # the helper did the model's work
    modules = {line.rsplit("|", 1)[-1].strip() for line in imported}
    assert "asyncio" not in modules  # no MCP server declared
    # Nor what only some turns need: a skill to parse, a walk or glob, a web page, a local server's window,
    # a search of past sessions, forgetting one, the curator (after a turn that earns a skill or a fact).
    assert not {"yaml", "frontmatter", "pathspec", "http.client", "ssl", "hermes_tui.memory.search",
                "hermes_tui.memory.query", "hermes_tui.memory.recall", "hermes_tui.memory.forget",
                "hermes_tui.learning.curator"} & modules
    assert warm.status() == running  # the same helper served both runs

    environ = Path(f"/proc/{running[0]}/environ").read_bytes()
    assert b"sk-" not in environ and b"API_KEY" not in environ  # no key waits in the helper

    # Neither one-shot run waited for a summary; the helper wrote both once the runs were over.
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        assert wait_until(lambda: not pending.pending(memory))
        sessions = memory.list_sessions()
        assert len(sessions) == 2 and {s.summary for s in sessions} == {SUMMARY}
    # Two at least: one started between the runs gave way to the second run and was asked again.
    assert sum("note to your future self" in str(r.messages) for r in env.requests) >= 2


def test_helper_start_starts_it_once_and_a_login_unit_runs_that(on: Path) -> None:
    warm.stop()
    first = run_cli("helper", "start", timeout=600)
    assert first.returncode == 0, first.stderr
    running = warm.status()
    assert running is not None and first.stdout.startswith(f"helper running: pid {running[0]}, started")
    again = run_cli("helper", "start", timeout=600)
    assert again.returncode == 0 and "(it was running already)" in again.stdout
    assert warm.status() == running
    systemd = run_cli("helper", "unit", "systemd").stdout
    assert f'ExecStart="{HERMES_TUI}" helper start' in systemd and "Type=forking" in systemd
    agent = plistlib.loads(run_cli("helper", "unit", "launchd").stdout.encode())
    assert agent["ProgramArguments"] == [HERMES_TUI, "helper", "start"] and agent["RunAtLoad"] is True


@on_wire("anthropic")
def test_helper_off_or_unreachable_parses_in_the_run_with_one_log_line(
        env: FakeLLMServer, on: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    monkeypatch.setenv("HERMES_HELPER", "off")
    off = run_cli("-p", "helper off", timeout=600)
    assert off.returncode == 0 and "Answered: helper off" in off.stdout
    assert any("litellm" in line for line in off.stderr.splitlines() if line.startswith("import time:"))
    assert "warm helper" not in log_text(tmp_path)

    # A runtime folder someone else could read: refused, and the run still answers.
    monkeypatch.setenv("HERMES_HELPER", "on")
    unsafe = tmp_path / "unsafe-run"
    unsafe.mkdir(mode=0o700)
    (unsafe / "hermes").mkdir(mode=0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(unsafe))
    refused = cli("-p", "helper refused")  # in this process: what it imports is not the point now
    assert refused.returncode == 0 and "Answered: helper refused" in refused.stdout
    lines = [line for line in log_text(tmp_path).splitlines() if "warm helper is unavailable" in line]
    assert len(lines) == 1 and "not a private folder" in lines[0]
    assert not (unsafe / "hermes" / "socket").exists()


@pytest.mark.parametrize("fake_llm_env", ["openai"], indirect=True)  # each run starts a helper
def test_a_helper_killed_mid_turn_costs_one_line_and_loses_nothing(env: FakeLLMServer, hermes_home: Path) -> None:
    env.responder = lambda request: Reply(text=LONG, chunk_size=5, chunk_delay=0.02)
    assert warm.WarmHost().ensure()
    running = warm.status()
    assert running is not None
    run = subprocess.Popen([HERMES_TUI, "-p", "a long story"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    assert run.stdout is not None
    shown = run.stdout.read(30)  # the answer is streaming
    os.kill(running[0], signal.SIGKILL)
    _rest, err = run.communicate(timeout=120)
    assert run.returncode == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 2 and "stopped unexpectedly" in lines[0] and "(they are kept)" in lines[0], err
    assert lines[1].startswith("hermes: session 1; continue it with")  # an answer had begun: it can go on
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        (session,) = memory.list_sessions()
        stored = memory.get_messages(session.id)
        assert [m.role for m in stored] == ["user", "assistant"] and stored[0].content == "a long story"
        kept = stored[1].content or ""
        assert kept.startswith(shown) and LONG.startswith(kept) and len(kept) < len(LONG)
        assert pending.pending(memory) == [session.id]  # its summary too is only postponed

    env.responder = answer
    again = run_cli("-p", "after the crash", timeout=600)  # a new helper starts
    assert again.returncode == 0 and again.stdout == "Answered: after the crash\n", again.stderr
    assert wait_until(lambda: warm.status() not in (None, running))  # it left a new one for the next runs


OLD_HELPER = f"""
import sys
sys.path.append({ROOT!r})
from hermes_tui import warm, warm_helper
helper = warm_helper.Helper(warm.private_folder(), ident="0.0.1+an-older-version")
helper.bind()
print("ready", flush=True)
helper.serve()
"""


def test_an_edit_anywhere_in_the_package_gives_another_identity(tmp_path: Path) -> None:
    """A helper serves only the very same code: a changed source file in a subpackage, or a new
    one, changes the fingerprint; compiled bytecode and other files do not."""
    package = tmp_path / "hermes_tui"
    shutil.copytree(Path(warm.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    first = warm.fingerprint(package)
    assert warm.fingerprint(package) == first
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"compiled")
    (package / "hermes.tcss").write_text("/* a style */\n", encoding="utf-8")
    assert warm.fingerprint(package) == first
    deep = package / "agent" / "hooks" / "config.py"
    deep.write_text(deep.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    second = warm.fingerprint(package)
    assert second != first
    (package / "skills" / "new_module.py").write_text("", encoding="utf-8")
    assert warm.fingerprint(package) not in (first, second)


@pytest.mark.parametrize("fake_llm_env", ["anthropic"], indirect=True)  # each run starts a helper
def test_a_helper_of_another_version_is_replaced(env: FakeLLMServer) -> None:
    warm.stop()
    old = subprocess.Popen([sys.executable, "-c", OLD_HELPER], stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ))
    try:
        assert old.stdout is not None and old.stdout.readline().strip() == "ready"
        assert warm.status() == (old.pid, "0.0.1+an-older-version")
        result = run_cli("-p", "after the upgrade", timeout=600)
        assert result.returncode == 0 and result.stdout == "Answered: after the upgrade\n", result.stderr
        assert old.wait(timeout=60) == 0  # asked to retire, it left
        assert wait_until(lambda: warm.status() is not None)  # a new one, for the next runs
        new = warm.status()
        assert new is not None and new[0] != old.pid and new[1] == warm.identity()
    finally:
        old.kill()
        old.wait()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists("/usr/bin/python3"),
                    reason="needs root (and setpriv) to run a client as another user")
def test_another_user_cannot_reach_the_helper(on: Path) -> None:
    assert warm.WarmHost().ensure()
    probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1]); print('connected')\n"
             "except OSError as exc:\n    print(type(exc).__name__)\n")
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                             "-c", probe, str(on / "socket")], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "PermissionError", result.stdout + result.stderr
    assert warm.status() is not None  # still serving its owner


# -- the server in this process ----------------------------------------------------------------------


@pytest.fixture
def where(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="hw-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield warm.private_folder()
    shutil.rmtree(base, ignore_errors=True)


def serving(helper: warm_helper.Helper) -> threading.Thread:
    helper.bind()
    thread = threading.Thread(target=helper.serve, daemon=True)
    thread.start()
    return thread


def test_the_helper_exits_after_its_idle_time_on_its_clock(where: Path) -> None:
    clock = MovedClock()
    helper = warm_helper.Helper(where, idle=600, clock=clock)
    clock.now = 700.0  # getting ready (importing litellm) took longer than its idle time
    serving(helper)
    assert stat_mode(where / "key") == 0o600
    clock.now = 700.0 + 599.0
    assert warm._ask(where, warm.Hello()) == warm.Welcome(os.getpid())  # alive after 599 s; the request counts
    clock.now = 700.0 + 599.0 + 599.0
    assert isinstance(warm._ask(where, warm.Hello()), warm.Welcome)
    assert wait_until(lambda: helper.active() == 0)  # the request has ended and set its time
    clock.now += 600.0
    assert helper.stopped.wait(30)
    assert not (where / "socket").exists() and not (where / "key").exists()


class CountedClock(MovedClock):
    """A clock that stands still and counts its reads, by the reading thread's name."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.reads[threading.current_thread().name] += 1
        return self.now


def test_a_job_waiting_for_a_quiet_helper_ticks_instead_of_spinning(where: Path, hermes_home: Path) -> None:
    """A handed summary job waits until the helper is quiet by looking once a tick, as the accept
    loop does: looking again at once took a core and the GIL from the runs the helper served
    (every call of the next ``-p`` run three times slower)."""
    from hermes_tui.config import Config

    clock = CountedClock()  # it stands still: the helper is never quiet, the job waits all along
    helper = warm_helper.Helper(where, clock=clock)
    helper.bind()
    threading.Thread(target=helper.serve, name="warm-serve", daemon=True).start()
    try:
        config = warm.without_secrets(Config.load(), keep_key=True)
        assert isinstance(warm._ask(where, warm.Summaries(config, str(hermes_home / "memory.sqlite3"))), warm.Welcome)
        assert wait_until(lambda: helper.active() == 0)  # the job is handed
        clock.reads.clear()
        assert wait_until(lambda: clock.reads["warm-serve"] >= 8)  # the accept loop's ticks, about 2 s
        assert clock.reads["warm-summaries"] <= 2 * clock.reads["warm-serve"] + 4
    finally:
        helper.stop()
        assert helper.stopped.wait(30)


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_helper_answers_only_its_owners_uid_and_key(where: Path, caplog: pytest.LogCaptureFixture) -> None:
    for owner in (os.geteuid() + 1, os.geteuid()):  # someone else's helper first: we are the foreign user
        helper = warm_helper.Helper(where, owner=owner)
        serving(helper)
        try:
            if owner != os.geteuid():
                with pytest.raises(warm.Unavailable):
                    warm._ask(where, warm.Hello())
                assert any(f"refused a connection from uid {os.geteuid()}" in r.getMessage() for r in caplog.records)
                continue
            assert warm._ask(where, warm.Hello()) == warm.Welcome(os.getpid())
            with pytest.raises(AuthenticationError):
                Client(str(where / "socket"), family="AF_UNIX", authkey=b"a guessed key")
            assert isinstance(warm._ask(where, warm.Hello()), warm.Welcome)  # still serving
        finally:
            helper.stop()
            assert helper.stopped.wait(30)


def test_a_request_leaves_no_key_in_the_helper(where: Path, fake_llm_env: FakeLLMServer, hermes_home: Path) -> None:
    """litellm caches its HTTP clients, each with the key it was made with: gone after the request."""
    from hermes_tui.config import Config
    from hermes_tui.llm import LLMClient, _lib

    helper = warm_helper.Helper(where)
    serving(helper)
    try:
        client = LLMClient(Config.load(), warm.WarmHost())
        fake_llm_env.queue(Reply(text="served"))
        items = list(client.stream([{"role": "user", "content": "hi"}], None, threading.Event()))
        assert items[-1].text == "served"
        assert wait_until(lambda: helper.active() == 0, 30)
        key = Config.load().api_key
        cached = _lib().in_memory_llm_clients_cache.cache_dict.values()
        assert key and not [client for client in cached if getattr(client, "api_key", None) == key]
        assert client.count_tokens([{"role": "user", "content": "count these words"}]) > 0  # calls go there too
    finally:
        helper.stop()
        helper.stopped.wait(30)


class Planted:
    """A pickle whose unpickling creates a folder: what a sandboxed command that read the key sent."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def test_the_helper_never_unpickles_and_refuses_unsigned_messages(where: Path, tmp_path: Path) -> None:
    """Even a client that knows the key cannot make it run code: the wire is JSON, each message signed."""
    helper = warm_helper.Helper(where)
    serving(helper)
    marker = tmp_path / "ran"
    key = (where / "key").read_bytes()
    try:
        for attack in ("pickle", "forged"):
            connection = Client(str(where / "socket"), family="AF_UNIX", authkey=key)
            if attack == "pickle":
                connection.send(Planted(marker))
            else:  # a well-formed record, signed with another key
                payload = wire.dumps(warm.WARM_RECORDS, warm.Identity(warm.identity()))
                connection.send_bytes(wire.sign(b"not the key", payload))
            with pytest.raises((EOFError, ConnectionResetError)):
                connection.recv_bytes()  # refused: hung up, no answer
            connection.close()
            assert not marker.exists(), attack
        assert warm._ask(where, warm.Hello()) == warm.Welcome(os.getpid())  # still serving its owner
    finally:
        helper.stop()
        assert helper.stopped.wait(30)


def test_a_holder_tries_less_often_while_the_helper_cannot_start() -> None:
    """A surface open all day whose helper cannot start (a broken install, a folder that is not
    private) must not pay a failing start every minute: each failure doubles the wait, up to
    HOLD_BACKOFF_MAX, and a wait already above it stays."""
    waits = [60.0]
    for _ in range(6):
        waits.append(warm.hold_backoff(waits[-1]))
    assert waits == [60.0, 120.0, 240.0, 480.0, 900.0, 900.0, 900.0]
    assert warm.hold_backoff(0.5) == 1.0 and warm.hold_backoff(2000.0) == 2000.0
