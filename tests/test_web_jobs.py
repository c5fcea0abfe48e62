"""A web session's background jobs end when the session is retired (logout here), not with the
process: the dashboard lives on, so nothing else would stop them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_tui.web.context import EXTENSION
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import wait_until
from tests.test_jobs import _marker, _with_marker
from tests.web_harness import app, chat_answering, llm, login, make_app, web_env

__all__ = ["app", "llm", "make_app", "web_env"]


def test_logout_stops_the_sessions_jobs(make_app: Any, llm: FakeLLMServer, workspace: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    app = make_app()
    client = app.test_client()
    token = login(client)
    marker = _marker()
    llm.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": f"touch started; sleep {marker}",
                                                      "background": True})]), Reply(text="running"))
    events = chat_answering(client, token, "start it")
    finished = next(e for e in events if e["type"] == "tool_call_finished")
    assert finished["ok"] and finished["result"].startswith("started background job 1;")
    assert wait_until(lambda: (workspace / "started").exists())
    assert _with_marker(marker)  # the turn is over, the job still runs
    llm.queue(Reply(text="A summary."))
    client.post("/logout", data={"csrf_token": token})
    app.extensions[EXTENSION].state.drain()
    assert _with_marker(marker) == []


def test_closing_the_dashboard_stops_every_sessions_jobs(make_app: Any, llm: FakeLLMServer, workspace: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing writes no summary (the sessions stay pending), so it stops the jobs itself."""
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    app = make_app()
    client = app.test_client()
    token = login(client)
    marker = _marker()
    llm.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": f"touch started; sleep {marker}",
                                                      "background": True})]), Reply(text="running"))
    chat_answering(client, token, "start it")
    assert wait_until(lambda: (workspace / "started").exists()) and _with_marker(marker)
    app.extensions[EXTENSION].state.close()
    assert _with_marker(marker) == []
