"""Memory search finds what the agent did (commands run, paths touched: tool call arguments)
and session summaries, in the Memory pane and in ``search_memory`` alike; a store written by the
previous schema gains the new index in place when opened."""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui.memory_pane import MemoryPane
from tests.helpers import old_memory_store
from tests.panes_harness import PaneApp, Stores, hit_prompt, run, settle


def calls(*commands: str) -> str:
    return json.dumps([{"id": f"call_{n}", "type": "function",
                        "function": {"name": "run_bash", "arguments": json.dumps({"command": c})}}
                       for n, c in enumerate(commands)])


def write_version_6_store(path: Path) -> None:
    """A file as the previous schema left it: a session whose assistant ran ``wc`` eight times
    and read a file, with a summary that mentions staging-eu."""
    conn = old_memory_store(path, 6)
    conn.execute("INSERT INTO sessions (source, title, summary, started, last_activity)"
                 " VALUES ('tui', 'line counts', 'Counted lines, then deployed to staging-eu.', 1, 1)")
    rows = [("user", "count the lines of the python files", None),
            ("assistant", None, calls(*["wc -l *.py"] * 8)),
            ("assistant", "", json.dumps([{"id": "r", "type": "function", "function": {
                "name": "read_file", "arguments": '{"path": "deploy/config.yaml"}'}}])),
            ("assistant", None, json.dumps([{"id": "bad", "type": "function",
                                              "function": {"name": "run_bash", "arguments": "{not json"}}])),
            ("assistant", "There are 120 lines.", None)]
    for role, content, tool_calls in rows:
        conn.execute("INSERT INTO messages (session_id, role, content, tool_calls, created) VALUES (1, ?, ?, ?, 1)",
                     (role, content, tool_calls))
    conn.close()


def test_an_old_store_is_upgraded_in_place_and_finds_tool_arguments(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    write_version_6_store(path)
    told: list[str] = []
    with MemoryStore(path, on_upgrade=told.append) as store:
        assert len(told) == 1 and "reindexing 5 messages" in told[0]
        (hit,) = store.search("wc")
        assert hit.message_id == 2 and "wc" in hit.snippet.replace("\x02", "").replace("\x03", "")
        assert [h.message_id for h in store.search("config.yaml")] == [3]
        assert store.search("tool:wc") == []  # the tool filter still means the tool's name
        assert [h.message_id for h in store.search("tool:run_bash")] == [4, 2]
        # new messages are indexed the same way, malformed arguments included
        sid = store.new_session()
        new = store.add_message(sid, "assistant", None, tool_calls=json.loads(calls("pytest -k flaky")))
        assert [h.message_id for h in store.search("flaky")] == [new]
        assert [h.message_id for h in store.search("json")] == [4]


def test_memory_pane_and_search_memory_agree(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    write_version_6_store(path)
    memory = MemoryStore(path)
    skills = SkillManager(tmp_path / "skills")
    registry = ToolRegistry(tmp_path, memory, skills)
    app = PaneApp(MemoryPane, Stores(memory, skills, tmp_path / "skills", {}, {}))
    pane = app.pane

    async def scenario(pilot: Pilot[None]) -> None:
        for query, first in (("wc", "run_bash wc -l *.py"), ("staging", "staging-eu")):
            pane.query_one(Input).value = ""
            pane.set_query(query)
            await settle(pilot)
            assert pane.hits, query
            assert first in hit_prompt(pane).plain
            tool = registry.execute("search_memory", {"query": query}).output
            listed = [line.split(",")[0] for line in tool.splitlines() if line.startswith("- session")]
            assert listed == [f"- session {h.session_id}" for h in pane.hits], (query, tool)
            assert ("summary" in tool) == any(h.role == "summary" for h in pane.hits)
        assert pane.hits[0].role == "summary"
        assert "session 1 · summary" in hit_prompt(pane).plain

    try:
        run(app, scenario)
    finally:
        memory.close()
