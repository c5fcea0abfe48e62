"""run_bash's sandbox: a real bwrap, real processes, real files; and the fallback without it.

Tests of the sandbox itself skip (saying why) where bubblewrap cannot run; here and in CI it is
installed (.ci/run), so they run. The fallback (HERMES_SANDBOX=off, or no bubblewrap) is tested too:
it must still end every process a command starts, escaped process groups and sessions included.
"""

from __future__ import annotations

import codecs
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent import sandbox as sandbox_module
from hermes_tui.agent.sandbox import Sandbox, startup_notice, unavailable_reason
from hermes_tui.agent.shell import NO_NETWORK_HINT
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.config import Config, ConfigError
from hermes_tui.memory.store import MemoryStore
from hermes_tui.redaction import Secrets
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import HERMES_TUI

NO_BWRAP = unavailable_reason()
needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None, reason=f"the sandbox cannot run here: {NO_BWRAP}")
MODES = [pytest.param("bwrap", marks=needs_bwrap), "off"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _with_marker(marker: str) -> list[int]:
    """Live ``sleep`` and ``python3 -c`` processes (seen from the host) whose arguments hold ``marker``
    (not the shells, bwrap or the reaper, whose command lines quote the whole command)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            program = os.path.basename(argv[0])
            ours = program == "sleep" or (program.startswith("python") and argv[1:2] == ["-c"])
            if ours and marker in "\0".join(argv) and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def _marker() -> str:
    return f"{300 + random.random():.6f}"  # a unique sleep duration names our processes


def _escapes(marker: str) -> str:
    """Background processes that leave the command's process group or session in every usual way."""
    return (f"set -m; sleep {marker}1 & "  # job control: a process group of its own
            f"setsid sleep {marker}2 & "  # a new session
            f"python3 -c 'import os, time; os.setpgid(0, 0); time.sleep({marker}3)' & "
            f"( ( sleep {marker}4 & ) & ) ; "  # double fork: re-parented away from the shell
            "sleep 0.2; echo started")


ESCAPED = 4  # processes _escapes starts


def _registry(tmp_path: Path, mode: str, network: bool = False) -> ToolRegistry:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "skills"),
                        sandbox=Sandbox(enabled=mode == "bwrap", network=network))


@pytest.fixture(params=MODES)
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> ToolRegistry:
    return _registry(tmp_path, request.param)


# -- finding 5: no process outlives its command -------------------------------------------------


def test_escaped_processes_end_with_the_command(registry: ToolRegistry) -> None:
    marker = _marker()
    result = registry.execute("run_bash", {"command": _escapes(marker)})
    assert result.ok and "started" in result.output, result.output
    assert _with_marker(marker) == []  # gone when the call returns, not some time later


def test_cancel_ends_every_descendant(registry: ToolRegistry) -> None:
    marker = _marker()
    cancel = threading.Event()
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(registry.execute(
        "run_bash", {"command": f"{_escapes(marker)}; sleep {marker}5"}, cancel=cancel)))
    worker.start()
    deadline = time.monotonic() + 30
    while len(_with_marker(marker)) < ESCAPED + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_with_marker(marker)) == ESCAPED + 1, "the command never started"
    cancel.set()
    worker.join(30)
    assert done and "Cancelled" in done[0].output
    assert _with_marker(marker) == []


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PATH with the usual tools but without bwrap, and the probe forgotten before and after."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sleep", "setsid", "python3", "echo"):
        (bin_dir / name).symlink_to(shutil.which(name) or name)
    monkeypatch.setenv("PATH", str(bin_dir))
    unavailable_reason.cache_clear()
    yield
    unavailable_reason.cache_clear()


def test_fallback_reaper_ends_escapes_without_bubblewrap(tmp_path: Path, no_bwrap: None) -> None:
    """No bwrap on PATH: one notice; commands still run, and their escaped processes still end."""
    assert unavailable_reason() == "bubblewrap (bwrap) is not installed"
    line = startup_notice(Config())
    assert line and "without a sandbox" in line and "HERMES_SANDBOX=off" in line
    assert startup_notice(Config(sandbox=False)) is None  # the explicit opt-out is quiet
    reg = ToolRegistry(tmp_path, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "s"))
    assert not reg.sandbox.active
    marker = _marker()
    result = reg.execute("run_bash", {"command": _escapes(marker)})
    assert result.ok and "started" in result.output, result.output
    assert _with_marker(marker) == []


def test_headless_says_once_that_there_is_no_sandbox(no_bwrap: None, hermes_home: Path,
                                                     fake_llm: FakeLLMServer) -> None:
    env = {**os.environ, **wire_env(fake_llm, "openai")}
    for sandbox, expected in (("on", 1), ("off", 0)):
        done = subprocess.run([HERMES_TUI, "-p", "hi"], env={**env, "HERMES_SANDBOX": sandbox},
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
        notices = [line for line in done.stderr.splitlines() if "without a sandbox" in line]
        assert len(notices) == expected, done.stderr
    # A run that cannot go ahead says why in its one line, and nothing else.
    done = subprocess.run([HERMES_TUI, "-p", "hi"], env={**os.environ, "HERMES_SANDBOX": "on"},
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stderr.startswith("hermes: ANTHROPIC_API_KEY is not set")
    assert len(done.stderr.splitlines()) == 1


# -- what a sandboxed command can reach --------------------------------------------------------


@needs_bwrap
def test_filesystem_is_read_only_except_the_workspace_and_a_private_tmp(tmp_path: Path) -> None:
    reg = _registry(tmp_path, "bwrap")
    ws = reg.workspace
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    probe = f"hermes-probe-{random.randrange(10**9)}"
    outside = tmp_path / "outside.txt"
    command = (f"echo kept > in-workspace.txt; touch /usr/{probe}; echo x > {outside}; "
               f"echo x > /tmp/{probe}; cat /tmp/{probe}; "
               "echo '[core] fsmonitor = evil' >> .git/config; touch .git/hooks/pre-commit; echo end")
    result = reg.execute("run_bash", {"command": command})
    assert "end" in result.output
    assert (ws / "in-workspace.txt").read_text() == "kept\n"
    assert not Path(f"/usr/{probe}").exists() and not outside.exists()
    assert not Path(f"/tmp/{probe}").exists()  # the sandbox's /tmp is its own
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert result.output.count("Read-only file system") >= 3, result.output


@pytest.fixture
def user_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder outside /tmp (the sandbox replaces /tmp, which would hide it anyway)."""
    home = Path(tempfile.mkdtemp(prefix="hermes-sandbox-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


CREDENTIALS = {
    ".ssh/id_ed25519": "PLANTED-SSH-KEY-1", ".aws/credentials": "PLANTED-AWS-2", ".netrc": "PLANTED-NETRC-3",
    ".config/gh/hosts.yml": "PLANTED-GH-4", ".docker/config.json": "PLANTED-DOCKER-5",
    ".kube/config": "PLANTED-KUBE-6", ".gnupg/private.key": "PLANTED-GPG-7",
    ".hermes/.env": "PLANTED-HERMES-ENV-8", ".local/state/hermes/log/hermes.log": "PLANTED-LOG-9",
}


@needs_bwrap
@pytest.mark.parametrize("workspace_in", ["home", "hermes_home"])
def test_hermes_home_and_credential_folders_are_masked(user_home: Path, tmp_path: Path, workspace_in: str) -> None:
    for relative, content in CREDENTIALS.items():
        (user_home / relative).parent.mkdir(parents=True, exist_ok=True)
        (user_home / relative).write_text(content)
    hermes_home = user_home / ".hermes"
    ws = (user_home if workspace_in == "home" else hermes_home) / "project"
    ws.mkdir()
    # No secrets configured: the scrubber cannot help, only the sandbox can.
    reg = ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "s"), home=hermes_home,
                       secrets=Secrets())
    paths = " ".join(str(user_home / r) for r in CREDENTIALS)
    result = reg.execute("run_bash", {"command": f"cat {paths} 2>&1; ls -a {user_home}; echo hi > mine.txt; echo end"})
    assert "end" in result.output
    for relative, content in CREDENTIALS.items():
        assert content not in result.output, f"{relative} was readable"
    assert (ws / "mine.txt").read_text() == "hi\n"  # the workspace, even inside a masked folder


@needs_bwrap
def test_no_secret_in_the_environment_and_hermes_is_not_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_planted_token_not_secret_named_42")  # no *_API_KEY name
    reg = _registry(tmp_path, "bwrap")
    reg.secrets = Secrets()  # the scrubber knows nothing: what is not reachable cannot leak
    command = ("env; tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ; "
               f"ls /proc/{os.getpid()} 2>&1 | head -1; echo pids $(ls /proc | grep -c '^[0-9]')")
    result = reg.execute("run_bash", {"command": command})
    assert "ghp_planted" not in result.output and "GITHUB_TOKEN" not in result.output
    assert "PATH=" in result.output
    assert "No such file" in result.output  # the test's own process (Hermes here) is not in its /proc
    assert int(result.output.rsplit("pids ", 1)[1].split()[0]) < 10


@pytest.mark.parametrize("mode", MODES)
def test_the_environment_is_an_allowlist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_planted_token_not_secret_named_42")
    monkeypatch.setenv("LC_ALL", "C")
    reg = _registry(tmp_path, mode)
    reg.secrets = Secrets()
    result = reg.execute("run_bash", {"command": "env"})
    names = {line.split("=", 1)[0] for line in result.output.splitlines()[1:] if "=" in line}
    assert "GITHUB_TOKEN" not in names and "LC_ALL" in names and "PATH" in names
    assert names <= sandbox_module.ENVIRONMENT | {"LC_ALL", "PWD", "SHLVL", "_", "OLDPWD"}, names


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_network_is_off_unless_asked_for(tmp_path: Path, network: bool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        reg = _registry(tmp_path, "bwrap", network=network)
        command = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\""
        result = reg.execute("run_bash", {"command": command})
    assert ("connected" in result.output) is network, result.output
    # A failed lookup says how to get the network (this machine has none either way).
    lookup = reg.execute("run_bash", {"command": "python3 -c \"import socket; socket.getaddrinfo('example.com', 80)\""})
    assert not lookup.ok and (NO_NETWORK_HINT in lookup.output) is not network, lookup.output


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_abstract_unix_sockets_are_reachable_exactly_when_the_network_is_on(tmp_path: Path, network: bool) -> None:
    """What docs/safety.md says "network on" opens: the host's abstract unix sockets (X11, D-Bus)
    belong to the network namespace, so a sandboxed command reaches them then, and only then."""
    name = f"\0hermes-test-{os.getpid()}-{network}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen()
        reg = _registry(tmp_path, "bwrap", network=network)
        command = ("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                   f"s.connect('\\\\0{name[1:]}'); print('connected')\"")
        result = reg.execute("run_bash", {"command": command})
    assert ("connected" in result.output) is network, result.output
    assert ("ConnectionRefusedError" in result.output) is not network, result.output  # not there at all
    notice = startup_notice(Config(sandbox=True, sandbox_network=network))
    assert (notice is not None and "abstract unix sockets" in notice) is network


def test_sandbox_settings_are_privileged_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("HERMES_SANDBOX=off\nHERMES_SANDBOX_NETWORK=on\n")
    config = Config.load()
    assert config.sandbox and not config.sandbox_network  # ./.env may not widen what Hermes may do
    assert "HERMES_SANDBOX" in config.warnings[0] and "HERMES_SANDBOX_NETWORK" in config.warnings[0]
    monkeypatch.setenv("HERMES_SANDBOX", "off")
    monkeypatch.setenv("HERMES_SANDBOX_NETWORK", "on")
    config = Config.load()
    assert not config.sandbox and config.sandbox_network
    monkeypatch.setenv("HERMES_SANDBOX", "maybe")
    with pytest.raises(ConfigError, match="HERMES_SANDBOX='maybe'"):
        Config.load()


# -- findings 4 and 5 through a real Hermes process ----------------------------------------------

PLANTED_KEY = "sk-planted-headless-key-0123456789abcdefXYZ"
ROT13 = "tr 'a-zA-Z' 'n-za-mN-ZA-M'"  # a transformation no scrubber knows


@pytest.mark.parametrize("mode", MODES)
def test_a_real_hermes_keeps_its_key_and_leaves_no_process(
    fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path, mode: str
) -> None:
    """Headless Hermes with its key in the environment: the shell reads its parent's and Hermes'
    environment and HERMES_HOME/.env, transformed; then starts escaping processes, and Hermes is
    killed with SIGKILL. No form of the key reaches the model, and no process is left."""
    env = {**os.environ, **wire_env(fake_llm, "openai"), "OPENAI_API_KEY": PLANTED_KEY,
           "HERMES_SANDBOX": "on" if mode == "bwrap" else "off"}
    hermes_home.mkdir()
    (hermes_home / ".env").write_text(f"FLASK_SECRET_KEY={PLANTED_KEY}-home\n")
    read = (f"tr '\\0' '\\n' < /proc/$PPID/environ | {ROT13}; p=$(awk '{{print $4}}' /proc/$PPID/stat); "
            f"tr '\\0' '\\n' < /proc/$p/environ | {ROT13}; echo parent $p")
    if mode == "bwrap":
        read += f"; cat {hermes_home}/.env | {ROT13}"
    marker = _marker()
    fake_llm.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": read})]),
                   Reply(tool_calls=[ToolCall("run_bash", {"command": f"{_escapes(marker)}; sleep {marker}5"})]))
    hermes = subprocess.Popen([HERMES_TUI, "-p", "go", "--yes"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 90
        while len(_with_marker(marker)) < ESCAPED + 1 and time.monotonic() < deadline and hermes.poll() is None:
            time.sleep(0.05)
        assert len(_with_marker(marker)) == ESCAPED + 1, "the second command never started"
    finally:
        hermes.kill()
        hermes.wait()
    deadline = time.monotonic() + 5
    while _with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _with_marker(marker) == []
    sent = json.dumps([r.body for r in fake_llm.requests])
    assert "parent" in sent  # the first command ran and its output reached the model
    for form in (PLANTED_KEY, codecs.encode(PLANTED_KEY, "rot13"), codecs.encode(f"{PLANTED_KEY}-home", "rot13")):
        if mode == "off" and form.endswith("-ubzr"):
            continue  # without the sandbox HERMES_HOME is readable: the README says so
        assert form not in sent


def test_web_logs_the_notice_once_when_its_shell_is_on(no_bwrap: None, hermes_home: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    from dataclasses import replace

    from hermes_tui.web.app import create_app
    from hermes_tui.web.context import EXTENSION

    base = replace(Config.load(), flask_secret_key="test-secret-key-0123456789abcdef",
                   web_password="papaya orbit lantern 42")
    for shell, expected in ((True, 1), (False, 0)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="hermes_tui"):
            app = create_app(replace(base, web_enable_shell=shell))
        app.extensions[EXTENSION].state.close()
        assert sum("without a sandbox" in r.getMessage() for r in caplog.records) == expected


@needs_bwrap
def test_the_skill_library_is_readable_but_not_writable_in_the_sandbox(tmp_path: Path) -> None:
    """HERMES_HOME is masked, but a skill's scripts run from its folder: the library is bound read-only."""
    from hermes_tui.agent.shell import run_command

    home, workspace = tmp_path / "home", tmp_path / "ws"
    library = home / "skills" / "tool" / "scripts"
    library.mkdir(parents=True)
    (library / "run.sh").write_text("echo from the skill\n")
    (home / ".env").write_text("OPENAI_API_KEY=sk-hidden\n")
    workspace.mkdir()
    script = library / "run.sh"
    ran = run_command(f"bash {script}; cat {home}/.env; echo x > {script}", workspace, 30, threading.Event(),
                      {"PATH": os.environ["PATH"]}, sandbox=Sandbox(), home=home, readable=(home / "skills",))
    assert "from the skill" in ran.text and "sk-hidden" not in ran.text, ran.text
    assert script.read_text() == "echo from the skill\n", "no command can rewrite a skill"


def test_a_command_runs_while_hermes_holds_more_than_1024_descriptors(registry: ToolRegistry) -> None:
    """A long session holds many descriptors; a pipe numbered past select()'s 1,024 still gets read."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this machine allows only {hard} open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(held) > 1024
        result = registry.execute("run_bash", {"command": "echo still read"})
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert result.ok and "still read" in result.output, result.output
