"""The collector while Hermes loads (hermes_tui/heap.py): paused while the program starts and
while litellm imports, frozen after, and always running again once neither holds it.

Each test runs in an interpreter of its own: freezing a test worker's heap would keep its garbage
for good."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

ORDERS = """
import gc, threading
from hermes_tui import heap

def state():
    return gc.isenabled(), gc.get_freeze_count() > 0

seen = {}
heap.loaded()  # no pause: nothing happens
seen["loaded without a pause"] = state()
heap.pause()
seen["paused"] = state()
with heap.importing():
    seen["paused, importing"] = state()
seen["paused, imported"] = state()
heap.loaded()
seen["loaded"] = state()

# The program's start ends while an import on another thread still runs (``-p`` with the helper
# off: litellm imports beside the start): the collector waits for the import too.
gc.unfreeze()
heap.pause()
entered, leave = threading.Event(), threading.Event()
def imports():
    with heap.importing():
        entered.set()
        leave.wait()
thread = threading.Thread(target=imports)
thread.start()
entered.wait()
heap.loaded()
seen["loaded during an import"] = state()
leave.set()
thread.join()
seen["import done"] = state()

# Whoever runs Hermes with the collector off keeps it off.
gc.disable()
with heap.importing():
    pass
seen["off before an import"] = state()
print(json.dumps(seen))
"""


def test_the_collector_runs_again_once_neither_the_start_nor_an_import_holds_it() -> None:
    result = subprocess.run([sys.executable, "-c", "import json\n" + ORDERS], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "loaded without a pause": [True, False],
        "paused": [False, False],
        "paused, importing": [False, False],
        "paused, imported": [False, True],  # the import's objects frozen, the start still holds it
        "loaded": [True, True],
        "loaded during an import": [False, True],
        "import done": [True, True],
        "off before an import": [False, True],
    }


def test_the_installed_command_enters_through_the_paused_start() -> None:
    """The tests below run ``program.main``; the ``hermes-tui`` users run must be that function."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="hermes-tui")
    assert script.value == "hermes_tui.program:main"


PROGRAM = """
import gc, json, sys
from hermes_tui import cli, headless, program

seen = {}
tui_main, drive = cli.tui_main, headless._drive

def entering(*args):
    seen["start"] = gc.isenabled()
    return tui_main(*args)

def turn(*args):
    code = drive(*args)
    seen["after the turn"] = [gc.isenabled(), gc.get_freeze_count() > 0]
    print(json.dumps(seen), file=sys.stderr, flush=True)
    return code

cli.tui_main, headless._drive = entering, turn
sys.argv = ["hermes-tui", "-p", "list the workspace"]
sys.exit(program.main())
"""


@pytest.mark.parametrize("helper", ["on", "off"])
def test_a_p_run_loads_with_the_collector_paused_and_runs_its_turn_with_it(
        helper: str, fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path, runtime: Path) -> None:
    """``hermes-tui -p`` as installed (``program.main``), the helper on as shipped and off: no
    collection while it loads; by the end of its turn (a tool call, then the answer) the start-up
    heap is frozen and the collector runs (with the helper off, once litellm's import, which the
    turn waits for, is done)."""
    fake_llm.queue(Reply(text="Looking.", tool_calls=[ToolCall("list_dir", {"path": "."})]),
                   Reply(text="Nothing here."))
    env = {**os.environ, **wire_env(fake_llm, "openai"), "HERMES_HELPER": helper, "XDG_RUNTIME_DIR": str(runtime)}
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=600, env=env,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Looking.\n\nNothing here.\n"
    seen = json.loads(next(line for line in result.stderr.splitlines() if line.startswith("{")))
    assert seen == {"start": False, "after the turn": [True, True]}


COMMAND = """
import gc, sys
from hermes_tui import program, warm

def status():
    print(f"collecting: {gc.isenabled()}")
    return None

warm.status = status
sys.argv = ["hermes-tui", "helper", "status"]
sys.exit(program.main())
"""


def test_a_command_runs_with_the_collector_on() -> None:
    """Every other command (``helper``, ``acp`` that serves an editor for hours, ...) resumes it
    before it runs."""
    result = subprocess.run([sys.executable, "-c", COMMAND], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[0] == "collecting: True", result.stderr


APP = """
import asyncio, gc, json
from hermes_tui import heap
heap.pause()  # as program.main does
from hermes_tui.config import Config
from hermes_tui.tui.app import build_app
from tests.tui_harness import wait_for

app = build_app(Config.load())
seen = {}
display = app._display

def shown(screen, renderable):
    if renderable is not None and not app._batch_count and "first frame" not in seen:
        seen["first frame"] = gc.isenabled()
    display(screen, renderable)

app._display = shown

async def main():
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: app.stores.opened)
        seen["started"] = [gc.isenabled(), gc.get_freeze_count() > 0]
    app.stores.close()

asyncio.run(main())
print(json.dumps(seen))
"""


def test_the_app_paints_its_first_frame_with_the_collector_paused_and_resumes_it_after(
        hermes_home: Path, workspace: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, timeout=300, cwd=root,
                            env={**os.environ, "OPENAI_API_KEY": "sk-test", "HERMES_PROVIDER": "openai"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"first frame": False, "started": [True, True]}
