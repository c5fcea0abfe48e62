"""The web shows the files each turn changed: in the chat stream (``files_changed``, both wires) and in
a session's transcript (``checkpoints``), from real write_file and run_bash calls on real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.web_harness import chat, chat_answering, login, make_app, ndjson, types, web_env

__all__ = ["make_app", "web_env"]


def test_changed_files_in_the_stream_and_the_transcript(make_app: Any, fake_llm_env: FakeLLMServer,
                                                        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEB_ENABLE_SHELL", "true")
    monkeypatch.setenv("HERMES_WEB_ENABLE_WRITE", "true")
    (workspace / "notes.txt").write_text("mine\n")
    client = make_app().test_client()
    token = login(client)
    fake_llm_env.queue(Reply(text="Just talk."))
    ndjson(chat(client, token, "hello first"))
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.txt", "content": "<b>agent</b>\n"})]),
        Reply(tool_calls=[ToolCall("run_bash", {"command": "echo x > '<img src=x onerror=alert(1)>.txt'"})]),
        Reply(text="Done."),
    )
    events = chat_answering(client, token, "change things")
    changed = next(e for e in events if e["type"] == "files_changed")
    files = sorted((f["path"], f["status"]) for f in changed["files"])
    assert files == [("<img src=x onerror=alert(1)>.txt", "added"), ("notes.txt", "modified")]
    assert types(events).index("files_changed") < types(events).index("turn_finished")

    transcript = client.get(f"/api/sessions/{events[0]['session_id']}").get_json()
    assert transcript["checkpoints"] == [{"number": changed["checkpoint"], "turn": 1, "files": changed["files"]}]
