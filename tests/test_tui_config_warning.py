"""The terminal app names the settings it ignored in ./.env (finding 3 of issue 18): stderr is hidden
behind the full screen, so the warning is also a notice in the chat."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from hermes_tui.tui.app import HermesApp
from tests.fakes.server import FakeLLMServer
from tests.tui_harness import notices, run, server, wait_for

__all__ = ["server"]


def test_a_cloned_env_that_sets_a_key_is_named_in_a_notice(server: FakeLLMServer, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-theirs\n")  # the working folder's .env

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("Ignored ANTHROPIC_API_KEY in ./.env" in n for n in notices(app)))
        assert "sk-ant-theirs" not in app.config.api_keys.values()

    run(scenario)
