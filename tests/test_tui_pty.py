"""The real app and the headless mode under a real pseudo-terminal: no terminal control sequence
planted in a tool argument, a tool output, an answer, a skill or a memory hit reaches the bytes
the terminal receives.

Textual draws with CSI sequences of its own, so the test plants distinctive payloads (an OSC 52
clipboard write, OSC 0/2 window titles, an 8-bit CSI) and asserts that no OSC 52/0/2 is emitted
at all and that no escape sequence in the output carries a payload marker.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui import warm
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import HERMES_TUI
from tests.pty_harness import Terminal, terminal_env  # noqa: F401 - fixtures among them

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

ARGUMENT = "echo canary-arg \x1b]0;PWNED-ARG\x07 \x1b]52;c;SEKRET-ARG\x07 \x1b[2J"
OUTPUT = "printf 'canary-out \\033]52;c;SEKRET-OUT\\007 \\033]2;PWNED-OUT\\007 \\033[31mred\\n'"
ANSWER = "canary-answer \x1b]52;c;SEKRET-ANS\x07 \x1b]0;PWNED-ANS\x1b\\ \x9b2J \u202eevil done-marker"
MARKERS = (b"SEKRET", b"PWNED")
# Any escape sequence: CSI, OSC/DCS/APC strings (to BEL or ST), or two-byte escapes; 8-bit CSI/OSC.
SEQUENCE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]P_^X][^\x07\x1b]*(?:\x07|\x1b\\)|.)|\xc2[\x9b\x9d][^\x07]*")


def assert_inert(output: bytes) -> None:
    for osc in (b"\x1b]52", b"\x1b]0;", b"\x1b]2;", b"\xc2\x9d"):
        assert osc not in output, f"{osc!r} reached the terminal"
    for sequence in SEQUENCE.findall(output):
        assert not any(marker in sequence for marker in MARKERS), sequence
    assert b"\xc2\x9b2J" not in output and "\u202e".encode() not in output


def planted_replies(server: FakeLLMServer) -> None:
    server.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": ARGUMENT}, id="call_a")]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": OUTPUT}, id="call_b")]),
        Reply(text=ANSWER),
        Reply(text="Summary."),
    )


def test_the_app_sends_no_planted_sequence_to_the_terminal(terminal_env: tuple[FakeLLMServer, dict[str, str]]) -> None:
    server, env = terminal_env
    planted_replies(server)
    term = Terminal([HERMES_TUI], env)
    try:
        term.wait_for(lambda out: b"Message Hermes" in out)
        term.type("show me the canary\r")
        term.wait_for(lambda out: b"done-marker" in out)
        term.type("\x1bOR")  # F3: the Skills pane
        term.wait_for(lambda out: b"canary-skill" in out)
        term.type("\x1bOS")  # F4: the Memory pane, searching the stored payloads
        time.sleep(0.5)
        term.type("canary")
        term.wait_for(lambda out: out.count(b"canary") > 12)
        time.sleep(1.0)
        term.type("\x11")  # ctrl+q
        time.sleep(0.5)
        term.type("\x11")
        term.process.wait(30)
    finally:
        term.close()
    output = term.seen()
    assert b"canary-answer" in output and b"canary-out" in output and b"canary-arg" in output
    assert_inert(output)


def test_headless_on_a_terminal_sends_no_planted_sequence(terminal_env: tuple[FakeLLMServer, dict[str, str]]) -> None:
    server, env = terminal_env
    planted_replies(server)
    term = Terminal([HERMES_TUI, "-p", "show me the canary", "--yes"], env)
    try:
        assert term.process.wait(60) == 0
        term.wait_for(lambda out: b"done-marker" in out, timeout=5)
    finally:
        term.close()
    output = term.seen()
    assert b"canary-answer" in output and b"canary-arg" in output
    assert_inert(output)


@pytest.mark.parametrize("pane", ["", "\x1bOR"])  # the chat, or the Skills pane (F3)
def test_ctrl_q_twice_in_one_write_quits_at_once(terminal_env: tuple[FakeLLMServer, dict[str, str]], pane: str) -> None:
    """The second ctrl+q quits without waiting for the session's summary, however fast it comes."""
    server, env = terminal_env
    server.queue(Reply(text="Hello."))
    server.responder = lambda request: Reply(text="a summary", chunk_delay=5.0)  # a summary that would wait
    term = Terminal([HERMES_TUI], env)
    try:
        term.wait_for(lambda out: b"Message Hermes" in out)
        term.type("hello\r")
        term.wait_for(lambda out: b"Hello." in out)
        if pane:
            term.type(pane)
            term.wait_for(lambda out: b"canary-skill" in out)
        term.type("\x11\x11")
        assert term.process.wait(30) == 0
    finally:
        term.close()


@contextlib.contextmanager
def _answered(env: dict[str, str], answer: str) -> Iterator[Terminal]:
    """The app on a pty once it has answered "hello" with ``answer``; closed after."""
    term = Terminal([HERMES_TUI], env)
    try:
        term.wait_for(lambda out: b"Message Hermes" in out)
        term.type("hello\r")
        term.wait_for(lambda out: answer.encode() in out)
        yield term
    finally:
        term.close()


def _litellm_libraries(pid: int) -> list[str]:
    """The compiled libraries of litellm's that process ``pid`` has loaded (tiktoken's, jiter)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return [lib for lib in ("tiktoken", "jiter") if lib in maps]


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    return found


def test_the_app_sends_its_turns_to_the_running_warm_helper_as_shipped(
        terminal_env: tuple[FakeLLMServer, dict[str, str]], runtime: Path, hermes_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper on (the default, said in HERMES_HOME/.env as users say it): the app reaches the
    per-user warm helper a -p run left, sends its turn there, starts no stream helper of its own,
    and never loads litellm's compiled libraries (tiktoken's, the openai SDK's jiter) in its own process."""
    server, env = terminal_env
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    env = {k: v for k, v in env.items() if k != "HERMES_HELPER"} | {"XDG_RUNTIME_DIR": str(runtime)}
    (hermes_home / ".env").write_text("HERMES_HELPER=on\n")
    helper_pid, _ = warm.start(None)
    server.queue(Reply(text="Answered by the warm helper."))
    with _answered(env, "Answered by the warm helper.") as term:
        assert server.requests[0].body["messages"][-1]["content"] == "hello"
        status = warm.status()
        assert status is not None and status[0] == helper_pid  # reached, not replaced
        assert not [line for line in _children(term.process.pid) if "llm_host" in line]
        assert _litellm_libraries(term.process.pid) == []


def test_with_no_warm_helper_to_be_had_the_app_answers_through_its_own(
        terminal_env: tuple[FakeLLMServer, dict[str, str]], tmp_path: Path) -> None:
    """The helper on, but its runtime folder is not private (someone else could listen there):
    the app never uses it, and answers through a helper of its own, never in its own process."""
    server, env = terminal_env
    runtime = tmp_path / "rt"
    (runtime / "hermes").mkdir(parents=True)
    (runtime / "hermes").chmod(0o755)
    env = env | {"HERMES_HELPER": "on", "XDG_RUNTIME_DIR": str(runtime)}
    server.queue(Reply(text="Answered by the app's own helper."))
    with _answered(env, "Answered by the app's own helper.") as term:
        assert [line for line in _children(term.process.pid) if "llm_host" in line]
        assert _litellm_libraries(term.process.pid) == []
        assert not (runtime / "hermes" / "socket").exists()
