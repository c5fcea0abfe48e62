"""MCP in the app, driven by the pilot: failures as chat lines, the /mcp screen (status, tools,
tokens; disable, approve a workspace server), and a turn whose MCP call asks for approval."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import OptionList

from hermes_tui.agent.mcp.config import McpState, declared
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.approval_screen import ApprovalScreen
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.mcp_screen import McpScreen
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.mcp_harness import declare, stdio_entry
from tests.tui_harness import notices, run, send, server, wait_for

__all__ = ["server"]


def rows(app: HermesApp) -> list[str]:
    listing = app.screen.query_one(OptionList)
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


def test_the_mcp_screen_failures_and_an_approved_call(server: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    declare(hermes_home / "mcp.json", {"fake": stdio_entry(), "broken": {"command": str(workspace / "missing")}})
    declare(workspace / ".mcp.json", {"repo": stdio_entry()})
    server.queue(Reply(tool_calls=[ToolCall("mcp__repo__echo", {"text": "from the repo"})]), Reply(text="Echoed."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: any("MCP server broken failed to start" in n for n in notices(app)), timeout=120)
        assert any("MCP server repo from the workspace's .mcp.json is not approved yet" in n for n in notices(app))
        await send(app, pilot, "/mcp")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await wait_for(pilot, lambda: rows(app)[0].startswith("fake: ready · stdio · 9 tools · ≈"), timeout=120)
        assert rows(app)[1].startswith("broken: failed") and "missing" in rows(app)[1]
        assert rows(app)[2].startswith("repo: needs approval · stdio") and "from .mcp.json" in rows(app)[2]

        await pilot.press("e")  # the first row: fake
        await wait_for(pilot, lambda: rows(app)[0].startswith("fake: disabled"))
        fake = declared(app.config.home, app.config.workspace).specs[0]
        assert not McpState(app.config.home, app.config.workspace).enabled(fake)

        await pilot.press("down", "down", "a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen) and rows(app)[2].startswith("repo: ready"),
                       timeout=120)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, McpScreen))

        await send(app, pilot, "echo something")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=120)  # MCP tools ask first
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.chat.busy, timeout=120)

    run(scenario)
    offered = server.requests[0].tools
    assert "mcp__repo__echo" in offered and not [name for name in offered if name.startswith("mcp__fake__")]
    assert any("echo: from the repo" in str(m) for m in server.requests[1].messages)
