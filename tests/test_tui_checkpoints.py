"""/undo and /rewind restore files in the app (pilot, fake server, real git and files): the dialog
lists what changes, names the files changed since the turn and keeps them unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.blocks import UserMessage
from hermes_tui.tui.rewind import RestoreScreen, RewindScreen
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.tui_harness import conversation, notices, run, send, server, text_of, wait_for

__all__ = ["server"]


@pytest.fixture(autouse=True)
def no_approvals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")


def queue_changing_turn(server: FakeLLMServer) -> None:
    server.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "agent notes\n"})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "echo made > made.txt"})]),
        Reply(text="Done."),
    )


async def send_and_finish(app: HermesApp, pilot: Pilot, text: str) -> None:
    """Send and wait for the turn to end; the first turn waits for the stream helper to import litellm,
    which takes a minute on a busy machine."""
    await send(app, pilot, text)
    await wait_for(pilot, lambda: not app.chat.busy, timeout=300)
    await pilot.pause()


def plan_text(app: HermesApp) -> str:
    return text_of(app.screen.query_one("#restore-plan"))


def test_undo_restores_files_and_keeps_one_changed_since(server: FakeLLMServer, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("my notes\n")
    queue_changing_turn(server)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_finish(app, pilot, "tidy the notes")
        assert any("Changed 2 file(s): made.txt, notes.txt" in n for n in notices(app))
        (workspace / "made.txt").write_text("I edited this myself\n")  # after the turn
        await send(app, pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, RestoreScreen))
        assert "restore  notes.txt" in plan_text(app) and "delete   made.txt" in plan_text(app)
        assert "made.txt" in text_of(app.screen.query_one("#restore-conflicts"))
        assert (workspace / "notes.txt").read_text() == "agent notes\n"  # nothing happens before the answer
        await pilot.press("y")  # the safe choice: restore, keep the file changed since
        await wait_for(pilot, lambda: app.chat.prompt.text == "tidy the notes")  # the turn is undone too
        assert (workspace / "notes.txt").read_text() == "my notes\n"
        assert (workspace / "made.txt").read_text() == "I edited this myself\n"
        assert conversation(app, UserMessage) == []
        assert any("Kept the changed version of made.txt" in n for n in notices(app))

        app.chat.prompt.load("")
        await send(app, pilot, "/rewind")  # the restore is a checkpoint too: rewind undoes it
        await wait_for(pilot, lambda: isinstance(app.screen, RewindScreen))
        await pilot.press("enter")  # the newest: the restore
        await wait_for(pilot, lambda: isinstance(app.screen, RestoreScreen))
        assert "notes.txt" in plan_text(app) and not app.screen.query("#restore-chat")  # files only
        await pilot.press("y")
        await wait_for(pilot, lambda: (workspace / "notes.txt").read_text() == "agent notes\n")

    run(scenario)


def test_undo_can_be_cancelled_or_leave_the_files(server: FakeLLMServer, workspace: Path) -> None:
    queue_changing_turn(server)

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_finish(app, pilot, "make files")
        await send(app, pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, RestoreScreen))
        await pilot.press("enter")  # Cancel has the focus: a stray Enter changes nothing
        await wait_for(pilot, lambda: any("Nothing undone." in n for n in notices(app)))
        assert [text_of(u) for u in conversation(app, UserMessage)] == ["make files"]
        assert (workspace / "made.txt").exists()

        await send(app, pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, RestoreScreen))
        await pilot.press("c")  # the conversation only
        await wait_for(pilot, lambda: app.chat.prompt.text == "make files")
        assert (workspace / "made.txt").exists() and (workspace / "notes.txt").exists()

    run(scenario)


def test_undo_of_a_turn_without_file_changes_does_not_ask(server: FakeLLMServer) -> None:
    server.queue(Reply(text="Just talk."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_finish(app, pilot, "hello")
        await send(app, pilot, "/undo")
        await wait_for(pilot, lambda: app.chat.prompt.text == "hello")
        assert not isinstance(app.screen, RestoreScreen)

    run(scenario)
