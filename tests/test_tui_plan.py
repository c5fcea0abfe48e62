"""The TUI's plan mode: /plan toggles it, the status line shows it, and a plan-mode answer is followed
by the offer to carry it out (plan mode ends, every tool is offered again), keep planning, or discard."""

from __future__ import annotations

from textual.pilot import Pilot

from hermes_tui.agent.prompts import CARRY_OUT
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.plan_screen import PlanScreen
from tests.fakes.server import FakeLLMServer, Reply
from tests.tui_harness import notices, run, send, send_and_wait, server, text_of, wait_for  # noqa: F401 - fixture


def _mode(app: HermesApp) -> str:
    mode = app.status.query_one("#mode")
    return text_of(mode) if mode.display else ""


async def _plan_offered(app: HermesApp, pilot: Pilot) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
    await pilot.pause()


def test_plan_toggles_the_mode_and_carrying_out_offers_every_tool(server: FakeLLMServer) -> None:
    server.queue(Reply(text="1. Read it. 2. Change it."), Reply(text="Done."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        assert _mode(app) == ""
        await send(app, pilot, "/plan")
        assert "plan mode" in _mode(app) and app.session.plan
        assert any("Plan mode: Hermes gets read-only tools" in n for n in notices(app)), notices(app)
        await send(app, pilot, "plan the change")
        await _plan_offered(app, pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: len(server.requests) == 2 and not app.chat.busy)
        assert _mode(app) == "" and not app.session.plan

    run(scenario)
    planned, carried = server.requests
    assert "run_bash" not in planned.tools and "write_file" not in planned.tools and "read_file" in planned.tools
    assert "run_bash" in carried.tools and "write_file" in carried.tools
    assert [m["content"] for m in carried.messages if m["role"] == "user"][-1].startswith(CARRY_OUT)


def test_keep_planning_stays_and_discard_leaves_without_sending(server: FakeLLMServer) -> None:
    server.queue(Reply(text="Plan A."), Reply(text="Plan B."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "/plan")
        await send(app, pilot, "plan it")
        await _plan_offered(app, pilot)
        await pilot.press("k")
        await wait_for(pilot, lambda: not isinstance(app.screen, PlanScreen))
        assert app.session.plan and "plan mode" in _mode(app)
        await send(app, pilot, "another way")
        await _plan_offered(app, pilot)
        await pilot.press("d")
        await wait_for(pilot, lambda: not isinstance(app.screen, PlanScreen))
        await pilot.pause()
        assert not app.session.plan and _mode(app) == ""
        assert any("Plan discarded; plan mode is off." in n for n in notices(app))
        await send_and_wait(app, pilot, "/plan")  # on again, and off again: a toggle
        await send_and_wait(app, pilot, "/plan")
        assert not app.session.plan and any("Plan mode off: every tool" in n for n in notices(app))

    run(scenario)
    assert len(server.requests) == 2
    assert all("run_bash" not in request.tools for request in server.requests)
