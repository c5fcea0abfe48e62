"""The session tools: /retry, /cost (kept across /resume), /copy, /export, /setup, /forget and the
Sessions pane's ids and ``x``; plus a denied call shown ✗ in a resumed session."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from hermes_tui.conversation import Status
from hermes_tui.memory.store import MemoryStore
from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.blocks import ToolCallView, UserMessage
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.session_tools import code_blocks
from hermes_tui.tui.setup_screen import SetupScreen
from tests.fakes.server import FakeLLMServer, Fault, Reply, ToolCall
from tests.tui_harness import (
    conversation,
    help_card,
    notices,
    run,
    send,
    send_and_wait,
    server,
    text_of,
    type_bytes,
    wait_for,
)

__all__ = ["server"]
ANSWER = "Two snippets:\n\n```python\nprint('one')\n```\n\nand\n\n```bash\necho two\n```\n"


def test_retry_resends_the_last_message_without_the_failed_answer(server: FakeLLMServer) -> None:
    server.queue(Fault(400), Reply(text="Now it works."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "please answer")
        assert any(n.startswith("✗") for n in notices(app))
        await send_and_wait(app, pilot, "/retry")
        assert conversation(app, AnswerText)[-1].source == "Now it works."
        sent = [m for m in server.requests[-1].messages if m["role"] == "user"]
        assert len(sent) == 1 and sent[0]["content"].startswith("please answer")  # not twice
        assert len(server.requests) == 2

    run(scenario)


def test_undo_takes_the_turn_out_and_memory_keeps_it_marked(server: FakeLLMServer) -> None:
    server.queue(Reply(text="First answer."), Reply(text="Regretted answer."), Reply(text="Fresh answer."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "first question")
        await send_and_wait(app, pilot, "regretted question")
        session = app.session.session_id
        await send(app, pilot, "/undo")
        assert app.chat.prompt.text == "regretted question"  # back in the prompt
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["first question"]
        app.chat.prompt.load("")
        await send_and_wait(app, pilot, "another question")
        sent = str(server.requests[-1].messages)
        assert "first question" in sent and "regretted" not in sent.lower()
        stored = [m.content for m in app.memory.get_messages(session)]
        assert "regretted question" in stored and "Regretted answer." in stored  # memory keeps it
        marked = [m.content for m in app.memory.get_messages(session) if m.status is Status.UNDONE]
        assert marked == ["regretted question", "Regretted answer."]  # marked undone, in the store
        await send(app, pilot, "/new")
        await send(app, pilot, f"/resume {session}")
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["first question", "another question"]
        assert all("regretted" not in (m.content or "").lower() for m in app.session.loop.history)

    run(scenario)


def test_cost_per_model_survives_resume(server: FakeLLMServer) -> None:
    server.queue(Reply(text="first"), Reply(text="second", cache_read=5))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "one")
        await send(app, pilot, "/model other-model")
        await send_and_wait(app, pilot, "two")
        session = app.session.session_id
        await send(app, pilot, "/cost")
        card = (await help_card(app, pilot)).source
        assert "`openai:test-model` | 1 | 12 | 7 | 0 | —" in card
        assert "`openai:other-model` | 1 | 17 | 7 | 5 |" in card and "**total** | 2 | 29 | 14 | 5 |" in card
        await send(app, pilot, "/new")
        assert text_of(app.query_one("#usage")).startswith("0 in")
        await wait_for(pilot, lambda: app.usage.load(session) and len(app.usage.load(session)) == 2)
        await send(app, pilot, f"/resume {session}")
        assert text_of(app.query_one("#usage")).startswith("29 in · 14 out")  # restored, not 0

    run(scenario)


def test_copy_falls_back_to_a_private_file(server: FakeLLMServer, hermes_home: Path,
                                           monkeypatch) -> None:
    monkeypatch.setenv("TERM_PROGRAM", "Apple_Terminal")  # no OSC 52 there
    server.queue(Reply(text=ANSWER))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "snippets")
        await send(app, pilot, "/copy 2")
        saved = hermes_home / "clipboard.txt"
        assert saved.read_text() == "echo two" and app.clipboard == "echo two"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        assert any("clipboard.txt" in str(n.message) for n in app._notifications)
        await send(app, pilot, "/copy")
        assert saved.read_text() == ANSWER
        await send(app, pilot, "/copy 3")
        assert "has 2 code block(s)" in notices(app)[-1]

    run(scenario)


def test_copy_uses_osc52_where_the_terminal_takes_it(server: FakeLLMServer, hermes_home: Path,
                                                     monkeypatch) -> None:
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    monkeypatch.delenv("TMUX", raising=False)
    server.queue(Reply(text=ANSWER))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "snippets")
        await send(app, pilot, "/copy 1")
        assert app.clipboard == "print('one')" and not (hermes_home / "clipboard.txt").exists()
        assert any("OSC 52" in str(n.message) for n in app._notifications)

    run(scenario)


def test_export_writes_a_markdown_transcript(server: FakeLLMServer, workspace: Path) -> None:
    server.queue(Reply(text=ANSWER))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "snippets please")
        await send(app, pilot, "/export notes/session.md")
        path = workspace / "notes" / "session.md"
        text = path.read_text()
        assert text.startswith(f"# Hermes session {app.session.session_id}: snippets please")
        assert "## You · " in text and "snippets please" in text and "## Hermes · " in text
        assert code_blocks(text) == ["print('one')", "echo two"]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert "Exported session" in notices(app)[-1]

    run(scenario)


def test_export_marks_cancelled_and_undone_turns_and_keeps_answer_headings_below_its_own(
        server: FakeLLMServer, workspace: Path) -> None:
    """#23 item 19: an export read like the whole conversation was sent, and an answer's "## Plan"
    stood level with "## Hermes"."""
    server.queue(Reply(text="## Plan\n\nstep one"),
                 Reply(text="slow " * 400, chunk_size=5, chunk_delay=0.05),
                 Reply(text="taken back"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "plan it")
        await send(app, pilot, "slow one")
        await wait_for(pilot, lambda: conversation(app, AnswerText)[-1:] and "slow" in conversation(app, AnswerText)[-1].source)
        await pilot.press("escape")  # cancel the streaming turn
        await wait_for(pilot, lambda: not app.chat.busy)
        await send_and_wait(app, pilot, "regret this")
        await send(app, pilot, "/undo")
        app.chat.prompt.load("")
        await send(app, pilot, "/export notes/session.md")
        text = (workspace / "notes" / "session.md").read_text()
        headings = [line for line in text.splitlines() if line.startswith("## ")]
        assert [h.split(" · ")[0] for h in headings] == ["## You", "## Hermes"] * 3
        assert headings[2].endswith("(cancelled)") and "(" not in headings[0] + headings[1]
        assert all(h.endswith("(undone, not sent to the model)") for h in headings[4:])
        assert "#### Plan" in text and "\n## Plan" not in text

    run(scenario)


def test_setup_reopens_any_time_and_needs_a_scheme(server: FakeLLMServer) -> None:
    server.queue(Fault(401))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "hello")  # the key is rejected
        assert any("rejected the API key" in n for n in notices(app))
        await send(app, pilot, "/setup")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
        await pilot.pause()
        app.screen.query_one("#setup-base").value = "localhost:8000/v1"
        app.screen.action_save()
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)  # refused
        assert "http://" in text_of(app.screen.query_one("#setup-error"))
        await pilot.press("escape")
        assert not isinstance(app.screen, SetupScreen)

    run(scenario)


def test_setup_and_model_show_the_current_model_and_endpoint(server: FakeLLMServer) -> None:
    """#23 item 16: the fields held placeholders, not what is in use; another provider starts empty."""
    from textual.widgets import Input, OptionList

    from hermes_tui.config import PROVIDER_TABLE

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/model")
        assert f"Model: openai:{app.config.model} at {server.openai_base}. " in notices(app)[-1]
        await send(app, pilot, "/setup")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and bool(app.screen.query("#setup-error")))
        await pilot.pause()
        model, base = (app.screen.query_one(f"#setup-{name}", Input) for name in ("model", "base"))
        assert (model.value, base.value) == (app.config.model, server.openai_base)
        await pilot.press("down")  # the next provider: its own defaults, not this endpoint
        other = app.screen.query_one("#setup-provider", OptionList).highlighted_option.id
        assert other != "openai" and (model.value, base.value) == ("", "")
        assert model.placeholder == PROVIDER_TABLE[other].default_model
        await pilot.press("up")
        assert (model.value, base.value) == (app.config.model, server.openai_base)
        await pilot.press("escape")

    run(scenario)


def test_forget_asks_then_deletes_the_session(server: FakeLLMServer, hermes_home: Path) -> None:
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    old = memory.new_session()
    memory.add_message(old, "user", "my key is sk-regret")
    memory.close()

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/sessions")
        table = app.query_one("#sessions-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert str(next(iter(table.columns.values())).label) == "Id"
        assert str(table.get_row_at(0)[0]).strip() == str(old)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")  # no: nothing happens
        await pilot.pause()
        assert app.memory.get_session(old) is not None
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.action_confirm()
        await wait_for(pilot, lambda: app.memory.get_session(old) is None)
        await wait_for(pilot, lambda: table.row_count == 0)
        await pilot.press("f2")
        await send(app, pilot, f"/forget {old}")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.action_confirm()
        await wait_for(pilot, lambda: any(f"no session {old}" in n for n in notices(app)))

    run(scenario)


def test_a_denied_call_shows_a_cross_when_resumed(server: FakeLLMServer, hermes_home: Path) -> None:
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    old = memory.new_session()
    memory.add_message(old, "user", "delete it")
    memory.add_message(old, "assistant", None, tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "run_bash", "arguments": '{"command": "rm x"}'}}])
    memory.add_message(old, "tool", "The user denied this run_bash call. Do not retry it; ask the user how to proceed.",
                       tool_call_id="c1", name="run_bash", status=Status.DENIED)  # as the loop stores it
    memory.close()

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, f"/resume {old}")
        view = conversation(app, ToolCallView)[0]
        assert text_of(view.query_one(".tool-head")).startswith("✗ run_bash")

    run(scenario)


def test_forget_also_removes_the_prompts_and_the_files_made_of_the_session(
        server: FakeLLMServer, hermes_home: Path, monkeypatch) -> None:
    """Finding 9 of issue 18: tui_history.jsonl kept every prompt of a forgotten session."""
    monkeypatch.delenv("TERM_PROGRAM", raising=False)
    monkeypatch.setenv("TERM", "xterm")  # a terminal that may ignore OSC 52: /copy also writes clipboard.txt
    server.queue(Reply(text="Noted: the vault code is 4471."), Reply(text="Kept."))
    history = hermes_home / "tui_history.jsonl"

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "other matter: keep this one")
        await send(app, pilot, "/new")
        await send_and_wait(app, pilot, "remember the vault code 4471")
        session = app.session.session_id
        await send(app, pilot, "/export")
        await send(app, pilot, "/copy")
        exported = hermes_home / "exports" / f"session-{session}.md"
        clipboard = hermes_home / "clipboard.txt"
        await wait_for(pilot, lambda: exported.exists() and clipboard.exists())
        assert "vault code 4471" in history.read_text()
        await send(app, pilot, "/forget")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.action_confirm()
        await wait_for(pilot, lambda: any("Forgot session" in n or "Could not forget" in n for n in notices(app)))
        assert f"Forgot session {session}" in notices(app)[-1], notices(app)
        assert "4471" not in history.read_text()  # nor in the app's own list
        assert not any("4471" in entry for entry in app.history.entries)
        assert "keep this one" in history.read_text()  # another session's prompts stay
        assert not exported.exists() and not clipboard.exists()
        assert "1 prompt in the prompt history" in notices(app)[-1] and "session-" in notices(app)[-1]

    run(scenario)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_a_resumed_session_draws_failed_calls_failed_turns_and_its_context(
        server: FakeLLMServer, workspace: Path, size: tuple[int, int]) -> None:
    """Item 18 of issue 23: a resumed session drew a failed call without ✗, no context % until
    the next call, and no sign of a turn that failed before an answer; and that failed
    message was sent again with the next one. Keys as raw terminal bytes."""
    (workspace / "notes.txt").write_text("kept\n")
    server.queue(Reply(tool_calls=[ToolCall("read_file", {"path": "missing.txt"}),
                                   ToolCall("read_file", {"path": "notes.txt"})]),
                 Reply(text="One of them is missing."), Fault(400), Reply(text="Fresh."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, "read both files\r")
        await wait_for(pilot, lambda: len(server.requests) == 2 and not app.chat.busy)
        live = [text_of(v.query_one(".tool-head"))[0] for v in conversation(app, ToolCallView)]
        assert live == ["✗", "✓"]
        type_bytes(app, "poisoned question\r")
        await wait_for(pilot, lambda: len(server.requests) == 3 and not app.chat.busy)
        await wait_for(pilot, lambda: app.chat.prompt.text == "poisoned question")  # offered back
        app.chat.prompt.load("")
        session = app.session.session_id
        type_bytes(app, f"/new\r/resume {session}\r")
        await wait_for(pilot, lambda: any("Resumed session" in n for n in notices(app)))
        marks = [text_of(v.query_one(".tool-head"))[0] for v in conversation(app, ToolCallView)]
        assert marks == ["✗", "•"]  # the failed call, then one that did not fail (no timing stored)
        assert "✗ This turn failed before an answer." in notices(app)
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["read both files", "poisoned question"]
        await wait_for(pilot, lambda: " · context " in text_of(app.query_one("#usage")))  # before any call of this run
        assert not app.chat.busy and not app.chat.conversation.loading
        type_bytes(app, "next question\r")

        def asked() -> list:
            """The turn's requests: not /new's summary nor the memory curator's, which quote it."""
            return [r for r in server.requests
                    if str([m for m in r.messages if m["role"] == "user"][-1]["content"]).startswith("next question")]

        await wait_for(pilot, lambda: asked() and not app.chat.busy)
        sent = [m["content"] for m in asked()[0].messages if m["role"] == "user"]
        assert not any("poisoned" in str(content) for content in sent), sent
        assert sent[-1].startswith("next question")

    run(scenario, size=size)


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
def test_a_message_typed_while_a_session_loads_is_queued_then_sent(
        server: FakeLLMServer, hermes_home: Path, size: tuple[int, int]) -> None:
    """The resume reads the store off the app thread with an indicator; a message typed in the
    same burst as ``/resume`` waits for it and goes to the resumed session, not lost."""
    memory = MemoryStore(hermes_home / "memory.sqlite3")
    old = memory.new_session()
    memory.bulk_add_messages(old, [{"role": "user" if n % 2 == 0 else "assistant", "content": f"# Part {n}\n\ntext {n}"}
                                   for n in range(46)])
    memory.close()
    server.queue(Reply(text="Continued."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        type_bytes(app, f"/resume {old}\rstraight after\r")
        await wait_for(pilot, lambda: any(a.source == "Continued." for a in conversation(app, AnswerText)))
        sent = [m["content"] for m in server.requests[-1].messages if m["role"] == "user"]
        assert sent[-1].startswith("straight after") and "text 44" in str(sent)  # in the resumed session
        assert app.session.session_id == old and len(server.requests) == 1
        # While a session loads, the status line and the view say so, and what is typed queues.
        server.queue(Reply(text="After the load."))
        await wait_for(pilot, lambda: not app.chat.busy)  # the turn above has ended
        async with app.chat.holding("loading session 99…"):
            type_bytes(app, "held message\r")
            await wait_for(pilot, lambda: app.chat.queued == ["held message"])
            await pilot.pause()
            assert "loading session 99…" in text_of(app.query_one("#activity"))
            assert app.chat.conversation.loading and len(server.requests) == 1
        await wait_for(pilot, lambda: any(a.source == "After the load." for a in conversation(app, AnswerText)))
        assert not app.chat.conversation.loading

    run(scenario, size=size)
