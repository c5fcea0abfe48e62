"""No lost input: the prompt empties on Enter, messages typed during a turn queue, a path-like
``/line`` is a message and an unknown command stays in the prompt.

Keys go in as raw terminal bytes through Textual's own input parser, all at once (no pauses
between them), exactly as a fast typist or a paste-happy terminal delivers them.
"""

from __future__ import annotations

import asyncio

from textual.pilot import Pilot

from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.blocks import UserMessage
from tests.fakes.server import FakeLLMServer, Reply
from tests.tui_harness import (  # noqa: F401 - server is a fixture
    LONG_TEXT,
    conversation,
    help_card,
    help_screen,
    notices,
    rendered_text,
    run,
    send,
    server,
    text_of,
    type_bytes,
    wait_for,
)


def test_text_typed_right_after_enter_is_neither_merged_nor_lost(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "/model gpt-4o-mini\rXYZ")
        await wait_for(pilot, lambda: app.chat.prompt.text == "XYZ")
        await pilot.pause()
        assert app.config.model == "gpt-4o-mini"  # not "gpt-4o-miniXYZ"
        assert app.chat.prompt.text == "XYZ"

    run(scenario)


def test_a_message_typed_during_a_turn_is_queued_then_sent(server: FakeLLMServer) -> None:
    server.queue(Reply(text=LONG_TEXT, chunk_size=20, chunk_delay=0.01), Reply(text="Second answer."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "first question\rsecond question\r")
        await wait_for(pilot, lambda: app.chat.queued == ["second question"])
        assert app.chat.busy
        queued = app.chat.query_one("#queued")
        assert queued.display and "⧗ queued: second question" in text_of(queued)
        assert app.chat.prompt.text == ""
        await wait_for(pilot, lambda: len(server.requests) == 2 and not app.chat.busy, timeout=30)
        await pilot.pause()
        assert [text_of(w) for w in conversation(app, UserMessage)] == ["first question", "second question"]
        assert conversation(app, AnswerText)[-1].source == "Second answer."
        assert server.requests[1].body["messages"][-1]["content"].startswith("second question")
        assert not app.chat.query_one("#queued").display

    run(scenario)


def test_escape_takes_a_queued_message_back_before_it_cancels(server: FakeLLMServer) -> None:
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.03))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "first\rsecond\r")
        await wait_for(pilot, lambda: app.chat.queued == ["second"])
        await pilot.press("escape")  # the queued message comes back into the prompt
        assert app.chat.queued == [] and app.chat.prompt.text == "second"
        assert app.chat.busy  # the turn goes on
        await pilot.press("escape")  # now Esc cancels the turn
        await wait_for(pilot, lambda: not app.chat.busy, timeout=10)
        await asyncio.sleep(0.3)
        assert len(server.requests) == 1 and app.chat.prompt.text == "second"

    run(scenario)


def test_a_line_starting_with_a_path_is_a_message(server: FakeLLMServer) -> None:
    server.queue(Reply(text="Let me look."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "/var/log/syslog shows errors, why?\r")
        await wait_for(pilot, lambda: server.requests and not app.chat.busy)
        last = server.requests[0].body["messages"][-1]["content"]
        assert last.startswith("/var/log/syslog shows errors, why?")
        assert not any("Unknown command" in n for n in notices(app))

    run(scenario)


def test_double_slash_sends_a_literal_slash_and_help_says_so(server: FakeLLMServer) -> None:
    server.queue(Reply(text="ok"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/help")
        card = await help_screen(app, pilot)
        assert "`//`" in card.source
        rendered = rendered_text(card)
        assert "//etc sends /etc" in rendered and "end the line with \\" in rendered  # no lost backslash
        assert "`" not in rendered and "**" not in rendered  # Markdown rendered, not shown raw
        type_bytes(app, "\x1b")  # Esc closes the card
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
        type_bytes(app, "//etc is a folder\r")
        await wait_for(pilot, lambda: server.requests and not app.chat.busy)
        assert server.requests[0].body["messages"][-1]["content"].startswith("/etc is a folder")

    run(scenario)


def test_enter_acts_on_what_was_typed_not_on_a_stale_suggestion_list(server: FakeLLMServer) -> None:
    """``/cost⏎`` in one burst once ran ``/resume``: Enter took the suggestion list built for an
    earlier text (here the lone "/", typed before the burst) instead of the command typed."""
    server.queue(Reply(text="first answer"), Reply(text="again answer"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "hello\r")
        await wait_for(pilot, lambda: len(server.requests) == 1 and not app.chat.busy)
        type_bytes(app, "/")
        await wait_for(pilot, lambda: app.chat.prompt.suggesting)
        type_bytes(app, "cost\r")
        assert "| model | calls |" in (await help_card(app, pilot)).source  # the /cost table
        assert app.chat.prompt.text == ""
        type_bytes(app, "/retry\r")  # in one burst from an empty prompt: the list never caught up
        await wait_for(pilot, lambda: len(server.requests) == 2 and not app.chat.busy)
        assert server.requests[1].body["messages"][-1]["content"].startswith("hello")
        assert app.chat.prompt.text == ""
        type_bytes(app, "/")
        await wait_for(pilot, lambda: app.chat.prompt.suggesting)
        type_bytes(app, "co\r")  # a partial command still completes, from what was typed
        await wait_for(pilot, lambda: app.chat.prompt.text.startswith("/co") and app.chat.prompt.text != "/co")
        assert app.chat.prompt.text in ("/compact ", "/copy ", "/cost")

    run(scenario)


def test_newlines_typed_in_one_burst_stay_where_they_were_typed(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "X1\nX2\nX3")
        await wait_for(pilot, lambda: app.chat.prompt.text.endswith("X3"))
        await pilot.pause()
        assert app.chat.prompt.text == "X1\nX2\nX3"

    run(scenario)


def test_the_status_says_answering_while_text_streams(server: FakeLLMServer) -> None:
    """It said "thinking…" the whole time the words were arriving."""
    from hermes_tui.tui.status import StatusLine

    server.queue(Reply(text=LONG_TEXT[:1500], chunk_size=10, chunk_delay=0.02))  # words for 3 s

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "talk\r")
        status = app.query_one(StatusLine)
        await wait_for(pilot, lambda: status.label == "thinking…", timeout=120)
        await wait_for(pilot, lambda: conversation(app, AnswerText) and status.label == "answering…", timeout=120)
        await wait_for(pilot, lambda: not app.chat.busy and status.label is None, timeout=120)

    run(scenario)


def test_ctrl_o_unfolds_and_folds_the_last_tool_result(server: FakeLLMServer, workspace) -> None:
    """#23 item 23: tool results unfolded only after shift+Tab; ctrl+o (raw byte 0x0f) reaches the last one."""
    from textual.widgets import Collapsible

    from tests.fakes.server import ToolCall

    (workspace / "notes.txt").write_text("first line\n")
    server.queue(Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
                 Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "look\r")
        await wait_for(pilot, lambda: len(server.requests) == 3 and not app.chat.busy)
        await wait_for(pilot, lambda: len(app.chat.conversation.query(".tool-output")) == 2)
        first, last = app.chat.conversation.query(".tool-output").results(Collapsible)
        assert first.collapsed and last.collapsed
        type_bytes(app, "\x0f")
        await wait_for(pilot, lambda: not last.collapsed)
        assert first.collapsed and app.chat.prompt.text == ""  # the key is not typed into the prompt
        type_bytes(app, "\x0f")
        await wait_for(pilot, lambda: last.collapsed)

    run(scenario)
