"""Long work shows its progress (issue 23, item 14): the memory upgrade's reindex, a first index
of a big skills library, ``skills import`` and ``doctor`` report through one seam
(hermes_tui/progress.py); a terminal's stderr gets a percentage with the time left, a pipe gets
nothing, and the TUI draws a bar while the work runs on its worker thread."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from textual.widgets import ProgressBar

from hermes_tui.config import Config
from hermes_tui.memory.doctor import check, repair
from hermes_tui.memory.schema import REINDEX_CHUNK
from hermes_tui.memory.store import MemoryStore
from hermes_tui.progress import Tally, TerminalProgress, time_left
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.progress_bar import ProgressPanel, ProgressReport
from tests.fakes.server import FakeLLMServer, Reply
from tests.helpers import HERMES_TUI, cli, old_memory_store
from tests.memory_harness import pages_of, seeded, smash
from tests.pty_harness import Terminal, terminal_env  # noqa: F401 - a fixture
from tests.tui_harness import run, wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


@dataclass
class Recorder:
    """A ``Progress`` that keeps every call."""

    calls: list[tuple[str, object]] = field(default_factory=list)

    def start(self, label: str, total: int) -> None:
        self.calls.append(("start", (label, total)))

    def advance(self, n: int = 1) -> None:
        self.calls.append(("advance", n))

    def done(self) -> None:
        self.calls.append(("done", None))

    def runs(self) -> list[tuple[str, int, int]]:
        """(label, total, sum of advances) of each start..done."""
        out: list[tuple[str, int, int]] = []
        for kind, value in self.calls:
            if kind == "start":
                label, total = value
                out.append((label, total, 0))
            elif kind == "advance":
                label, total, done = out[-1]
                out[-1] = (label, total, done + value)
        assert [k for k, _ in self.calls if k != "advance"] == ["start", "done"] * len(out), self.calls
        return out


# --------------------------------------------------------------------------- the seam


def test_the_time_left_comes_from_the_injected_clock() -> None:
    tally = Tally("Reindexing", 1000, started=100.0)
    assert tally.seconds_left(100.0) is None  # no rate yet
    tally.completed = 250
    assert tally.seconds_left(130.0) == pytest.approx(90.0)  # 250 in 30 s: 750 more take 90 s
    assert tally.line(130.0) == "Reindexing   25% · about 1 m 30 s left"
    assert tally.line(130.0, finished=True) == "Reindexing   25% · took 30 s"
    assert [time_left(s) for s in (0.2, 59.0, 61.0, 3725.0)] == ["1 s", "59 s", "1 m 01 s", "1 h 02 m"]


def test_the_terminal_line_is_redrawn_in_place_at_most_five_times_a_second() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = TerminalProgress(stream, clock=lambda: now[0])
    progress.start("Indexing", 100)
    for _ in range(10):  # ten reports within 0.1 s: not one redraw
        now[0] += 0.01
        progress.advance(1)
    assert stream.getvalue() == "\rIndexing    0%"
    now[0] = 1.0
    progress.advance(40)  # 50 done in 1 s
    assert stream.getvalue().endswith("\rIndexing   50% · about 1 s left")
    now[0] = 3.0
    progress.done()
    assert stream.getvalue().endswith("\rIndexing   50% · took 3 s      \n")  # the longer line is wiped


CHILD = """
import sys
from hermes_tui.progress import for_stderr
now = [0.0]
progress = for_stderr(sys.stderr, clock=lambda: now[0])
progress.start("Reindexing the memory store", 1000)
for _ in range(4):
    now[0] += 10.0
    progress.advance(100)
now[0] += 10.0
progress.done()
print("finished")
"""


def test_a_terminals_stderr_shows_the_percentage_and_the_time_left() -> None:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).parents[1]))}
    term = Terminal([sys.executable, "-c", CHILD], env)
    try:
        assert term.process.wait(60) == 0
        term.wait_for(lambda out: b"finished" in out, timeout=5)
    finally:
        term.close()
    text = term.seen().decode("utf-8", "replace")
    assert "\rReindexing the memory store   10% · about 1 m 30 s left" in text  # 100 in 10 s
    assert "\rReindexing the memory store   40% · about 1 m 00 s left" in text  # 400 in 40 s
    assert "Reindexing the memory store   40% · took 50 s" in text


def test_a_pipe_gets_no_progress() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0 and done.stdout == "finished\n"
    assert done.stderr == ""


# --------------------------------------------------------------------------- the four operations


def write_version_6_store(path: Path, messages: int) -> None:
    """A file as schema 6 left it (before tool arguments were indexed), with many messages."""
    conn = old_memory_store(path, 6)
    conn.execute("INSERT INTO sessions (source, started, last_activity) VALUES ('tui', 1, 1)")
    calls = json.dumps([{"id": "c", "type": "function",
                         "function": {"name": "run_bash", "arguments": '{"command": "wc -l notes.txt"}'}}])
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO messages (session_id, role, content, tool_calls, created) VALUES (1, ?, ?, ?, 1)",
                     [("assistant", f"note {n} about quokkas", calls if n % 1000 == 0 else None)
                      for n in range(messages)])
    conn.execute("COMMIT")
    conn.close()


def test_the_schema_upgrade_reports_its_reindex(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    count = 2 * REINDEX_CHUNK + 7
    write_version_6_store(path, count)
    progress = Recorder()
    with MemoryStore(path, progress=progress) as store:
        assert progress.runs() == [("Reindexing the memory store", count, count)]
        assert [n for kind, n in progress.calls if kind == "advance"] == [REINDEX_CHUNK, REINDEX_CHUNK, 7]
        with store._read() as conn:  # every message indexed, once
            assert conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokkas'"
                                ).fetchone() == (count,)
            assert conn.execute("SELECT count(*) FROM messages_fts_docsize").fetchone() == (count,)
        assert len(store.search("wc", limit=100)) == count // 1000 + 1  # with the new column
    with MemoryStore(path, progress=progress):
        assert len(progress.runs()) == 1  # an upgraded store is not reindexed again


def test_doctor_reports_its_check_and_its_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    seeded(path)  # 600 messages in 3 sessions
    progress = Recorder()
    assert check(path, progress).healthy
    assert progress.runs() == [("Checking the memory store", 4, 4)]  # the file 1, the message index 3
    smash(path, pages_of(path, "messages", "leaf")[2])
    progress = Recorder()
    assert repair(path, progress).backup is not None
    checked, rebuilt = progress.runs()
    assert checked[0] == "Checking the memory store"
    # every rowid range of the readable tables: 3 sessions, 600 messages
    assert rebuilt == ("Rebuilding the memory store", 603, 603)


def library(root: Path, count: int, prefix: str = "skill") -> Path:
    for n in range(count):
        folder = root / f"{prefix}-{n:03d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {prefix}-{n:03d}\ndescription: Deploy service {n} to staging\n---\n"
            f"1. Build service {n}.\n2. Deploy it.\n", encoding="utf-8")
    return root


def test_skills_import_on_a_terminal_shows_progress_and_on_a_pipe_none(
        tmp_path: Path, hermes_home: Path, workspace: Path) -> None:
    source = library(tmp_path / "lib", 60)
    term = Terminal([HERMES_TUI, "skills", "import", str(source)], dict(os.environ))
    try:
        assert term.process.wait(120) == 0
        term.wait_for(lambda out: b"imported 60" in out, timeout=5)
    finally:
        term.close()
    text = term.seen().decode("utf-8", "replace")
    assert "\rImporting skills from lib    0%" in text and "\rImporting skills from lib  100% · took" in text

    again = cli("skills", "import", str(library(tmp_path / "more", 60, "other")))
    assert again.returncode == 0 and again.stdout.startswith("imported 60")
    assert again.stderr == ""  # a pipe: no percentage, no carriage returns


def test_doctor_on_a_terminal_shows_progress(tmp_path: Path, hermes_home: Path, workspace: Path) -> None:
    with MemoryStore(Config.load().db_path) as store:
        sid = store.new_session(title="notes")
        store.bulk_add_messages(sid, [{"role": "user", "content": f"note {n}"} for n in range(3000)])
    term = Terminal([HERMES_TUI, "doctor"], dict(os.environ))
    try:
        assert term.process.wait(120) == 0
        term.wait_for(lambda out: b": ok (1 sessions" in out, timeout=5)
    finally:
        term.close()
    assert "Checking the memory store  100% · took" in term.seen().decode("utf-8", "replace")
    piped = cli("doctor")
    assert piped.returncode == 0 and piped.stderr == ""


def test_headless_on_a_terminal_shows_the_reindex_and_on_a_pipe_only_the_notice(
        terminal_env: tuple[FakeLLMServer, dict[str, str]], hermes_home: Path, tmp_path: Path) -> None:
    server, env = terminal_env
    write_version_6_store(Config.load().db_path, 2 * REINDEX_CHUNK)
    server.queue(Reply(text="done-marker"))
    term = Terminal([HERMES_TUI, "-p", "hello"], env)
    try:
        assert term.process.wait(120) == 0
        term.wait_for(lambda out: b"done-marker" in out, timeout=5)
    finally:
        term.close()
    text = term.seen().decode("utf-8", "replace")
    assert "Upgrading the memory store" in text and "\rReindexing the memory store    0%" in text
    assert "\rReindexing the memory store  100% · took" in text

    old = tmp_path / "old.sqlite3"
    write_version_6_store(old, 2 * REINDEX_CHUNK)
    shutil.copy(old, Config.load().db_path)  # the same upgrade again, stderr a pipe
    server.queue(Reply(text="done-marker"))
    piped = subprocess.run([HERMES_TUI, "-p", "hello"], capture_output=True, text=True, env=env, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert piped.returncode == 0 and "done-marker" in piped.stdout
    assert "Upgrading the memory store" in piped.stderr  # the one line announcing it
    assert "Reindexing" not in piped.stderr and "\r" not in piped.stderr and "%" not in piped.stderr


# --------------------------------------------------------------------------- the TUI


Drawn = tuple[str, "float | None", "float | None", str]  # label, the bar's total and progress, the text


def run_recording(monkeypatch: pytest.MonkeyPatch) -> list[Drawn]:
    """Run the app until its stores are open and its last report is handled; what it drew after
    each report, recorded as it handled them (no timing involved)."""
    drawn: list[Drawn] = []
    handle = HermesApp.on_progress_report

    async def recorded(app: HermesApp, message: ProgressReport) -> None:
        await handle(app, message)
        bars = app.query(ProgressBar)
        text = str(app.query_one("#progress-text").render()) if bars else ""
        drawn.append((message.label, bars.first().total if bars else None,
                      bars.first().progress if bars else None, text))

    monkeypatch.setattr(HermesApp, "on_progress_report", recorded)

    async def scenario(app: HermesApp, pilot) -> None:
        await wait_for(pilot, lambda: app.stores.opened and drawn and drawn[-1][1] is None, timeout=120)
        await pilot.pause()
        assert not app.query(ProgressPanel)  # gone when done

    run(scenario)
    return drawn


def assert_shown(drawn: list[Drawn], label: str, total: int) -> None:
    """While the work ran, a bar of ``total`` moved forward with the percentage and the time left."""
    during = [d for d in drawn if d[0] == label and d[1] is not None]
    assert during and all(bar_total == total for _, bar_total, _, _ in during), drawn
    progress = [p for _, _, p, _ in during]
    assert progress == sorted(progress) and any(0 < p < total for p in progress)
    assert any("% · about" in text and "left" in text for *_, text in during)


def test_the_tui_shows_a_bar_while_a_first_skills_index_runs(
        hermes_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library(hermes_home / "skills", 300)
    drawn = run_recording(monkeypatch)
    assert {label for label, *_ in drawn} == {"Indexing the skills library"}
    assert_shown(drawn, "Indexing the skills library", 300)


def test_the_tui_shows_a_bar_while_an_old_store_is_reindexed(
        hermes_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hermes_home.mkdir()
    count = 3 * REINDEX_CHUNK
    write_version_6_store(Config.load().db_path, count)
    drawn = run_recording(monkeypatch)
    assert {label for label, *_ in drawn} == {"Reindexing the memory store"}
    assert_shown(drawn, "Reindexing the memory store", count)
