"""Hooks in the TUI: the start-up line when project hooks wait for approval, /hooks, and a prompt
a UserPromptSubmit hook blocked given back to the prompt (real hook processes, the fake server on
the OpenAI wire; the hooks' own behaviour is tested on both wires in test_hooks)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from hermes_tui.tui.app import HermesApp
from tests.fakes.server import FakeLLMServer
from tests.test_hooks import command_hook, project_hook, settings
from tests.tui_harness import help_card, notices, run, send, server, wait_for

__all__ = ["server"]  # the fixture


def test_waiting_project_hooks_are_said_at_start_and_listed_by_slash_hooks(
        server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    project_hook(workspace)
    settings(hermes_home / "settings.json", {"PreToolUse": [command_hook("true", "Bash")]})

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("wait for your approval" in line for line in notices(app)))
        await send(app, pilot, "/hooks")
        card = (await help_card(app, pilot)).source
        assert "HERMES_HOME/settings.json" in card and "yours: runs" in card and "PreToolUse [Bash]" in card
        assert ".claude/settings.json" in card and "not approved: waits" in card

    run(scenario)


def test_a_prompt_a_hook_blocks_comes_back_to_the_prompt(server: FakeLLMServer, hermes_home: Path) -> None:
    settings(hermes_home / "settings.json",
             {"UserPromptSubmit": [command_hook("echo 'no customer data, please' >&2; exit 2")]})

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "mail bob@example.com the report")
        await wait_for(pilot, lambda: not app.chat.busy and app.chat.prompt.text)
        assert app.chat.prompt.text == "mail bob@example.com the report"
        assert any("it was not sent: no customer data, please" in line for line in notices(app))
        assert server.requests == []

    run(scenario)
