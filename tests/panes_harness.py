"""One pane at a time in a bare app, on real stores."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, OptionList
from textual.worker import WorkerState

from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.schema import SKILL_FILE, Skill, render_skill
from hermes_tui.tui.memory_pane import MemoryPane
from hermes_tui.tui.messages import EditSkill, OpenTranscript, ResumeSession, UseSkill
from hermes_tui.tui.sessions_pane import SessionsPane
from hermes_tui.tui.skills_pane import SkillsPane

SIZE = (100, 30)


T0 = 1_748_770_200.0  # 2025-06-01 09:30 UTC


ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x1b\\"  # set the clipboard, set the window title


@dataclass
class Stores:
    memory: MemoryStore
    skills: SkillManager
    skills_dir: Path
    sessions: dict[str, int]
    message_ids: dict[str, int]


def write_skill(skills_dir: Path, skill: Skill) -> Path:
    """A SKILL.md as Hermes writes it, but with fixed times (the manager would stamp now)."""
    folder = skills_dir / skill.name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SKILL_FILE
    path.write_text(render_skill(skill), encoding="utf-8")
    return path


SKILLS = [
    Skill(
        "deploy-flask-to-railway",
        "Deploy a Flask app to Railway with gunicorn and a Procfile.",
        ["ship the web app to production", "railway deploy"],
        "1. Add `gunicorn` to requirements.txt.\n2. Write a Procfile: `web: gunicorn app:app`.\n"
        "3. Run `railway up` and check the logs.",
        version=3, use_count=7, created=T0 - 86_400 * 9, updated=T0 - 86_400 * 2,
    ),
    Skill(
        "csv-cleanup",
        "Clean a messy CSV with pandas: fix headers, drop duplicate rows, normalise dates.",
        ["tidy a spreadsheet", "dedupe rows"],
        "## Steps\n\n- Load with `pd.read_csv`.\n- Normalise the headers.\n- `drop_duplicates()`.",
        version=1, use_count=2, created=T0 - 86_400 * 5, updated=T0 - 86_400 * 5,
    ),
    Skill(
        "git-bisect-regression",
        "Find the commit that introduced a regression with git bisect run and a test script.",
        ["find the bad commit", "what broke the build"],
        "Write a script that exits 1 on the bug, then `git bisect run ./check.sh`.",
        version=2, use_count=0, created=T0 - 86_400, updated=T0 - 3600,
    ),
]


def seed_memory(memory: MemoryStore) -> tuple[dict[str, int], dict[str, int]]:
    """Three sessions with fixed times; returns session ids and interesting message ids."""
    sessions: dict[str, int] = {}
    ids: dict[str, int] = {}

    deploy = memory.new_session("tui")
    memory.bulk_add_messages(deploy, [
        {"role": "user", "content": "How do I deploy my Flask app to Railway?", "created": T0},
        {"role": "assistant", "content": None, "created": T0 + 5, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "requirements.txt"}'}}]},
        {"role": "tool", "content": ESCAPES + "\x1b[32mflask==3.0\x1b[0m\nrequests\n", "tool_call_id": "c1",
         "name": "read_file",
         "created": T0 + 6},
        {"role": "assistant", "content": "Add **gunicorn**, write a `Procfile`, then run `railway up`.",
         "created": T0 + 9},
    ])
    memory.set_summary(deploy, "Deployed a Flask app to Railway with gunicorn; fixed the PORT binding.")
    sessions["deploy"] = deploy

    csv = memory.new_session("tui", title="CSV cleanup")
    memory.bulk_add_messages(csv, [
        {"role": "user", "content": "Clean up sales.csv, the dates are a mess [bold]x and NEAR( stuff",
         "created": T0 + 3600},
        {"role": "assistant", "content": "Done: normalised 1,204 dates and dropped 17 duplicate rows.",
         "created": T0 + 3660},
    ])
    sessions["csv"] = csv

    long = memory.new_session("web")
    rows = []
    for i in range(30):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"\x1b[1mStep {i}\x1b[0m: checking the build log, line {i * 10}."
        if i == 21:
            text = "Found it: the zebra fixture was renamed, so the regression test imported nothing."
        rows.append({"role": role, "content": text, "created": T0 + 7200 + 60 * i})
    memory.bulk_add_messages(long, rows)
    sessions["long"] = long

    conn = sqlite3.connect(memory.path)
    with conn:
        for offset, session_id in enumerate((deploy, csv, long)):
            started = T0 + 3600 * offset
            conn.execute("UPDATE sessions SET started = ?, last_activity = ? WHERE id = ?",
                         (started, started + 1800, session_id))
        for name, pattern in (("zebra", "%zebra%"), ("bold", "%[bold]x%"), ("answer", "Add **gunicorn**%")):
            ids[name] = conn.execute("SELECT id FROM messages WHERE content LIKE ?", (pattern,)).fetchone()[0]
    conn.close()
    return sessions, ids


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stores]:
    """Seeded stores; local time is UTC meanwhile, so dates on screen are the same everywhere."""
    original_tz = os.environ.get("TZ")
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    skills_dir = tmp_path / "skills"
    for skill in SKILLS:
        write_skill(skills_dir, skill)
    broken = skills_dir / "broken-skill"
    broken.mkdir()
    (broken / SKILL_FILE).write_text("---\nname: broken-skill\ndescription: [unclosed\n---\nbody\n")
    memory = MemoryStore(tmp_path / "memory.sqlite3")
    sessions, ids = seed_memory(memory)
    yield Stores(memory, SkillManager(skills_dir), skills_dir, sessions, ids)
    memory.close()
    if original_tz is None:  # monkeypatch restores the variable later; tzset must see it now
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = original_tz
    time.tzset()


P = TypeVar("P", SkillsPane, MemoryPane, SessionsPane)


class PaneApp(App[None], Generic[P]):
    """One pane, a footer, and a record of every pane message that reached the app."""

    def __init__(self, pane_type: type[P], stores: Stores) -> None:
        super().__init__()
        self.pane: P = pane_type(memory=stores.memory, skills=stores.skills, id="pane")
        self.posted: list[tuple[object, ...]] = []
        """Each pane message that reached the app, as (type, payload...)."""

    def compose(self) -> ComposeResult:
        yield self.pane
        yield Footer()

    def on_mount(self) -> None:
        for box in self.query(Input):
            box.cursor_blink = False  # a blinking cursor would make snapshots flaky
        self.pane.focus_main()

    def on_use_skill(self, message: UseSkill) -> None:
        self.posted.append((UseSkill, message.name))

    def on_edit_skill(self, message: EditSkill) -> None:
        self.posted.append((EditSkill, message.name))

    def on_open_transcript(self, message: OpenTranscript) -> None:
        self.posted.append((OpenTranscript, message.session_id, message.message_id))

    def on_resume_session(self, message: ResumeSession) -> None:
        self.posted.append((ResumeSession, message.session_id))


async def settle(pilot: Pilot[None]) -> None:
    """Wait until no worker runs, every message they caused has been handled, and every table has
    measured its rows.

    Polls rather than awaiting the workers: an exclusive worker may be cancelled by a newer one.
    A ``DataTable`` measures rows added to it on its own next Idle, not in ``add_row``: a
    screenshot before that shows its columns as wide as their headers (it failed so once in CI).
    """
    for _ in range(1000):
        await pilot.pause()
        if not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in pilot.app.workers):
            await pilot.pause()
            if all(_measured(table) for table in pilot.app.screen.query(DataTable)):
                return
        await asyncio.sleep(0.01)
    raise AssertionError("workers did not settle within 10 s")


def _measured(table: DataTable) -> bool:
    return not (table._require_update_dimensions or table._updated_cells)  # no public flag


def run(app: PaneApp, scenario: Callable[[Pilot[None]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await scenario(pilot)

    asyncio.run(main())


def hit_prompt(pane: Widget, index: int = 0) -> Content:
    prompt = pane.query_one(OptionList).get_option_at_index(index).prompt
    assert isinstance(prompt, Content)
    return prompt
