"""Rendering: long answers split over several Markdown widgets (same text, no cut inside code)
and fold far from the view; simple lists are one widget that looks like Textual's own, other
lists grow in place; wide code lines scroll with a visible scrollbar; the transcript pages by
screen."""

from __future__ import annotations

import asyncio
import gc
import weakref

from rich.style import Style as RichStyle
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.selection import Selection
from textual.widget import Widget
from textual.widgets import Label, Markdown, OptionList
from textual.widgets._markdown import MarkdownBlock, MarkdownBullet, MarkdownFence, MarkdownList

from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.lists import SimpleBulletList
from hermes_tui.tui.splitter import BlockSplitter
from hermes_tui.tui.tables import AlignedTableContent
from hermes_tui.tui.transcript import TranscriptScreen
from tests.fakes.server import FakeLLMServer, Reply
from tests.panes_harness import PaneApp, SessionsPane, Stores, settle, stores
from tests.panes_harness import run as run_pane
from tests.tui_harness import conversation, run, send_and_wait, server, type_bytes, wait_for

__all__ = ["server", "stores"]


def long_answer(paragraphs: int) -> str:
    parts = []
    for n in range(paragraphs):
        parts.append(f"Paragraph {n}: " + " ".join(f"w{n}x{i}" for i in range(40)))
        if n % 5 == 0:
            parts.append("```python\n" + "\n\n".join(f"line_{n}_{i} = {i}" for i in range(4)) + "\n```")
    return "\n\n".join(parts) + "\n"


def test_the_splitter_cuts_only_between_paragraphs_outside_code() -> None:
    text = long_answer(120)
    for size in (1, 13, 500, len(text)):
        splitter = BlockSplitter(1_000)
        blocks = [""]
        for start in range(0, len(text), size):
            first, *rest = splitter.feed(text[start:start + size])
            blocks[-1] += first
            blocks += rest
        assert "".join(blocks) == text
        assert len(blocks) > 5
        assert all(block.count("```") % 2 == 0 for block in blocks)  # never inside a fence
        assert all(block.endswith("\n\n") for block in blocks[:-1])


def test_a_long_answer_streams_into_several_widgets(server: FakeLLMServer) -> None:
    text = long_answer(200)  # ~55k characters
    server.queue(Reply(text=text, chunk_size=200))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "a long one")
        answers = conversation(app, AnswerText)
        assert len(answers) >= 8
        assert "".join(a.source for a in answers) == text
        assert max(len(a.source) for a in answers) < 6_000

    run(scenario)


def test_a_wide_code_line_scrolls_with_a_visible_bar(server: FakeLLMServer) -> None:
    wide = "x = '" + "abcdefghij" * 40 + "'"
    server.queue(Reply(text=f"Here:\n\n```python\n{wide}\n```\n"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "wide")
        fence = conversation(app, AnswerText)[0].query_one(MarkdownFence)
        await wait_for(pilot, lambda: fence.max_scroll_x > 300)
        await pilot.pause()
        assert fence.show_horizontal_scrollbar and fence.scrollbar_size_horizontal == 1  # visibly cut

    run(scenario)


def test_the_transcript_pages_by_screen(stores: Stores) -> None:
    app = PaneApp(SessionsPane, stores)

    async def scenario(pilot: Pilot[None]) -> None:
        screen = TranscriptScreen(stores.memory, stores.sessions["long"])
        await app.push_screen(screen)
        await settle(pilot)
        messages = screen.query_one("#transcript-messages", OptionList)
        page = messages.scrollable_content_region.height
        assert messages.max_scroll_y > page
        start = messages.scroll_y
        await pilot.press("pagedown")
        await pilot.pause()
        assert messages.scroll_y - start == min(page, messages.max_scroll_y - start)
        await pilot.press("pageup")
        await pilot.pause()
        assert messages.scroll_y == start

    run_pane(app, scenario)


def test_answers_far_above_the_view_fold_and_come_back_when_scrolled_to(server: FakeLLMServer) -> None:
    """An answer far out of view keeps its height but not its block widgets (every layout walks
    every widget); scrolling back rebuilds it, a new width rebuilds the folded ones at their new
    heights, and scrolling away folds them again."""
    text = long_answer(200)  # ~55k characters, ~10 widgets
    server.queue(Reply(text=text, chunk_size=400))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "a long one")
        view = app.chat.conversation
        # The turn is over (busy is off) before the far answers are folded (once laid out): wait.
        await wait_for(pilot, lambda: conversation(app, AnswerText)[0].folded)
        answers = conversation(app, AnswerText)
        folded = [a for a in answers if a.folded]
        assert answers[0] in folded and answers[-1] not in folded
        assert all(not a.children for a in folded)
        heights = [a.outer_size.height for a in answers]
        assert all(h > 10 for h in heights)
        assert "".join(a.source for a in answers) == text  # nothing of the text is lost

        view.scroll_home(animate=False)
        await wait_for(pilot, lambda: not answers[0].folded and answers[0].children)
        await pilot.pause()
        assert [a.outer_size.height for a in answers] == heights  # nothing moved
        assert "Paragraph 0:" in answers[0].query("MarkdownParagraph").first().source

        # Scrolled home, the far end folded; a new width re-wraps every line, so folded answers
        # are rebuilt: their heights follow the narrower text (a kept height would be wrong).
        await wait_for(pilot, lambda: answers[-1].folded)
        await pilot.resize_terminal(70, 30)
        await wait_for(pilot, lambda: answers[-1].outer_size.height > heights[-1] and answers[0].children)

        # Scrolling away folds it again, and folding frees the widgets: nothing of Textual's (its
        # caches) keeps them alive.
        blocks = [weakref.ref(w) for w in answers[0].walk_children()]
        assert len(blocks) >= 5
        view.scroll_end(animate=False)
        await wait_for(pilot, lambda: answers[0].folded)
        await pilot.pause()
        gc.collect()
        assert [ref() for ref in blocks if ref() is not None] == []

    run(scenario)


def test_far_answers_fold_after_end_even_when_a_layout_moves_the_view_first(server: FakeLLMServer) -> None:
    """``scroll_end`` (the End key) anchors the view again; a layout before its deferred scroll
    moves the view with ``set_reactive``, which no ``scroll_y`` watcher hears, and the scroll
    then changes nothing. The far answers still fold (this once left them unfolded for good)."""
    server.queue(Reply(text=long_answer(200), chunk_size=400))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "a long one")
        view = app.chat.conversation
        answers = conversation(app, AnswerText)
        await wait_for(pilot, lambda: answers[0].folded)
        view.scroll_home(animate=False)
        await wait_for(pilot, lambda: not answers[0].folded and answers[0].children and answers[-1].folded)
        await pilot.pause()
        view.scroll_end(animate=False)
        view.refresh(layout=True)  # laid out before the deferred scroll: the anchor moves the view
        await wait_for(pilot, lambda: answers[0].folded)
        assert view.scroll_y == view.max_scroll_y and not answers[-1].folded

    run(scenario)


GROWING_TEXT = (
    "Intro paragraph.\n\n"
    + "".join(f"- bullet {i} with `code{i}` and *stress*\n" for i in range(6))
    + "  continued lazily\n\n"
    + "".join(f"{i}. step {i}\n" for i in range(1, 13))  # the numbers widen at 10
    + "\n- outer\n  - nested a\n  - nested b\n- outer again\n\n"
    + "```python\n" + "".join(f"value_{i} = compute({i})\n" for i in range(8)) + "```\n\n"
    + "    indented code\n    more\n\nThe end.\n"
)


LISTS_TEXT = (
    "Intro.\n\n"
    + "".join(f"- item {i} with `code{i}`, *stress*, **bold** and [a link](https://example.com/{i})"
              + " more words" * (i % 3 * 4) + "\n" for i in range(5))
    + "\n" + "".join(f"{i}. step {i}\n" for i in range(7, 12))  # numbers of two widths
    + "\n- outer\n  - nested a, long enough to wrap at the narrower width\n    1. deeper\n    2. and numbered\n"
    + "  - nested b\n- outer again\n\nBetween.\n\n- \n- after an empty item\n\nAnd.\n\n"
    + "- an item with code:\n\n  ```\n  x = 1\n  ```\n- and text\n\nThe end.\n"
)


class StockMarkdown(Markdown):
    """Textual's Markdown as it comes."""


class OurMarkdown(Markdown):
    BLOCKS = AnswerText.BLOCKS  # without the app's stylesheet: only the lists differ


class MarkdownApp(App[None]):
    def __init__(self, markdown: type[Markdown], theme: str, text: str = LISTS_TEXT) -> None:
        super().__init__()
        self.markdown, self.wanted_theme, self.text = markdown, theme, text

    def compose(self) -> ComposeResult:
        yield self.markdown(self.text)

    def on_mount(self) -> None:
        self.theme = self.wanted_theme


def _cells(app: App[None]) -> list[list[tuple[str, object]]]:
    """Every cell of the screen: its character and how it looks (colours, bold, italic,
    underline, strike, link); a blank's foreground is invisible, so it is left out."""
    rows = []
    for strip in app.screen._compositor.render_strips():
        row: list[tuple[str, object]] = []
        for segment in strip:
            style = segment.style or RichStyle()
            looks = (style.color, style.bgcolor, style.bold, style.italic, style.underline, style.strike,
                     style.meta.get("@click"))
            row += [(char, looks[1:] if char == " " else looks) for char in segment.text]
        rows.append(row)
    return rows


def test_simple_lists_are_one_widget_each_and_look_exactly_like_textuals_own() -> None:
    """lists.py draws a list of one-paragraph items (maybe with simple lists nested in them)
    itself: the screen is the same cell by cell (bullets, numbers, hanging indents, inline
    styles, links), in both themes and when wrapped; a list with code in an item keeps
    Textual's widgets."""

    async def render(markdown: type[Markdown], theme: str, width: int) -> tuple[list, list[tuple[bool, bool]]]:
        """The screen's cells; for each list whether it draws its items and has child widgets."""
        app = MarkdownApp(markdown, theme)
        async with app.run_test(size=(width, 100)) as pilot:
            await pilot.pause(0.1)
            lists = [(getattr(each, "items", None) is not None, bool(each.children)) for each in app.query(MarkdownList)]
            return _cells(app), lists

    async def main() -> None:
        for theme in ("textual-dark", "textual-light"):
            for width in (70, 31):
                stock, _ = await render(StockMarkdown, theme, width)
                ours, lists = await render(OurMarkdown, theme, width)
                assert "".join(char for char, _ in ours[5]).strip()  # something is drawn
                assert ours == stock, (theme, width)
                # bullets, numbers, nested three deep, with an empty item (not shown, as in Textual),
                # with code in an item (Textual's widgets)
                assert lists == [(True, False), (True, False), (True, False), (True, False), (False, True)]

    asyncio.run(main())


def test_lists_nested_deeper_than_the_screen_is_wide_still_draw() -> None:
    """A hostile answer can nest lists as deep as the parser allows: the list draws its bullets
    until the width runs out, as Textual's does, and never fails (it did, at zero width)."""
    text = "".join("  " * i + f"- level {i}\n" for i in range(40)) + "\n" + "".join(
        "  " * i + f"1. n{i}\n" for i in range(12))

    async def render(markdown: type[Markdown], width: int) -> list:
        app = MarkdownApp(markdown, "textual-dark", text)
        async with app.run_test(size=(width, 80)) as pilot:
            await pilot.pause(0.1)
            return _cells(app)

    async def main() -> None:
        assert await render(OurMarkdown, 20) == await render(StockMarkdown, 20)
        for width in (8, 3, 1):  # (Textual's own list scrolls sideways at some of these)
            rows = ["".join(char for char, _ in row) for row in await render(OurMarkdown, width)]
            assert rows[0].strip().startswith("•") or width < 5  # (the Markdown's padding is 2 a side)

    asyncio.run(main())


def test_selecting_across_a_simple_list_copies_its_items() -> None:
    async def main() -> None:
        app = MarkdownApp(OurMarkdown, "textual-dark")
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause(0.1)
            first = app.query(MarkdownList).first()
            top = first.region.y
            for start in (0, 2):  # on the first bullet, on the first letter after it
                await pilot.mouse_down(offset=(first.region.x + start, top))
                await pilot.hover(offset=(first.region.x + 7, top + 1))
                await pilot.mouse_up(offset=(first.region.x + 7, top + 1))  # on "item 1"'s "1"
                await pilot.pause()
                selected = app.screen.get_selected_text() or ""
                assert selected.startswith("• item 0 with code0, stress, bold and a link"), selected
                assert selected.endswith("\n• item 1"), selected

            nested = app.query(MarkdownList)[2]
            assert nested.get_selection(Selection(None, None)) == ("\n".join((
                "• outer", "  ▪ nested a, long enough to wrap at the narrower width", "    1. deeper",
                "    2. and numbered", "  ▪ nested b", "• outer again")), "\n")
            rows = ["".join(char for char, _ in row) for row in _cells(app)]
            y = next(y for y, row in enumerate(rows) if "deeper" in row)  # a list two levels down
            x = rows[y].index("deeper")
            await pilot.mouse_down(offset=(x + 2, y))
            await pilot.hover(offset=(rows[y + 2].index("nested b"), y + 2))
            await pilot.mouse_up(offset=(rows[y + 2].index("nested b") + 3, y + 2))
            await pilot.pause()
            assert app.screen.get_selected_text() == "eper\n    2. and numbered\n  ▪ nest"

    asyncio.run(main())


def _tree(widget: Widget) -> list[tuple[str, str]]:
    """Every descendant's kind (Textual's class, for ours the one they extend) and what it shows."""
    out = []
    for node in widget.walk_children():
        if isinstance(node, MarkdownBullet):
            shown = node.symbol
        elif isinstance(node, MarkdownBlock):
            shown = node._content.plain
        elif isinstance(node, Label):
            shown = str(node.content)
        else:
            shown = ""
        kind = type(node).__mro__[1] if type(node).__module__.startswith("hermes_tui") else type(node)
        out.append((kind.__name__, shown))
    return out


def test_lists_growing_in_place_end_as_a_full_render_would() -> None:
    """Streamed in small pieces, lists keep their widget (lists.py), and the finished widget
    tree is the one a render of the whole text gives."""

    async def main() -> None:
        for size in (3, 17, 64):
            app = App()
            async with app.run_test(size=(80, 60)) as pilot:
                streamed = AnswerText()
                await app.screen.mount(streamed)
                stream = AnswerText.get_stream(streamed)
                first_list = None  # the first list, once it has a few items
                for start in range(0, len(GROWING_TEXT), size):
                    await stream.write(GROWING_TEXT[start:start + size])
                    await pilot.pause()
                    if start >= 120 and first_list is None:
                        first_list = streamed.query(SimpleBulletList).first()
                await stream.stop()
                whole = AnswerText(GROWING_TEXT)
                await app.screen.mount(whole)
                await pilot.pause(0.2)
                assert streamed.source == GROWING_TEXT
                assert _tree(streamed) == _tree(whole)
                assert first_list in streamed.query(SimpleBulletList)  # it grew, never rebuilt

    asyncio.run(main())


TABLE_ANSWER = ("Here:\n\n| model | calls | cost |\n|:--|--:|:-:|\n| gpt | 3 | $0.10 |\n"
                "| claude-sonnet | 12 | $1.2000 |\n\nDone.\n")


def test_a_table_keeps_its_column_alignment_and_its_natural_width(server: FakeLLMServer) -> None:
    """Item 21 of issue 23: a streamed table was stretched across the pane and every cell was
    left-aligned, whatever its delimiter row said. At both sizes the table is as wide as its
    cells, numbers sit right, the centred column is centred; at 80 columns a long cell wraps."""
    lines_at: dict[int, list[str]] = {}

    for width, height in ((140, 45), (80, 24)):
        long = "claude-sonnet " + "with a long note " * 6 if width == 80 else "claude-sonnet"
        server.queue(Reply(text=TABLE_ANSWER.replace("| claude-sonnet |", f"| {long.strip()} |"), chunk_size=7))

        async def scenario(app: HermesApp, pilot: Pilot, width: int = width) -> None:
            def screen() -> list[str]:
                return [strip.text for strip in app.screen._compositor.render_strips()]

            def rows_mounted() -> bool:  # the last _update_rows mounts its cells after "Done." shows
                tables = app.screen.query(AlignedTableContent)
                return bool(tables) and len(tables.last().query(".cell")) == 6  # 2 rows of 3

            def last_row_laid_out() -> bool:  # its cells fitted and drawn between the grid's lines
                return any("│    12 │ $1.2000 │" in line for line in screen())

            type_bytes(app, "a table please\r")
            await wait_for(pilot, lambda: not app.chat.busy and "Done." in "\n".join(screen()) and rows_mounted()
                           and last_row_laid_out())
            # The last rows can still be re-laid out after they are mounted: read a settled screen.
            shown = screen()
            while True:
                await pilot.pause()
                if (again := screen()) == shown:
                    break
                shown = again
            lines_at[width] = shown

        run(scenario, size=(width, height))

    wide = lines_at[140]
    top = next(line for line in wide if "┌" in line)
    assert len(top.strip()) == 35  # 13 + 5 + 7 cells, their padding and four lines; not 130
    assert any("│ gpt           │     3 │  $0.10  │" in line for line in wide), wide
    assert any("│ model         │ calls │  cost   │" in line for line in wide)
    narrow = lines_at[80]
    rows = [line for line in narrow if "│" in line]
    assert all(len(line.rstrip()) <= 80 for line in narrow)
    assert any(line.rstrip().endswith("│    12 │ $1.2000 │") for line in rows), rows  # wrapped, still aligned
    assert sum("long note" in line for line in rows) >= 2
