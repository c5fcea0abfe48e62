"""MCP on the web dashboard, with real MCP servers (tests/fakes/mcp_server.py) and the fake LLM server
on both wires driving real ``mcp__<server>__<tool>`` calls through ``POST /api/chat``: which servers'
tools the web offers (trusted ones; the others only with HERMES_WEB_ENABLE_MCP), ``GET /api/mcp``
and its escaped panel, a crashing server, and the servers the app starts and stops itself.

One manager with the fake servers serves the module (``create_app(..., mcp=...)``), so each test
builds only a Flask app; one test starts the servers from ``mcp.json`` as ``hermes-web`` does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from hermes_tui import redaction
from hermes_tui.agent.mcp.manager import McpManager
from hermes_tui.config import Config
from hermes_tui.web import create_app
from hermes_tui.web.context import EXTENSION
from tests.fakes.mcp_server import HOSTILE_NAME
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import wait_until
from tests.mcp_harness import FAKE, declare, stdio_entry
from tests.web_harness import chat, llm, login, ndjson, types, web_env

__all__ = ["llm", "web_env"]

Client = tuple[FlaskClient, str]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpManager]:
    """The fake server three times (trusted; untrusted with a hostile tool; trusted, for the crash
    test alone) and an unapproved workspace server: started once for the module."""
    root = tmp_path_factory.mktemp("web-mcp")
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir()
    declare(home / "mcp.json", {"trusted": stdio_entry(trust=True),
                                "plain": stdio_entry(args=[str(FAKE), "--hostile"]),
                                "crashy": stdio_entry(trust=True)})
    declare(workspace / ".mcp.json", {"repo": stdio_entry(trust=True)})
    manager = McpManager(home, workspace, log_dir=root / "logs").start()
    try:
        assert manager.wait_ready(60) == []
        yield manager
    finally:
        manager.close()


@pytest.fixture
def make_client(web_env: Path, servers: McpManager) -> Iterator[Callable[[], Client]]:
    """A logged-in client of a new app on the current environment and the module's servers."""
    apps: list[Flask] = []

    def make() -> Client:
        app = create_app(Config.load(), mcp=servers)
        app.config["TESTING"] = True
        apps.append(app)
        client = app.test_client()
        return client, login(client)

    yield make
    for app in apps:
        app.extensions[EXTENSION].state.close()


def by_name(client: FlaskClient) -> dict[str, dict[str, Any]]:
    response = client.get("/api/mcp")
    assert response.status_code == 200, response.get_data(as_text=True)
    return {server["name"]: server for server in response.get_json()["servers"]}


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_call_finished")


# -- what the model is offered, and a real call through the chat endpoint ------------------------


def test_a_trusted_servers_tool_runs_from_the_web_chat(make_client: Callable[[], Client],
                                                       fake_llm_env: FakeLLMServer) -> None:
    client, token = make_client()
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("mcp__trusted__echo", {"text": "from the web"})]),
                       Reply(text="Echoed."))
    events = ndjson(chat(client, token, "echo something"))
    assert "approval_needed" not in types(events) and events[-1]["text"] == "Echoed."
    result = finished(events)
    assert result["name"] == "mcp__trusted__echo" and result["ok"] is True
    assert "echo: from the web" in result["result"] and "not instructions" in result["result"]
    request = fake_llm_env.requests[0]
    assert request.wire == fake_llm_env.wire_under_test
    assert "mcp__trusted__echo" in request.tools
    assert not [name for name in request.tools if name.startswith(("mcp__plain__", "mcp__repo__"))]
    assert any("echo: from the web" in str(m) for m in fake_llm_env.requests[1].messages)


@pytest.mark.parametrize("enabled", [False, True])
def test_an_untrusted_servers_tools_run_on_the_web_only_with_the_flag(
        enabled: bool, make_client: Callable[[], Client], fake_llm_env: FakeLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if enabled:
        monkeypatch.setenv("HERMES_WEB_ENABLE_MCP", "true")
    client, token = make_client()
    # The model asks for the tool either way: without the flag it must not exist for it.
    fake_llm_env.queue(Reply(tool_calls=[ToolCall("mcp__plain__add", {"a": 2, "b": 3})]), Reply(text="Done."))
    events = ndjson(chat(client, token, "add 2 and 3"))
    offered = [name for name in fake_llm_env.requests[0].tools if name.startswith("mcp__plain__")]
    assert ("mcp__plain__add" in offered) is enabled and bool(offered) is enabled
    result = finished(events)
    if enabled:
        assert result["ok"] is True and result["result"].splitlines()[1] == "5"
    else:
        assert result["ok"] is False and result["result"].startswith("Unknown tool 'mcp__plain__add'")
    plain = by_name(client)["plain"]
    assert plain["offered"] is enabled
    assert (plain["why"] == "") is enabled
    if not enabled:
        assert "HERMES_WEB_ENABLE_MCP=true" in plain["why"] and '"trust": true' in plain["why"]


def test_the_web_flag_is_read_only_from_the_environment_or_hermes_home(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "repo"
    folder.mkdir()
    (folder / ".env").write_text("HERMES_WEB_ENABLE_MCP=true\n")
    local = Config.load({"HERMES_HOME": str(home)}, cwd=folder)
    assert local.web_enable_mcp is False and "HERMES_WEB_ENABLE_MCP" in local.ignored_local
    (home / ".env").write_text("HERMES_WEB_ENABLE_MCP=true\n")
    assert Config.load({"HERMES_HOME": str(home)}, cwd=folder).web_enable_mcp is True
    assert Config.load({"HERMES_HOME": str(home), "HERMES_WEB_ENABLE_MCP": "false"}, cwd=folder).web_enable_mcp is False


# -- seeing them: GET /api/mcp and the panel ---------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _value in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_api_mcp_shows_each_server_and_escapes_what_servers_send(make_client: Callable[[], Client]) -> None:
    client, token = make_client()
    assert client.application.test_client().get("/api/mcp").status_code == 401  # behind the login
    servers = by_name(client)
    trusted, plain, repo = servers["trusted"], servers["plain"], servers["repo"]
    assert (trusted["state"], trusted["tool_count"], trusted["offered"], trusted["trust"]) == ("ready", 9, True, True)
    assert trusted["tokens"] > 100 and "echo" in [t["name"] for t in trusted["tools"]]
    assert (plain["state"], plain["tool_count"], plain["offered"]) == ("ready", 10, False)
    assert (repo["state"], repo["origin"], repo["offered"]) == ("unapproved", "workspace", False)
    assert "hermes-tui mcp approve repo" in repo["why"] and "never approves" in repo["why"]

    # JSON fields are plain text (the name as sent; control and bidi characters gone) ...
    hostile = next(t for t in plain["tools"] if t["name"] == HOSTILE_NAME)
    assert hostile["description"] == "<script>alert('description')</script> red"
    assert not [text for text in strings(servers) if "\x1b" in text or "\u202e" in text]
    # ... and the panel is markup only where the template put it.
    html = client.get("/api/mcp").get_json()["html"]
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;alert" in html
    parsed = _Tags()
    parsed.feed(html)
    assert parsed.tags <= {"p", "ul", "li", "span", "code", "details", "summary"}, parsed.tags
    assert parsed.attributes <= {"class"}, parsed.attributes
    text = "".join(parsed.text)
    assert HOSTILE_NAME in text and "<script>alert('description')</script>" in text  # shown as text
    assert "trusted" in text and "9 tools" in text and "offered here (trusted)" in text
    assert "HERMES_WEB_ENABLE_MCP=true" in text and "needs approval" in text

    assert client.post("/api/mcp", headers={"X-CSRF-Token": token}).status_code == 405  # read-only
    page = client.get("/").get_data(as_text=True)
    assert 'id="mcp-panel"' in page
    script = client.get("/static/app.js").get_data(as_text=True)
    assert '"/api/mcp"' in script


# -- failures ---------------------------------------------------------------------------------


def test_a_crashing_server_is_one_line_and_the_web_keeps_answering(make_client: Callable[[], Client],
                                                                   llm: FakeLLMServer) -> None:
    client, token = make_client()
    llm.queue(Reply(tool_calls=[ToolCall("mcp__crashy__crash", {})]), Reply(text="It crashed."),
              Reply(text="Still here."),
              Reply(tool_calls=[ToolCall("mcp__crashy__echo", {"text": "back"})]), Reply(text="Back."))
    events = ndjson(chat(client, token, "crash it"))
    crashed = finished(events)
    assert crashed["ok"] is False and "stopped during the call" in crashed["result"]
    assert len(crashed["result"].splitlines()) == 1 and events[-1]["text"] == "It crashed."

    def said() -> list[str]:
        return [line for line in client.get("/api/mcp").get_json()["recent"] if "MCP server crashy" in line]

    assert wait_until(lambda: bool(said()))
    (line,) = said()
    assert line.startswith("MCP server crashy stopped: the server exited.")
    crashy = by_name(client)["crashy"]
    assert crashy["state"] == "failed" and crashy["detail"] == "the server exited"
    notices = [e["message"] for e in events if e["type"] == "notice" and "crashy" in e["message"]]
    assert notices in ([], [line])  # in the chat too, when it came while the turn ran

    again = ndjson(chat(client, token, "are you there?"))
    assert again[-1]["type"] == "turn_finished" and again[-1]["text"] == "Still here."
    back = ndjson(chat(client, token, "echo back"))
    assert finished(back)["ok"] is True and "echo: back" in finished(back)["result"]  # reconnected on its use
    assert by_name(client)["crashy"]["state"] == "ready"


# -- the servers hermes-web starts itself ------------------------------------------------------


def _processes_with(marker: str) -> list[int]:
    """The pids whose environment holds ``marker`` (the server this test declared)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes() and (entry / "stat").read_text().split()[2] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_create_app_starts_the_declared_servers_and_stops_them_with_the_app(
        web_env: Path, llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    value = f"{os.getpid()}-{tmp_path.name}"
    marker = f"HERMES_WEB_MCP_TEST={value}"
    # hermes-web takes secret-named variables out of os.environ at start; a server that names one gets it.
    monkeypatch.setitem(redaction._withheld, "WEB_MCP_TEST_API_KEY", "sk-withheld-0123456789")
    own = stdio_entry(trust=True, env={"HERMES_WEB_MCP_TEST": value, "GIVEN": "${WEB_MCP_TEST_API_KEY}"})
    declare(web_env / "mcp.json", {"own": own,
                                   "gone": {"command": str(tmp_path / "no-such-server")}})
    app = create_app(Config.load())
    app.config["TESTING"] = True
    client = app.test_client()
    try:
        token = login(client)
        assert wait_until(lambda: by_name(client)["own"]["state"] == "ready")
        assert _processes_with(marker)
        gone = by_name(client)["gone"]
        assert gone["state"] == "failed" and "no-such-server" in gone["detail"] and "\n" not in gone["detail"]
        llm.queue(Reply(tool_calls=[ToolCall("mcp__own__add", {"a": 20, "b": 22}),
                                    ToolCall("mcp__own__variable", {"name": "GIVEN"})]), Reply(text="42."))
        events = ndjson(chat(client, token, "add"))
        added, given = [e for e in events if e["type"] == "tool_call_finished"]
        assert added["ok"] is True and re.search(r"^42$", added["result"], re.M)
        assert given["ok"] is True and "[redacted: WEB_MCP_TEST_API_KEY]" in given["result"]  # resolved, scrubbed
        assert "mcp__own__add" in llm.requests[0].tools
    finally:
        app.extensions[EXTENSION].state.close()
    assert wait_until(lambda: not _processes_with(marker))  # closing the app stopped its servers
