"""The Hermes app driven by Textual's pilot against the fake LLM server (no key, no network).

Tests are plain functions that run one ``asyncio.run(scenario())`` each; ``run_test`` gives a
headless app of a fixed size.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dotenv import dotenv_values
from textual import events
from textual.pilot import Pilot
from textual.widgets import Markdown

from hermes_tui import llm_host, warm
from hermes_tui.config import Config
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui import collector, commands
from hermes_tui.tui.answer import AnswerText, HelpText
from hermes_tui.tui.app import QUIT_GRACE, HermesApp, build_app
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.blocks import NoticeLine, ToolCallView, UserMessage
from hermes_tui.tui.memory_pane import MemoryPane
from hermes_tui.tui.messages import EditSkill, UseSkill
from hermes_tui.tui.setup_screen import SetupScreen
from hermes_tui.tui.skills_pane import SkillsPane
from hermes_tui.tui.suggestions import SlashSuggestions
from tests.engine_harness import SKILL_ANSWER
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.helpers import MovedClock
from tests.tui_harness import (  # noqa: F401 - fixtures among them
    LONG_TEXT,
    SIZE,
    active_pane,
    conversation,
    exited,
    help_screen,
    notices,
    press_and_exit,
    run,
    send,
    send_and_wait,
    server,
    text_of,
    wait_for,
)

# -- a turn: stream, tools, answer -----------------------------------------------------------


def test_send_streams_markdown_and_tool_calls(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    (workspace / "notes.txt").write_text("one\ntwo\n")
    fake_llm_env.queue(
        Reply(text="Let me **look**.", tool_calls=[ToolCall("list_dir", {"path": "."}, id="call_1")]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l notes.txt"}, id="call/2")]),
        Reply(text="## Result\n\n`notes.txt` has *2* lines.", chunk_size=3),
    )

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "count the lines")
        assert app.chat.prompt.text == ""  # the prompt is cleared once the turn starts
        await wait_for(pilot, lambda: not app.chat.busy)
        await pilot.pause()

        assert [text_of(w) for w in conversation(app, UserMessage)] == ["count the lines"]
        answers = conversation(app, AnswerText)
        assert [a.source for a in answers] == ["Let me **look**.", "## Result\n\n`notes.txt` has *2* lines."]
        assert all(isinstance(a, Markdown) for a in answers)  # one Markdown widget per text block
        tools = conversation(app, ToolCallView)
        assert [(t.tool_name, t.ok, t.id) for t in tools] == [
            ("list_dir", True, "tool-call_1"), ("run_bash", True, "tool-call_2")]
        head = text_of(tools[1].query_one(".tool-head"))
        assert head.startswith("✓ run_bash  wc -l notes.txt  · ") and head.endswith(" s")
        output = tools[1].query_one(".tool-output")
        assert output.collapsed and "2 notes.txt" in text_of(output.query_one(".tool-result"))
        # order on screen: text, tool, tool, text
        kinds = [type(w).__name__ for w in app.chat.conversation.children]
        assert kinds == ["UserMessage", "AnswerText", "ToolCallView", "ToolCallView", "AnswerText"]
        assert app.status.label is None
        assert text_of(app.query_one("#usage")).startswith("36 in · 21 out")

    run(scenario)


def test_cost_is_a_dash_when_unpriced(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hi")
        assert text_of(app.query_one("#usage")).startswith("12 in · 7 out · cost — · context ")

    run(scenario)


def test_status_line_shows_activity_while_working(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "sleep 1.5"})]), Reply(text="done"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "wait a bit")
        await wait_for(pilot, lambda: app.status.label == "running run_bash")
        await wait_for(pilot, lambda: "running run_bash · 1 s" in text_of(app.query_one("#activity")))
        assert conversation(app, ToolCallView)[0].ok is None  # still spinning
        await wait_for(pilot, lambda: text_of(app.query_one("#activity")) == "ready")

    run(scenario)


def test_escape_cancels_the_turn_and_the_prompt_works_again(server: FakeLLMServer) -> None:
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.02), Reply(text="Second answer."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "write a lot")
        await wait_for(pilot, lambda: conversation(app, AnswerText))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.busy, timeout=5)
        assert any("Cancelled" in n for n in notices(app)), notices(app)
        partial = conversation(app, AnswerText)[0].source
        assert 0 < len(partial) < len(LONG_TEXT)

        await send_and_wait(app, pilot, "again")
        assert conversation(app, AnswerText)[-1].source == "Second answer."

    run(scenario)


def test_the_view_follows_the_stream_until_the_user_scrolls_up(server: FakeLLMServer) -> None:
    server.queue(Reply(text="\n\n".join(f"Paragraph {n} of the answer." for n in range(300)),
                       chunk_size=12, chunk_delay=0.01))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        view = app.chat.conversation
        await send(app, pilot, "a long answer please")
        await wait_for(pilot, lambda: view.max_scroll_y > 5)
        assert view.scroll_y == view.max_scroll_y  # following
        view.scroll_home(animate=False, immediate=True)  # the user scrolls up: the view stays where they put it
        height = view.max_scroll_y
        await wait_for(pilot, lambda: view.max_scroll_y > height + 5)
        assert view.scroll_y == 0
        view.scroll_end(animate=False, immediate=True)  # back at the bottom: following again
        await pilot.pause()
        height = view.max_scroll_y
        await wait_for(pilot, lambda: view.max_scroll_y > height + 5)
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        app.chat.cancel_turn()
        await wait_for(pilot, lambda: not app.chat.busy)

    run(scenario)


def test_selected_answer_text_is_copied_with_ctrl_c(server: FakeLLMServer) -> None:
    server.queue(Reply(text="Copy **this** answer."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "say something")
        answer = conversation(app, AnswerText)[0]
        assert app.ALLOW_SELECT and answer.allow_select
        answer.text_select_all()  # what a mouse drag over the answer does
        await pilot.pause()
        assert app.chat.prompt.has_focus  # ctrl+c reaches the prompt first, which has no selection
        await pilot.press("ctrl+c")
        assert "Copy this answer." in app.clipboard

    run(scenario)


def test_an_error_is_one_readable_line(server: FakeLLMServer) -> None:
    server.queue(Fault(401))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hello")
        errors = [n for n in conversation(app, NoticeLine) if n.has_class("error")]
        assert len(errors) == 1
        text = text_of(errors[0])
        assert "\n" not in text and "Traceback" not in text
        # A failed turn frees the prompt, and gives the unsent message back in it (retry or edit it).
        assert app.chat.prompt.text == "hello" and not app.chat.busy

    run(scenario)


def test_as_shipped_the_app_streams_through_the_warm_helper_and_its_death_is_one_line(
        server: FakeLLMServer, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HERMES_HELPER on (the default): the app's turns stream through the per-user warm helper;
    kill -9 of it mid-answer is one error line, the text so far stays, and the next message
    starts a new helper."""
    monkeypatch.setenv("HERMES_HELPER", "on")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.02), Reply(text="Answered again."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        host = app.session.host()
        assert isinstance(host, warm.WarmHost)
        await send(app, pilot, "write a lot")
        await wait_for(pilot, lambda: conversation(app, AnswerText) and conversation(app, AnswerText)[0].source)
        running = warm.status()
        assert running is not None and running[0] == host.pid
        os.kill(running[0], signal.SIGKILL)
        await wait_for(pilot, lambda: not app.chat.busy)
        errors = [text_of(n) for n in conversation(app, NoticeLine) if n.has_class("error")]
        assert len(errors) == 1 and "stopped unexpectedly" in errors[0] and "Traceback" not in errors[0], errors
        assert 0 < len(conversation(app, AnswerText)[0].source) < len(LONG_TEXT)

        await send_and_wait(app, pilot, "again")
        assert conversation(app, AnswerText)[-1].source == "Answered again."
        again = warm.status()
        assert again is not None and again[0] not in (None, running[0])

    run(scenario)


def test_the_stream_is_parsed_in_the_helper_and_its_death_is_one_line(server: FakeLLMServer) -> None:
    """The app's turns stream through the helper process (llm_host): killing it mid-answer is
    one error line, the text so far stays, and the next message starts a new helper."""
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.02), Reply(text="Answered again."))
    host = llm_host.shared()

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "write a lot")
        await wait_for(pilot, lambda: conversation(app, AnswerText) and conversation(app, AnswerText)[0].source)
        killed = host.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        await wait_for(pilot, lambda: not app.chat.busy)
        errors = [text_of(n) for n in conversation(app, NoticeLine) if n.has_class("error")]
        assert len(errors) == 1 and "stopped unexpectedly" in errors[0], errors
        assert 0 < len(conversation(app, AnswerText)[0].source) < len(LONG_TEXT)

        await send_and_wait(app, pilot, "again")
        assert conversation(app, AnswerText)[-1].source == "Answered again."
        assert host.pid not in (None, killed)

    run(scenario)


def test_while_a_turn_streams_only_the_youngest_objects_are_collected(server: FakeLLMServer) -> None:
    """collector.py: the older generations (hundreds of ms to walk with a long answer on screen)
    wait for the end of the turn; the youngest is collected as usual meanwhile."""
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.005))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: collector._tuned)  # once the model helper is ready
        assert gc.get_threshold() == collector.IDLE
        await send(app, pilot, "write a lot")
        await wait_for(pilot, lambda: conversation(app, AnswerText))
        older = gc.get_stats()[1]["collections"]
        await wait_for(pilot, lambda: len(conversation(app, AnswerText)[0].source) > len(LONG_TEXT) // 2)
        assert gc.get_threshold() == collector.TURN  # the youngest as usual, the older ones never
        assert gc.get_stats()[1]["collections"] == older
        await wait_for(pilot, lambda: not app.chat.busy)
        await wait_for(pilot, lambda: gc.get_stats()[1]["collections"] > older)  # when it ended
        assert gc.get_threshold() == collector.IDLE

    run(scenario)


def test_the_collection_after_a_turn_waits_until_the_user_stops_typing(server: FakeLLMServer) -> None:
    """It pauses the app (~0.3 s after a long answer): a key typed then would wait for it. The app's
    clock is injected: keys pressed on it postpone the collection until QUIET seconds passed."""
    server.queue(Reply(text="a short answer"))
    now = [100.0]
    app = build_app(Config.load(), clock=lambda: now[0])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: collector._tuned)  # once the model helper is ready
            before = collector.after_turns
            await pilot.press("x")  # typed at 100.0 on the app's clock
            await send_and_wait(app, pilot, "write a lot")  # Enter at 100.0 too
            for _ in range(3):  # typing on: each key moves the quiet moment on
                now[0] += collector.QUIET * 0.9
                await pilot.press("x")
                await pilot.pause(collector.QUIET)  # the app's retry timer fires (real time)
                assert collector.after_turns == before
            now[0] += collector.QUIET  # the user stopped
            await wait_for(pilot, lambda: collector.after_turns == before + 1)

    try:
        asyncio.run(main())
    finally:
        app.memory.close()


def test_learned_skill_notice_arrives_after_the_turn(server: FakeLLMServer, workspace: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    (workspace / "data.txt").write_text("alpha\nbeta\ngamma\n")
    server.queue(
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "wc -l data.txt"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "data.txt"})]),
        Reply(text="3 lines."),
        Reply(text=SKILL_ANSWER),
    )

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "How many lines are in data.txt?")
        await wait_for(pilot, lambda: any("Learned skill count-file-lines" in n for n in notices(app)))
        assert conversation(app, NoticeLine)[-1].has_class("learned")

    run(scenario)


# -- approvals -------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "ok"), [("y", True), ("n", False), ("escape", False)])
def test_approval_modal_allows_or_denies(server: FakeLLMServer, workspace: Path, key: str, ok: bool) -> None:
    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "echo hi > out.txt"})]), Reply(text="ok"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "write it")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        assert "echo hi > out.txt" in text_of(app.screen.query_one("#approval-text"))
        # The dialog comes by the approver's message, the label by the turn's event stream: either may be first.
        await wait_for(pilot, lambda: app.status.label == "waiting for your approval of run_bash")
        await pilot.press(key)
        await wait_for(pilot, lambda: not app.chat.busy)
        assert conversation(app, ToolCallView)[0].ok is ok
        assert (workspace / "out.txt").exists() is ok

    run(scenario)


def test_allow_for_this_session_asks_once(server: FakeLLMServer, workspace: Path) -> None:
    server.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "first line\nsecond"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "b.txt", "content": "b"})]),
        Reply(text="both written"),
    )

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "write two files")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        details = text_of(app.screen.query_one("#approval-text"))
        assert "first line" in details and "a.txt" in text_of(app.screen.query_one("#approval-question"))
        await pilot.press("a")
        await wait_for(pilot, lambda: not app.chat.busy)
        assert [t.ok for t in conversation(app, ToolCallView)] == [True, True]
        assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()

    run(scenario)


def test_approval_mode_always_never_asks(server: FakeLLMServer, workspace: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made.txt"})]), Reply(text="ok"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "make it")
        assert (workspace / "made.txt").exists()

    run(scenario)


def test_quitting_with_an_open_approval_denies_and_exits(server: FakeLLMServer, workspace: Path) -> None:
    server.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch never.txt"})]))
    server.responder = lambda request: Fault(503, delay=30)  # the summary never comes back

    clock = MovedClock(100.0)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "do it")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#approval-buttons Button")))
        assert await quit_past_the_grace(app, pilot, server, clock) < 8  # bounded, whatever the provider does

    run(scenario, clock=clock)
    assert not (workspace / "never.txt").exists()


async def quit_past_the_grace(app: HermesApp, pilot: Pilot, server: FakeLLMServer, clock: MovedClock) -> float:
    """ctrl+q while the provider holds every summary: once the summary's request is out, the app
    waits for it on its own clock until that passes ``QUIT_GRACE``, then exits. Returns the
    seconds from the key to the exit."""
    started = time.monotonic()
    app.simulate_key("ctrl+q")  # not pilot.press: the pilot waits for a screen that goes
    await wait_for(pilot, lambda: len(server.requests) == 2)  # the turn's, then the summary's
    await asyncio.sleep(0.2)
    assert not exited(app)  # waiting for the summary
    clock.now += QUIT_GRACE
    await wait_for(pilot, lambda: exited(app), 15)
    return time.monotonic() - started


# -- the prompt ------------------------------------------------------------------------------


def test_newline_keys_and_paste_never_send(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        prompt = app.chat.prompt
        await pilot.press("a", "ctrl+j", "b")
        assert prompt.text == "a\nb"
        await pilot.press("backslash", "enter", "c")
        assert prompt.text == "a\nb\nc"
        app.post_message(events.Paste("line 1\nline 2\nline 3"))  # as the terminal delivers it
        await pilot.pause()
        assert prompt.text == "a\nb\ncline 1\nline 2\nline 3"
        assert not app.chat.busy and not server.requests
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.chat.busy)
        assert text_of(conversation(app, UserMessage)[0]) == "a\nb\ncline 1\nline 2\nline 3"

    run(scenario)


def test_history_recall_across_app_instances(server: FakeLLMServer, hermes_home: Path) -> None:
    async def first(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "first question")
        await send_and_wait(app, pilot, "second\nquestion")

    run(first)
    assert (hermes_home / "tui_history.jsonl").stat().st_mode & 0o777 == 0o600

    async def second(app: HermesApp, pilot: Pilot) -> None:
        prompt = app.chat.prompt
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert prompt.text == "second\nquestion"
        await pilot.press("up")  # the cursor is on the last line: move up inside the entry first
        await pilot.press("up")
        assert prompt.text == "first question"
        await pilot.press("down")
        assert prompt.text == "second\nquestion"
        await pilot.press("down", "down")
        assert prompt.text == "draft"  # the unsent draft comes back

    run(second)


def test_slash_completion_and_tab(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        assert not app.query(SlashSuggestions)  # built on the first "/"
        await pilot.press("slash", "m")
        suggestions = app.query_one(SlashSuggestions)
        assert suggestions.display
        assert [o.id for o in suggestions.options] == ["model", "memory", "mcp"]
        await pilot.press("tab")
        assert app.chat.prompt.text == "/model "
        assert not suggestions.display
        app.chat.prompt.load("")
        await pilot.press("slash", "s", "e", "enter")  # Enter completes a partial command
        assert app.chat.prompt.text == "/sessions"
        app.chat.prompt.load("")
        await pilot.press("slash")
        assert suggestions.display and len(suggestions.options) == len(commands.COMMANDS)
        await pilot.press("escape")
        assert not suggestions.display

    run(scenario)


# -- slash commands --------------------------------------------------------------------------


def test_help_and_unknown_command(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/help")
        help_text = (await help_screen(app, pilot)).source
        assert "/resume <id>" in help_text and "ctrl+j" in help_text and "F2" in help_text
        await pilot.press("escape")  # #23 item 22: a screen of its own, nothing left in the chat
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
        await send(app, pilot, "/help")
        await help_screen(app, pilot)
        await pilot.press("f1")  # F1 closes it too
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
        assert conversation(app, HelpText) == [] and app.chat.prompt.has_focus
        await send(app, pilot, "/frobnicate now")
        assert notices(app)[-1].startswith("✗ Unknown command /frobnicate: kept in the prompt.")
        assert not server.requests and app.chat.prompt.text == "/frobnicate now"  # never dropped

    run(scenario)


def test_model_command_shows_and_switches(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/model")
        assert "openai:test-model" in notices(app)[-1]
        await send(app, pilot, "/model other-model")
        assert "Now using openai:other-model" in notices(app)[-1]
        assert "openai:other-model" in text_of(app.query_one("#header"))
        await send_and_wait(app, pilot, "hi")
        assert server.requests[-1].body["model"] == "other-model"
        await send(app, pilot, "/model anthropic:claude-x")
        assert app.session.loop.config.provider == "anthropic"
        assert "ANTHROPIC_API_KEY is not set" in notices(app)[-1]
        await send(app, pilot, "/model nonsense:")
        assert app.config.model == "nonsense:"  # not a provider prefix: a model name

    run(scenario)


def test_model_switch_to_another_provider_leaves_the_custom_endpoint(
        server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/model openai:gpt-4o`` from a local OpenAI-style server once kept sending to that server
    (with OPENAI_API_KEY); another provider now uses its own endpoint, and the notice names the
    endpoint and key. The configured endpoint comes back with its provider."""
    monkeypatch.setenv("HERMES_PROVIDER", "openai-compatible")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hi")
        assert len(server.requests) == 1
        await send(app, pilot, "/model openai:gpt-4o")
        line = notices(app)[-1]
        assert "Now using openai:gpt-4o at https://api.openai.com/v1 with OPENAI_API_KEY" in line
        assert f"{server.openai_base} is openai-compatible's endpoint" in line
        assert app.session.loop.config.effective_api_base is None
        assert app.session.loop.llm.config.effective_api_base is None  # what the next call uses
        await send(app, pilot, "/model ollama")
        assert "at http://localhost:11434 with no key" in notices(app)[-1]
        await send(app, pilot, "/model openai-compatible:local-b")
        assert f"at {server.openai_base} with OPENAI_API_KEY" in notices(app)[-1]
        await send_and_wait(app, pilot, "again")
        assert len(server.requests) == 2 and server.requests[-1].body["model"] == "local-b"

    run(scenario)


def test_model_switch_to_a_provider_without_an_endpoint_is_refused(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/model openai-compatible:qwen")
        assert "needs its server's URL" in notices(app)[-1]
        assert app.config.provider == "openai" and app.config.api_base == server.openai_base

    run(scenario)


def test_new_starts_a_session_and_summarises_the_old_one(server: FakeLLMServer, hermes_home: Path) -> None:
    server.queue(Reply(text="first answer"), Reply(text="Summary of the first session."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "remember the kiwi")
        first = app.session.session_id
        await send(app, pilot, "/new")
        assert app.session.session_id is None and "new session" in text_of(app.query_one("#header"))
        assert not conversation(app, UserMessage)
        await wait_for(pilot, lambda: app.memory.get_session(first).summary)
        await send_and_wait(app, pilot, "hello again")
        assert app.session.session_id not in (None, first)

    run(scenario)


def test_resume_and_sessions_commands(server: FakeLLMServer, hermes_home: Path) -> None:
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    old = memory.new_session()
    memory.add_message(old, "user", "what is in the box?")
    memory.add_message(old, "assistant", "Let me check.", tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "list_dir", "arguments": '{"path": "box"}'}}])
    memory.add_message(old, "tool", "apple\npear", tool_call_id="c1", name="list_dir")
    memory.add_message(old, "assistant", "An apple and a pear.")
    memory.close()

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/sessions")
        assert active_pane(app) == "sessions"
        await pilot.press("f2")
        await send(app, pilot, "/resume 999")
        assert "no session 999" in notices(app)[-1]
        await send(app, pilot, "/resume x")
        assert "Usage: /resume <id>" in notices(app)[-1]
        await send(app, pilot, f"/resume {old}")
        assert app.session.session_id == old
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["what is in the box?"]
        assert [a.source for a in conversation(app, AnswerText)] == ["Let me check.", "An apple and a pear."]
        assert [t.tool_name for t in conversation(app, ToolCallView)] == ["list_dir"]
        await send_and_wait(app, pilot, "and now?")
        assert any("An apple and a pear." in str(m) for m in server.requests[-1].messages)

    run(scenario)


def test_resume_from_the_command_line(server: FakeLLMServer, hermes_home: Path) -> None:
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    old = memory.new_session()
    memory.add_message(old, "user", "an old question")
    memory.close()

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        # The session is resumed after the first frame (tui/startup.py), off the app's thread.
        await wait_for(pilot, lambda: f"session {old}" in text_of(app.query_one("#header")), timeout=60)
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["an old question"]

    run(scenario, session_id=old)

    async def missing(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("no session 42" in n for n in notices(app)), timeout=60)
        assert "no session 42" in notices(app)[-1]

    run(missing, session_id=42)


def test_skills_and_memory_commands_open_their_panes(server: FakeLLMServer, hermes_home: Path) -> None:
    skills = SkillManager(hermes_home / "skills")
    skills.create("count-lines", "Count the lines of a file", ["count lines"], "1. wc -l")
    skills.create("deploy-site", "Deploy the web site", ["deploy"], "1. push")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "the kiwi is green")
        await send(app, pilot, "/skills deploy")
        assert active_pane(app) == "skills"
        pane = app.query_one(SkillsPane)
        await wait_for(pilot, lambda: [s.name for s in pane._skills] == ["deploy-site"])
        await pilot.press("f2")
        await send(app, pilot, "/memory kiwi")
        assert active_pane(app) == "memory"
        memory_pane = app.query_one(MemoryPane)
        await wait_for(pilot, lambda: memory_pane.hits)
        assert memory_pane.hits[0].session_id == app.session.session_id

    run(scenario)


def test_learn_command(server: FakeLLMServer, workspace: Path) -> None:
    (workspace / "data.txt").write_text("alpha\n")
    server.queue(Reply(text="hello there"), Reply(text=SKILL_ANSWER))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/learn")
        assert notices(app)[-1] == "ℹ Nothing to learn from yet: run a task first."
        await send_and_wait(app, pilot, "say hello")
        await send(app, pilot, "/learn")
        await wait_for(pilot, lambda: any("Learned skill count-file-lines" in n for n in notices(app)))

    run(scenario)


def test_exit_command_saves_the_summary(server: FakeLLMServer) -> None:
    server.queue(Reply(text="answer"), Reply(text="We talked about exits."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hello")
        session = app.session.session_id
        app.chat.prompt.load("/exit")
        await press_and_exit(app, pilot, "enter")
        assert app.memory.get_session(session).summary == "We talked about exits."

    run(scenario)


def test_quit_while_streaming_cancels_and_never_hangs(server: FakeLLMServer) -> None:
    server.queue(Reply(text=LONG_TEXT, chunk_size=5, chunk_delay=0.05))
    server.responder = lambda request: Fault(503, delay=30)  # summary: provider unreachable

    clock = MovedClock(100.0)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "stream forever")
        await wait_for(pilot, lambda: conversation(app, AnswerText))
        assert await quit_past_the_grace(app, pilot, server, clock) < 8

    run(scenario, clock=clock)


def test_command_palette_offers_the_commands(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"/help", "/new", "/model [provider:]model", "/resume <id>", "/exit"} <= set(titles)
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "/sessions")
        await app.run_action("command_palette")  # the palette opens on ctrl+p
        await pilot.pause()
        await pilot.press("escape")
        result = command.callback()
        if asyncio.iscoroutine(result):
            await result
        await pilot.pause()
        assert active_pane(app) == "sessions"
        model = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("/model"))
        await model.callback()
        await pilot.pause()
        assert active_pane(app) == "chat" and app.chat.prompt.text == "/model "

    run(scenario)


# -- panes and the messages they post --------------------------------------------------------


def test_pane_keys(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        for key, pane in [("f3", "skills"), ("f4", "memory"), ("f5", "sessions"), ("f2", "chat"),
                          ("alt+2", "skills"), ("alt+3", "memory"), ("alt+4", "sessions"), ("alt+1", "chat")]:
            await pilot.press(key)
            await pilot.pause()
            assert active_pane(app) == pane, key
        assert app.chat.prompt.has_focus and app.chat.prompt.text == ""  # alt+1 typed nothing
        await pilot.click("#pane-bar", offset=(16, 0))  # " Chat  F2    Skills  F3 …": a click on Skills
        await pilot.pause()
        assert active_pane(app) == "skills"

    run(scenario)


def test_use_skill_fills_the_prompt(server: FakeLLMServer) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await pilot.press("f3")
        app.query_one(SkillsPane).post_message(UseSkill("count-lines"))
        await pilot.pause()
        assert active_pane(app) == "chat"
        assert app.chat.prompt.text == "use the skill count-lines: "

    run(scenario)


def test_edit_skill_without_a_terminal_is_a_notice(server: FakeLLMServer, hermes_home: Path) -> None:
    SkillManager(hermes_home / "skills").create("count-lines", "Count lines", [], "1. wc -l")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        shown: list[str] = []
        app.notify = lambda message, **kwargs: shown.append(message)
        await pilot.press("f3")
        app.query_one(SkillsPane).post_message(EditSkill("count-lines"))
        await pilot.pause()
        assert any("Could not open an editor" in message for message in shown)

    run(scenario)


# -- no key: setup ---------------------------------------------------------------------------


@pytest.fixture
def no_key(hermes_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERMES_PROVIDER", "openai")
    return hermes_home


def test_without_a_key_the_panes_still_work(no_key: Path) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
        await pilot.press("escape")
        for key, pane in [("f3", "skills"), ("f4", "memory"), ("f5", "sessions")]:
            await pilot.press(key)
            await pilot.pause()
            assert active_pane(app) == pane
        await pilot.press("f2")
        await send(app, pilot, "please remember this")
        assert isinstance(app.screen, SetupScreen)  # sending re-opens the setup
        await pilot.press("escape")
        assert app.chat.prompt.text == "please remember this"  # never lost

    run(scenario)


def test_setup_saves_the_key_masked_with_mode_0600(no_key: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as fake:
        monkeypatch.setenv("HERMES_API_BASE", fake.openai_base)
        no_key.mkdir(parents=True, exist_ok=True)
        (no_key / ".env").write_text("# mine\nOPENAI_API_KEY=\nHERMES_WEB_PASSWORD=keep-me\n")
        secret = "sk-live-1234567890abcdef"

        async def scenario(app: HermesApp, pilot: Pilot) -> None:
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
            await pilot.pause()  # the screen focuses the provider list first
            app.screen.query_one("#setup-provider").highlighted = 1  # openai
            app.screen.query_one("#setup-key").focus()
            await pilot.press(*secret)
            app.screen.query_one("#setup-model").value = "gpt-test"
            screen_text = app.export_screenshot()
            assert secret not in screen_text and "•" * 8 in screen_text
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, SetupScreen)
            assert app.config.has_api_key and app.config.model == "gpt-test"
            assert any("Saved. Hermes now uses openai:gpt-test." in n for n in notices(app))
            await wait_for(pilot, lambda: any("answers." in n for n in notices(app)))  # the endpoint was checked
            await send_and_wait(app, pilot, "hello")
            assert fake.requests[-1].headers["authorization"] == f"Bearer {secret}"

        run(scenario)

    env_file = no_key / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert dotenv_values(env_file) == {"OPENAI_API_KEY": secret, "HERMES_WEB_PASSWORD": "keep-me",
                                       "HERMES_PROVIDER": "openai", "HERMES_MODEL": "gpt-test"}
    assert env_file.read_text().startswith(f"# mine\nOPENAI_API_KEY={secret}\n")  # updated in place
    for log in Path(os.environ["HOME"]).rglob("*.log"):
        assert secret not in log.read_text()


def test_setup_asks_for_the_key_before_saving(no_key: Path) -> None:
    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
        await app.screen.run_action("save")
        await wait_for(pilot, lambda: "Paste the OPENAI_API_KEY" in text_of(app.screen.query_one("#setup-error")))
        assert not (no_key / ".env").exists()

    run(scenario)


# -- start-up cost ---------------------------------------------------------------------------


def test_no_tui_module_imports_litellm() -> None:
    code = ("import importlib, pkgutil, sys, hermes_tui.tui as tui\n"
            "for module in pkgutil.iter_modules(tui.__path__):\n"
            "    importlib.import_module(f'hermes_tui.tui.{module.name}')\n"
            "print('litellm' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_app_is_built_before_any_agent_module_loads() -> None:
    """Everything up to the first frame: the approval policy and the tool records (~9 ms of
    imports) load with the first agent, after it; the event records (~8 ms of dataclasses) with
    the first event, and sqlite3 with the stores (bench/tui_startup.py)."""
    code = ("import sys\n"
            "from hermes_tui.config import Config\n"
            "from hermes_tui.tui.app import build_app\n"
            "build_app(Config.load())\n"
            "print(sorted(name for name in sys.modules if name.startswith('hermes_tui.agent')\n"
            "             or name in ('hermes_tui.events', 'sqlite3')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


_APP_WITHOUT_LITELLM = """
import asyncio, json, re, sys
from hermes_tui.config import Config
from hermes_tui.tui.app import build_app
from hermes_tui.tui import collector
from tests.tui_harness import SIZE, notices, send, send_and_wait, text_of, wait_for

app = build_app(Config.load())
seen = {}

async def main():
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: collector._tuned, 300)  # the model layer is loaded (somewhere)
        (Config.load().workspace / "big.txt").write_text("a line of text for the window\\n" * 600)
        await send_and_wait(app, pilot, sys.argv[1])
        await send_and_wait(app, pilot, "Turn 2: read big.txt again.")
        before = text_of(app.query_one("#usage"))
        await send(app, pilot, "/compact the deploy target")
        await wait_for(pilot, lambda: any(n.startswith("ℹ Compacted") for n in notices(app)))
        await wait_for(pilot, lambda: text_of(app.query_one("#usage")) != before)
        seen["share"] = [int(re.search(r"context (\\d+)%", t).group(1))
                         for t in (before, text_of(app.query_one("#usage")))]
        seen["notices"] = notices(app)

asyncio.run(main())
app.memory.close()
seen["litellm"] = sorted(name for name in sys.modules if name.split(".")[0] == "litellm")[:5]
print(json.dumps(seen))
"""


@pytest.mark.timeout(600)
def test_the_app_answers_counts_and_compacts_without_importing_litellm(
        server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real app in a process of its own: two answered turns (counted for the context meter),
    then /compact (a summary written by the model): every model call ran in its helper process,
    and litellm (~200 MB, seconds of CPU) was never imported in the app's."""
    from tests.test_context import FIRST, fake_model

    monkeypatch.setenv("HERMES_CONTEXT_TOKENS", "20000")
    server.responder = fake_model
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", _APP_WITHOUT_LITELLM, FIRST], capture_output=True, text=True,
                            timeout=540, env=env, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["litellm"] == []
    before, after = seen["share"]
    assert before > 20 and after < before  # counted, then compacted by the model's summary
    assert any("Conversation to summarize:" in str(r.messages) for r in server.requests)  # the compaction
    assert sum("read big.txt" in str(r.messages[-1]) for r in server.requests) >= 2  # both turns answered


def test_the_markdown_widgets_and_highlighters_load_after_the_first_frame(server: FakeLLMServer) -> None:
    """Not at start-up (markdown-it costs ~60 ms), nor when the first answer's words or its first
    code block arrive (a lexer's regular expressions ~50 ms, guessing a language ~0.5 s)."""
    code = ("import asyncio, sys\n"
            "from hermes_tui.config import Config\n"
            "from hermes_tui.tui.app import build_app\n"
            "before = 'hermes_tui.tui.answer' in sys.modules or 'pygments.lexers.python' in sys.modules\n"
            "app = build_app(Config.load())\n"
            "async def main():\n"
            "    async with app.run_test() as pilot:\n"
            "        while app.markdown_loading is None or app.markdown_loading.is_alive():\n"
            "            await pilot.pause(0.05)\n"
            "    app.stores.close()\n"
            "    from pygments.lexers.python import PythonLexer\n"
            "    print(before, 'hermes_tui.tui.answer' in sys.modules, '_tokens' in PythonLexer.__dict__,\n"
            "          'pygments.lexers.teraterm' in sys.modules)  # compiled; all imported to guess\n"
            "asyncio.run(main())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True", "True"]


def test_an_old_store_upgrade_is_announced(server: FakeLLMServer, hermes_home: Path) -> None:
    """The app opens its stores after the first frame; upgrading an old file (minutes for a big
    one) says so in a toast instead of a silent wait."""
    from tests.memory_harness import write_version_1_store

    hermes_home.mkdir(parents=True, exist_ok=True)
    write_version_1_store(hermes_home / "memory.sqlite3")

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("Upgrading the memory store" in n.message for n in app._notifications))
        await wait_for(pilot, lambda: app.memory.search("東京"))  # upgraded, and searchable

    run(scenario)
