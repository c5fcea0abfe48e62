"""ToolRegistry on a real workspace, real SQLite and real skill files."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from hermes_tui.agent import reading, tools
from hermes_tui.agent.toolkit import ToolContext
from hermes_tui.agent.tools import OUTPUT_CAP, READ_CAP, ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.redaction import Secrets
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import on_wire
from tests.fakes.server import Reply, ToolCall
from tests.helpers import HERMES_TUI
from tests.tools_harness import HOSTILE_PATHS, outside, registry  # noqa: F401 - fixtures among them


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_read_file_refuses_hostile_path(registry: ToolRegistry, path: str) -> None:
    result = registry.execute("read_file", {"path": path})
    assert not result.ok
    assert "TOP-SECRET" not in result.output
    assert "root:" not in result.output


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_write_file_refuses_hostile_path(registry: ToolRegistry, outside: Path, path: str) -> None:
    before = sorted(p.name for p in outside.iterdir())
    result = registry.execute("write_file", {"path": path, "content": "pwned"})
    assert not result.ok
    assert (outside / "secret.txt").read_text() == "TOP-SECRET"
    assert sorted(p.name for p in outside.iterdir()) == before


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_list_dir_refuses_hostile_path(registry: ToolRegistry, path: str) -> None:
    result = registry.execute("list_dir", {"path": path})
    assert not result.ok
    assert "entries" not in result.output  # no listing header: nothing was listed


def test_paths_inside_workspace_work(registry: ToolRegistry) -> None:
    assert registry.execute("read_file", {"path": "notes.txt"}).output == "    1\thello notes"
    assert registry.execute("read_file", {"path": "sub/../notes.txt"}).ok
    assert registry.execute("read_file", {"path": "ok_link"}).output == "    1\thello notes"
    absolute = str(registry.workspace / "sub" / "inner.txt")
    assert registry.execute("read_file", {"path": absolute}).output == "    1\tinner"
    listing = registry.execute("list_dir", {})
    assert listing.ok and "sub/" in listing.output and "notes.txt" in listing.output


def test_write_file_creates_parents(registry: ToolRegistry) -> None:
    result = registry.execute("write_file", {"path": "a/b/c.txt", "content": "deep"})
    assert result.ok, result.output
    assert (registry.workspace / "a" / "b" / "c.txt").read_text() == "deep"


def test_read_file_binary_and_folder(registry: ToolRegistry) -> None:
    (registry.workspace / "blob.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    result = registry.execute("read_file", {"path": "blob.bin"})
    assert not result.ok and "binary" in result.output
    assert "list_dir" in registry.execute("read_file", {"path": "sub"}).output
    assert "does not exist" in registry.execute("read_file", {"path": "nope.txt"}).output


def test_list_dir_caps_entries(registry: ToolRegistry) -> None:
    many = registry.workspace / "many"
    many.mkdir()
    for i in range(600):
        (many / f"f{i:04d}").touch()
    result = registry.execute("list_dir", {"path": "many"})
    assert result.ok
    assert "100 more entries not shown" in result.output


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("no_such_tool", {}, "Unknown tool"),
        ("read_file", "{not json", "not valid JSON"),
        ("read_file", "[1, 2]", "JSON object"),
        ("read_file", {}, "missing required"),
        ("read_file", {"path": 3}, "must be a string"),
        ("run_bash", {"command": "true", "timeout": "soon"}, "must be an integer"),
        ("run_bash", {"command": "true", "timeout": True}, "must be an integer"),
        ("read_file", {"path": "notes.txt", "mode": "rb"}, "unexpected argument"),
        ("create_skill", {"name": "x", "description": "d", "body": "b", "triggers": "a,b"}, "list of strings"),
        ("use_skill", {"name": "missing-skill"}, "no skill named"),
    ],
)
def test_tool_problems_are_results_not_exceptions(registry: ToolRegistry, name: str, arguments: object,
                                                  fragment: str) -> None:
    result = registry.execute(name, arguments)
    assert not result.ok
    assert fragment in result.output


def test_arguments_as_json_string_and_empty(registry: ToolRegistry) -> None:
    assert registry.execute("read_file", json.dumps({"path": "notes.txt"})).ok
    assert registry.execute("list_dir", "").ok  # empty arguments mean {}


def test_run_bash_output_and_exit_code(registry: ToolRegistry) -> None:
    result = registry.execute("run_bash", {"command": "echo out; echo err >&2; exit 3"})
    assert not result.ok
    assert result.output.startswith("exit code 3")
    assert "out" in result.output and "err" in result.output
    ok = registry.execute("run_bash", {"command": "pwd"})
    assert ok.ok and str(registry.workspace) in ok.output


def test_run_bash_caps_output_keeping_head_and_tail(registry: ToolRegistry) -> None:
    result = registry.execute("run_bash", {"command": "echo HEAD; head -c 100000 /dev/zero | tr '\\0' x; echo; echo TAIL"})
    assert result.ok
    assert "HEAD" in result.output and "TAIL" in result.output
    assert "bytes cut" in result.output
    assert len(result.output) < OUTPUT_CAP + 200


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _gone(marker: str) -> bool:
    """Whether no process whose command line holds ``marker`` is left (waits up to 2 s for the kills)."""
    deadline = time.monotonic() + 2
    while _descendants_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _descendants_with(marker) == []


def test_run_bash_timeout_kills_whole_group(registry: ToolRegistry) -> None:
    # Pids are not compared: in the sandbox a command sees its own PID namespace.
    marker = f"{30 + random.random():.6f}"
    result = registry.execute("run_bash", {"command": f"sleep {marker} & sleep {marker}", "timeout": 1})
    assert not result.ok and "Timed out after 1 s" in result.output
    assert _gone(marker)


def test_run_bash_leaves_no_orphans(registry: ToolRegistry) -> None:
    marker = f"{30 + random.random():.6f}"
    result = registry.execute("run_bash", {"command": f"(sleep {marker} &) ; sleep {marker} & echo started"})
    assert result.ok and "started" in result.output
    assert _gone(marker)


def test_run_bash_cancel(registry: ToolRegistry) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = registry.execute("run_bash", {"command": "sleep 30"}, cancel=cancel)
    assert not result.ok and "Cancelled" in result.output
    assert time.monotonic() - started < 5


def test_disabled_tools_are_absent(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    reg = ToolRegistry(ws, MemoryStore(tmp_path / "m.db"), SkillManager(tmp_path / "s"), families=frozenset())
    names = [spec["function"]["name"] for spec in reg.specs()]
    assert "run_bash" not in names and "write_file" not in names
    assert {"read_file", "list_dir", "search_memory", "list_skills", "use_skill", "create_skill"} <= set(names)
    assert not reg.execute("run_bash", {"command": "touch x"}).ok
    assert not (ws / "x").exists()


def test_approver_is_consulted_and_denial_is_a_result(registry: ToolRegistry) -> None:
    seen: list[tuple[str, dict]] = []

    def deny(name: str, arguments: dict) -> bool:
        seen.append((name, arguments))
        return False

    registry.approver = deny
    result = registry.execute("write_file", {"path": "x.txt", "content": "x"})
    assert not result.ok and "denied" in result.output
    assert not (registry.workspace / "x.txt").exists()
    assert not registry.execute("run_bash", {"command": "touch y"}).ok
    assert not (registry.workspace / "y").exists()
    assert registry.execute("read_file", {"path": "notes.txt"}).ok  # reads need no approval
    assert [name for name, _ in seen] == ["write_file", "run_bash"]


def test_skill_and_memory_tools(registry: ToolRegistry) -> None:
    created = registry.execute("create_skill", {
        "name": "Deploy Flask", "description": "Deploy a Flask app", "triggers": ["deploy", "flask"],
        "body": "1. Build\n2. Ship",
    })
    assert created.ok and "deploy-flask" in created.output
    assert "deploy-flask" in registry.execute("list_skills", {}).output
    used = registry.execute("use_skill", {"name": "deploy-flask"})
    assert used.ok and "2. Ship" in used.output
    assert registry.skills.get("deploy-flask").use_count == 1
    duplicate = registry.execute("create_skill", {"name": "deploy-flask", "description": "d", "body": "b"})
    assert not duplicate.ok

    session = registry.memory.new_session()
    registry.memory.add_message(session, "user", "the zebra migration plan")
    found = registry.execute("search_memory", {"query": "zebra"})
    assert found.ok and "**zebra**" in found.output and f"session {session}" in found.output
    assert "No past messages" in registry.execute("search_memory", {"query": "unicorn"}).output


def _peak_memory(registry: ToolRegistry, command: str) -> tuple[int, str]:
    tracemalloc.start()
    try:
        result = registry.execute("run_bash", {"command": command})
        return tracemalloc.get_traced_memory()[1], result.output
    finally:
        tracemalloc.stop()


def test_run_bash_memory_stays_bounded_whatever_the_output(registry: ToolRegistry) -> None:
    just_over, _ = _peak_memory(registry, f"head -c {3 * OUTPUT_CAP} /dev/zero | tr '\\0' y")
    peak, output = _peak_memory(registry, "echo HEAD; head -c 50000000 /dev/zero | tr '\\0' y; echo; echo TAIL")
    assert output.startswith("exit code 0\nHEAD"), output[:200]
    assert output.rstrip().endswith("TAIL") and "bytes cut" in output, output[-200:]
    assert len(output) < OUTPUT_CAP + 200
    # 50 MB cost no more than 60 KB did (Popen and the result string are the fixed part of both).
    assert peak < just_over + 2 * OUTPUT_CAP, (peak, just_over)
    assert peak < 8 * OUTPUT_CAP + 64 * 1024, peak


def test_run_bash_environment_has_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-should-not-be-seen-1234")
    monkeypatch.setenv("LOOKS_HARMLESS", "web-password-value-5678")
    ws = tmp_path / "w"
    ws.mkdir()
    reg = ToolRegistry(ws, MemoryStore(tmp_path / "m.db"), SkillManager(tmp_path / "s"),
                       secrets=Secrets({"HERMES_WEB_PASSWORD": "web-password-value-5678"}))
    result = reg.execute("run_bash", {"command": "env; echo marker-$HOME"})
    assert result.ok and "marker-" in result.output
    assert "SOME_API_KEY" not in result.output and "LOOKS_HARMLESS" not in result.output
    assert "5678" not in result.output


def test_read_file_pages_by_line_with_numbers_under_the_byte_cap(registry: ToolRegistry) -> None:
    body = "".join(f"line {i:06d} é\r\n" if i % 2 else f"line {i:06d} é\n" for i in range(10_000))
    (registry.workspace / "big.txt").write_text(body, newline="")
    pieces, offset, pages = [], 1, 0
    while True:
        result = registry.execute("read_file", {"path": "big.txt", "offset": offset})
        assert result.ok
        text, _, note = result.output.partition("\n[... lines ")
        assert len(text.encode()) <= READ_CAP
        pieces += text.split("\n")
        pages += 1
        match = re.search(r"offset=(\d+)", note)
        if match is None:
            assert "end of file" in note and "of 10,000 shown" in note
            break
        offset = int(match.group(1))
    assert pieces == [f"{n + 1:>5}\tline {n:06d} é" for n in range(10_000)]  # every line once, in order
    assert pages == 5  # 2,000 lines a page (the default limit; ~44,000 bytes, under the cap)
    small = registry.execute("read_file", {"path": "big.txt", "offset": 13, "limit": 2})
    assert small.output == ("   13\tline 000012 é\n   14\tline 000013 é\n"
                            "[... lines 13-14 of 10,000 shown; call read_file with offset=15 to read on ...]")
    past = registry.execute("read_file", {"path": "big.txt", "offset": 20_000})
    assert not past.ok and "has 10,000 lines" in past.output
    (registry.workspace / "long.txt").write_text("x" * 200_000)
    long = registry.execute("read_file", {"path": "long.txt"})
    assert long.ok and len(long.output.encode()) <= READ_CAP and "198,000 more characters" in long.output
    (registry.workspace / "empty.txt").write_text("")
    assert registry.execute("read_file", {"path": "empty.txt"}).output == "empty.txt: (empty file)"


def test_cancel_reaches_the_file_tools(registry: ToolRegistry) -> None:
    cancel = threading.Event()
    cancel.set()
    for name, args in [("read_file", {"path": "notes.txt"}), ("list_dir", {}),
                       ("write_file", {"path": "new.txt", "content": "x"})]:
        result = registry.execute(name, args, cancel=cancel)
        assert not result.ok and "ancel" in result.output
    assert not (registry.workspace / "new.txt").exists()
    # Set while a tool runs: the tool itself stops (each handler checks between chunks).
    ctx = ToolContext(registry.workspace, registry.memory, registry.skills, cancel=cancel)
    assert "cancelled" in reading.read_file(ctx, "notes.txt").output
    assert "cancelled" in tools.list_dir(ctx, ".").output
    assert "not changed" in tools.write_file(ctx, "half.txt", "y" * 1_000_000).output
    assert not (registry.workspace / "half.txt").exists()  # a write is whole or nothing
    assert "not changed" in tools.write_file(ctx, "notes.txt", "y" * 1_000_000).output
    assert (registry.workspace / "notes.txt").read_text() == "hello notes\n"
    assert sorted(p.name for p in registry.workspace.iterdir() if p.name.startswith(".")) == []  # no temp left


def _command_lines(marker: str) -> set[str]:
    lines = set()
    for pid in _descendants_with(marker):
        try:
            lines.add(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            pass
    return lines


def _descendants_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace") and _alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@on_wire("openai")
def test_run_bash_children_die_with_a_killed_hermes(fake_llm_env, hermes_home: Path, workspace: Path) -> None:
    marker = f"{60 + random.random():.6f}"  # unique sleep durations identify our processes
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": f"sleep {marker} & sleep {marker}1"})]))
    hermes = subprocess.Popen([HERMES_TUI, "-p", "run it", "--yes"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        sleeps = {f"sleep\0{marker}\0", f"sleep\0{marker}1\0"}  # exact command lines of the two sleeps
        deadline = time.monotonic() + 60
        while not sleeps <= _command_lines(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeps <= _command_lines(marker), "the command never started"
    finally:
        hermes.kill()  # SIGKILL: no handler of Hermes runs
        hermes.wait()
    deadline = time.monotonic() + 2
    while _descendants_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _descendants_with(marker) == []
