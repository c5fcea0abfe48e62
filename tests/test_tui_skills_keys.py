"""Keys in and around the Skills pane, as raw terminal bytes at 80×24 and 140×45 (#23 items 11, 17).

* PgDn/PgUp scroll the preview and the F7 diff from the filter box and the list.
* F7 is about one skill: highlighting another shows that skill's preview again.
* No key is lost outside the prompt: letters after shift+Tab reach the prompt, Backspace edits the
  skills filter from the list, and F7 pressed while the pane is still loading its list is kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Markdown

from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.skills_pane import SkillsPane
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.tui_harness import run, server, type_bytes, wait_for

__all__ = ["server"]
SIZES = [(80, 24), (140, 45)]
F3, F7, F10 = "\x1bOR", "\x1b[18~", "\x1b[21~"
PAGE_DOWN, PAGE_UP, DOWN, BACKSPACE, SHIFT_TAB = "\x1b[6~", "\x1b[5~", "\x1b[B", "\x7f", "\x1b[Z"
LONG_BODY = "\n\n".join(f"{n}. Step number {n} of the long procedure." for n in range(1, 61))


def seed(home: Path) -> SkillManager:
    skills = SkillManager(home / "skills")
    skills.create("short-one", "A short skill.", ["short"], "1. Only step.")
    skills.create("long-procedure", "A procedure with many steps.", ["procedure"],
                  LONG_BODY.replace("Step number", "Step"))
    skills.refine("long-procedure", body=LONG_BODY)  # a version whose diff is long too
    return skills


def pane_of(app: HermesApp) -> SkillsPane:
    return app.query_one(SkillsPane)


def preview_source(app: HermesApp) -> str:
    return pane_of(app).query_one("#skills-preview-body", Markdown).source


def shown_in_preview(app: HermesApp, text: str) -> bool:
    """Is the preview block that says ``text`` inside the preview's viewport (not scrolled away)?"""
    from textual.errors import NoWidget
    from textual.widgets._markdown import MarkdownBlock

    pane = pane_of(app)
    view = pane.query_one("#skills-preview", VerticalScroll)
    for block in pane.query(MarkdownBlock):
        if text in getattr(getattr(block, "_content", None), "plain", ""):
            try:
                region = app.screen.find_widget(block).region
            except NoWidget:
                return False
            return view.content_region.contains_region(region)
    return False


async def open_skills(app: HermesApp, pilot: Pilot) -> SkillsPane:
    type_bytes(app, F3)
    await wait_for(pilot, lambda: app.query(SkillsPane) and pane_of(app).selected is not None
                   and app.focused is pane_of(app).query_one("#skills-filter", Input))
    await pilot.pause()
    return pane_of(app)


@pytest.mark.parametrize("size", SIZES)
def test_page_keys_scroll_the_preview_and_the_diff_to_the_bottom(server: FakeLLMServer, hermes_home: Path,
                                                                  size: tuple[int, int]) -> None:
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        pane = await open_skills(app, pilot)
        view = pane.query_one("#skills-preview", VerticalScroll)
        assert pane.selected.name == "long-procedure"
        await wait_for(pilot, lambda: view.max_scroll_y > 0)
        assert not shown_in_preview(app, "Step number 60 of")
        for _ in range(40):  # from the filter box, which keeps the focus (letters still filter)
            if view.scroll_y >= view.max_scroll_y:
                break
            type_bytes(app, PAGE_DOWN)
            await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        assert shown_in_preview(app, "Step number 60 of")
        assert app.focused is pane.query_one("#skills-filter", Input)
        type_bytes(app, PAGE_UP)
        await wait_for(pilot, lambda: view.scroll_y < view.max_scroll_y)
        pane.query_one("#skills-table", DataTable).focus()  # from the list too (its own PgDn moves rows)
        type_bytes(app, F7)
        await wait_for(pilot, lambda: "versions" in preview_source(app))
        await wait_for(pilot, lambda: view.max_scroll_y > 0)
        row = pane.query_one("#skills-table", DataTable).cursor_row
        for _ in range(40):
            if view.scroll_y >= view.max_scroll_y:
                break
            type_bytes(app, PAGE_DOWN)
            await pilot.pause()
        assert view.scroll_y == view.max_scroll_y and pane.query_one("#skills-table", DataTable).cursor_row == row

    run(scenario, size=size)


@pytest.mark.parametrize("size", SIZES)
def test_moving_to_another_skill_ends_the_versions_view(server: FakeLLMServer, hermes_home: Path,
                                                        size: tuple[int, int]) -> None:
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await open_skills(app, pilot)
        type_bytes(app, F7)
        await wait_for(pilot, lambda: "long-procedure: versions" in preview_source(app))
        type_bytes(app, DOWN)  # the next skill: its preview, not its versions
        await wait_for(pilot, lambda: "## short-one" in preview_source(app))
        assert "versions" not in preview_source(app)
        type_bytes(app, "\x1b[A")  # and back: the preview of the first skill, F7 is off
        await wait_for(pilot, lambda: "## long-procedure\n" in preview_source(app))
        assert "versions" not in preview_source(app)
        type_bytes(app, F7 + F7)  # F7 still toggles
        await pilot.pause()
        assert "versions" not in preview_source(app)

    run(scenario, size=size)


@pytest.mark.parametrize("size", SIZES)
def test_letters_typed_after_shift_tab_reach_the_prompt(server: FakeLLMServer, workspace: Path,
                                                       size: tuple[int, int]) -> None:
    (workspace / "notes.txt").write_text("first line\n")
    server.queue(Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "look\r")
        await wait_for(pilot, lambda: len(server.requests) == 2 and not app.chat.busy)
        await wait_for(pilot, lambda: app.chat.conversation.query(".tool-output"))
        type_bytes(app, SHIFT_TAB)  # to the tool output's title
        await wait_for(pilot, lambda: not app.chat.prompt.has_focus)
        type_bytes(app, "more please")
        await wait_for(pilot, lambda: app.chat.prompt.text == "more please")
        assert app.focused is app.chat.prompt

    run(scenario, size=size)


@pytest.mark.parametrize("size", SIZES)
def test_backspace_in_the_skills_list_edits_the_filter(server: FakeLLMServer, hermes_home: Path,
                                                      size: tuple[int, int]) -> None:
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        pane = await open_skills(app, pilot)
        box = pane.query_one("#skills-filter", Input)
        type_bytes(app, "shortx")
        await wait_for(pilot, lambda: box.value == "shortx")
        pane.query_one("#skills-table", DataTable).focus()  # a click on the list, or Tab
        await pilot.pause()
        type_bytes(app, BACKSPACE)
        await wait_for(pilot, lambda: box.value == "short" and app.focused is box)
        await wait_for(pilot, lambda: pane.selected is not None and pane.selected.name == "short-one")

    run(scenario, size=size)


@pytest.mark.parametrize("size", SIZES)
def test_f7_pressed_while_the_skills_pane_loads_is_kept(server: FakeLLMServer, hermes_home: Path,
                                                       size: tuple[int, int]) -> None:
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.stores.opened)
        with app.skills._lock:  # the list stays loading (a big library's first index)
            type_bytes(app, F3)
            await wait_for(pilot, lambda: app.query(SkillsPane)
                           and app.focused is pane_of(app).query_one("#skills-filter", Input))
            assert pane_of(app).selected is None  # still loading
            type_bytes(app, F7)
            await pilot.pause()
        await wait_for(pilot, lambda: "long-procedure: versions" in preview_source(app))

    run(scenario, size=size)


@pytest.mark.parametrize("size", SIZES)
def test_keys_typed_with_the_pane_key_in_one_burst_reach_the_pane(server: FakeLLMServer, hermes_home: Path,
                                                                  size: tuple[int, int]) -> None:
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.stores.opened)
        type_bytes(app, F3 + "short" + F7)
        await wait_for(pilot, lambda: "short-one: versions" in preview_source(app) if app.query(SkillsPane) else False)
        assert pane_of(app).query_one("#skills-filter", Input).value == "short"
        assert app.chat.prompt.text == ""

    run(scenario, size=size)


def test_a_pane_still_composing_has_no_selection(tmp_path: Path) -> None:
    """Keys and the tests' waits read the selection as soon as the pane exists: before its tables
    are mounted that is none, not a NoMatches from inside an action."""
    with MemoryStore(tmp_path / "memory.sqlite3") as memory:
        pane = SkillsPane(memory=memory, skills=seed(tmp_path))
        assert pane.selected is None and pane.selected_held is None


@pytest.mark.parametrize(("answers", "left"), [
    ("\r\r", ["long-procedure", "short-one"]),  # Enter on Cancel, twice
    ("y\r", ["short-one"]),  # yes, then an Enter that used to answer no as well
])
def test_answers_typed_faster_than_the_question_closes_answer_it_once(server: FakeLLMServer, hermes_home: Path,
                                                                      answers: str, left: list[str]) -> None:
    """F10 asks before deleting; answers in one burst of bytes (a paste, a key held down) all reach
    the question before it is gone. The first one answers; the rest used to answer again and close
    the chat's own screen underneath, which ended the app ("Can't pop screen")."""
    seed(hermes_home)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        pane = await open_skills(app, pilot)
        type_bytes(app, F10)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen)  # Cancel has the focus
                       and app.focused is app.screen.query_one("#confirm-no"))
        confirm = app.screen
        type_bytes(app, answers)
        await wait_for(pilot, lambda: app.screen is not confirm)
        for _ in range(5):
            await pilot.pause()
        assert app.return_code is None and not isinstance(app.screen, ConfirmScreen)
        assert pane_of(app) is pane and app.focused is not None
        assert [skill.name for skill in app.skills.list()] == left

    run(scenario)
