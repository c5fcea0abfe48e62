"""Hooks on the web: the agent loop fires them, so the dashboard's turns run them as the terminal's
do; a PreToolUse hook's "ask" is put to the page through the one approval policy."""

from __future__ import annotations

import json
from pathlib import Path

from flask import Flask

from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.test_hooks import command_hook, settings, tool_results
from tests.web_harness import app, chat_answering, llm, login, make_app, types, web_env

__all__ = ["app", "llm", "make_app", "web_env"]  # fixtures


def test_web_turns_run_hooks_and_a_hooks_ask_reaches_the_page(app: Flask, llm: FakeLLMServer, hermes_home: Path,
                                                              workspace: Path) -> None:
    ask = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}})
    settings(hermes_home / "settings.json", {"UserPromptSubmit": [command_hook("echo 'on call: alice'")],
                                             "PreToolUse": [command_hook(f"echo '{ask}'", "Read")]})
    (workspace / "notes.txt").write_text("private plans\n")
    llm.queue(Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="Not read."))
    client = app.test_client()
    token = login(client)

    events = chat_answering(client, token, "read my notes", "deny")

    assert "approval_needed" in types(events), "a read is never asked about; the hook's ask puts it to the page"
    assert "private plans" not in tool_results(llm, 1)[0]
    first_user = [m["content"] for m in llm.requests[0].messages if m["role"] == "user"][-1]
    assert "[Output of the user's UserPromptSubmit hook" in first_user and "on call: alice" in first_user
