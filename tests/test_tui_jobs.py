"""Background jobs in the TUI: the status line counts them, /jobs lists, shows and stops them, one
that ends says so, and quitting ends the rest (real processes, the fake server on the OpenAI wire;
the wire-level reading of jobs runs on both wires in test_jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from hermes_tui.tui.app import HermesApp
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.test_jobs import _marker, _wait_for, _with_marker
from tests.tui_harness import exited, help_card, notices, run, send, send_and_wait, server, text_of, wait_for

__all__ = ["server"]  # the fixture


def _status(app: HermesApp) -> str:
    return text_of(app.status.query_one("#activity"))


def test_jobs_are_counted_listed_shown_stopped_and_end_with_the_app(
        server: FakeLLMServer, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    key = "sk-test-jobs-9f8e7d6c5b4a3f2e"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    marker = _marker()
    first = f"echo hello-from-job {key}; touch started; {_wait_for('go')}; echo bye"
    server.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": first, "background": True})]), Reply(text="Started."),
        Reply(tool_calls=[ToolCall("run_bash", {"command": f"sleep {marker}", "background": True})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": f"sleep {marker}1", "background": True})]),
        Reply(text="Two more."),
    )

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/jobs")
        assert "No background jobs in this session" in notices(app)[-1]
        await send_and_wait(app, pilot, "start it")
        # still running after its turn's thread ended (bwrap's --die-with-parent follows a thread)
        await wait_for(pilot, lambda: (workspace / "started").exists() and "1 job running (/jobs)" in _status(app))
        await send(app, pilot, "/jobs 1")
        card = await help_card(app, pilot)
        assert "Job 1** · running" in card.source and "hello-from-job" in card.source
        assert key not in card.source and "[redacted: OPENAI_API_KEY]" in card.source  # as every tool's output
        (workspace / "go").touch()
        await wait_for(pilot, lambda: any("Background job 1 exited (exit code 0)" in n for n in notices(app)))
        assert not any(key in n for n in notices(app))
        await wait_for(pilot, lambda: "job" not in _status(app))
        await send_and_wait(app, pilot, "two more")
        await wait_for(pilot, lambda: "2 jobs running" in _status(app))
        await send(app, pilot, "/jobs")
        listing = await help_card(app, pilot, 2)
        assert "- 2 · running" in listing.source and "- 1 · exited (exit code 0)" in listing.source
        await send(app, pilot, "/jobs stop 2")
        await wait_for(pilot, lambda: any("Background job 2 stopped" in n for n in notices(app)))
        await wait_for(pilot, lambda: "1 job running" in _status(app))
        await send(app, pilot, "/jobs 9")
        assert notices(app)[-1].endswith(" There is no job 9 in this session (jobs: 1, 2, 3).")
        await send(app, pilot, "/jobs stop")
        assert notices(app)[-1].endswith(" Usage: /jobs, /jobs N (its latest output), or /jobs stop N.")
        await send(app, pilot, "/exit")
        await wait_for(pilot, lambda: exited(app))

    run(scenario)
    assert _with_marker(marker) == []  # job 3 ended with the app
