"""The dashboard in a real headless Chromium (Debian's, via Playwright's executable_path) against
hermes-web served by gunicorn on 127.0.0.1, with the fake LLM server in this process.

Besides the features, it checks that XSS payloads from the model, a tool result, a skill and a
memory hit are shown as text and run nothing: no dialog opens, no script runs (``window.__xss``
stays unset), no element that loads something appears, and every request stays on the server.

Set HERMES_WEB_SCREENSHOTS=/some/dir to keep the desktop and phone screenshots.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hermes_tui import warm
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer, Fault, RecordedRequest, Reply, ToolCall

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP rebind.test 127.0.0.1"]  # a name "rebound" to the server
PASSWORD = "browser-test-password"
ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is missing (apt-get install -y chromium)")

if Path(CHROMIUM).exists():
    from playwright.sync_api import Browser, Page, expect, sync_playwright

XSS = ("<script>window.__xss=1;alert('{src}')</script> <img src=x onerror=\"window.__xss=1;alert('{src}')\"> "
       "<svg onload=\"alert('{src}')\"></svg> <iframe src=\"http://evil.example/{src}\"></iframe> "
       "[click](javascript:alert('{src}')) ![pixel](http://evil.example/{src}.png) "
       "<a href=\"javascript:alert('{src}')\">a</a>")
MODEL_XSS = "Here you go: " + XSS.format(src="model")
FILE_XSS = "<img src=x onerror=\"window.__xss=1\">.txt"  # a file name the model chose
CODE = 'def greet(name):\n    return "<b>hi</b> " + name'
MARKDOWN = f"# Big title\n\n## Medium title\n\n### Small title\n\nBody text.\n\n```python\n{CODE}\n```"
SUB_TASK = "Write kiwi.txt for me."
LONG_ANSWER = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(60))


def _respond(request: RecordedRequest) -> Reply:
    """Scripted answers chosen by the latest user prompt, so order and timing never matter."""
    if not request.body.get("stream"):
        return Reply(text="A short summary.")  # session summaries and the skill curator
    users = [m["content"] for m in request.messages if m["role"] == "user"]
    prompt = users[-1] if users else ""
    after_tool = request.messages[-1]["role"] == "tool"
    if "list the files" in prompt:
        return Reply(text="Found **two** files.") if after_tool else Reply(
            text="Let me look.", tool_calls=[ToolCall("list_dir", {"path": "."})])
    if "xss please" in prompt:
        return Reply(text=MODEL_XSS) if after_tool else Reply(
            text="Reading it.", tool_calls=[ToolCall("read_file", {"path": "evil.md"})])
    if "write a file" in prompt:
        return Reply(text="Written.") if after_tool else Reply(
            tool_calls=[ToolCall("write_file", {"path": FILE_XSS, "content": "x\n"})])
    if "fix the todo" in prompt:
        return Reply(text="Fixed.") if after_tool else Reply(tool_calls=[ToolCall("edit_file", {
            "path": "todo.txt", "old": "buy milk", "new": "buy oat milk <script>window.__xss=1</script>"})])
    if prompt.startswith("shell: "):  # the command is the rest of the prompt
        return Reply(text="Ran it.") if after_tool else Reply(
            tool_calls=[ToolCall("run_bash", {"command": prompt.removeprefix("shell: ")})])
    if "fail this one" in prompt:
        return Fault(500)  # on every retry: the turn fails before any answer
    if "show me markdown" in prompt:
        return Reply(text=MARKDOWN)
    if "a long answer" in prompt:
        return Reply(text=LONG_ANSWER, chunk_size=40, chunk_delay=0.005)
    if "read the notes" in prompt:
        return Reply(text="Read.") if after_tool else Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
    if prompt.startswith(SUB_TASK):  # a sub-agent's task (its note follows)
        return Reply(text="Written by the sub-agent.") if after_tool else Reply(
            tool_calls=[ToolCall("write_file", {"path": "kiwi.txt", "content": "kiwi\n"})])
    if "delegate the kiwi" in prompt:
        return Reply(text="Delegated.") if after_tool else Reply(
            tool_calls=[ToolCall("delegate", {"task": SUB_TASK, "tools": ["write_file"]})])
    if "talk slowly" in prompt:
        return Reply(text="slow " * 400, chunk_size=5, chunk_delay=0.02)  # ~8 s unless stopped
    return Reply(text="ok")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _seed(home: Path, workspace: Path) -> None:
    memory = MemoryStore(home / "memory.sqlite3")
    session = memory.new_session(source="tui")
    memory.add_message(session, "user", "papaya smoothie")
    memory.add_message(session, "user", "guanabana " + XSS.format(src="memory"))
    memory.add_message(session, "assistant", "A papaya smoothie needs ripe papaya.")
    memory.close()
    SkillManager(home / "skills").create(
        "evil-skill", "Looks harmless <img src=x onerror=alert('description')>", ["evil"],
        "1. Step one\n2. " + XSS.format(src="skill"))
    (workspace / "evil.md").write_text(XSS.format(src="tool"))
    (workspace / "notes.txt").write_text("hello")
    (workspace / "todo.txt").write_text("wake up\nbuy milk\nsleep\n")
    fake_mcp = ROOT / "tests" / "fakes" / "mcp_server.py"  # a real MCP server with a tool named in markup
    (home / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"hostile": {"command": sys.executable, "args": [str(fake_mcp), "--hostile"]}}}))


@dataclass
class Server:
    url: str
    llm: FakeLLMServer
    process: subprocess.Popen[bytes]
    home: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """hermes-web (gunicorn, via web_main) on a free port, pointed at the fake LLM server, with
    the warm helper on as shipped (in a runtime folder of its own: a socket path must be short)."""
    base = tmp_path_factory.mktemp("web-browser")
    runtime = Path(tempfile.mkdtemp(prefix="hb-", dir="/tmp"))
    home, workspace = base / "home", base / "workspace"
    home.mkdir()
    workspace.mkdir()
    _seed(home, workspace)
    with FakeLLMServer() as llm:
        llm.responder = _respond
        port = free_port()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "PYTHONPATH": str(ROOT),
            "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace), "XDG_RUNTIME_DIR": str(runtime),
            "FLASK_SECRET_KEY": "browser-test-secret-0123456789abcdef", "HERMES_WEB_PASSWORD": PASSWORD,
            "HERMES_WEB_ENABLE_WRITE": "true", "HERMES_WEB_ENABLE_SHELL": "true",
            **wire_env(llm, "openai"),
        }
        log = base / "gunicorn.log"
        with open(log, "wb") as stderr:
            process = subprocess.Popen(
                [str(Path(sys.executable).with_name("hermes-web")), "--host", "127.0.0.1", "--port", str(port)],
                env=env, cwd=base, stdout=subprocess.DEVNULL, stderr=stderr,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url + "/login", process, log)
            _wait_until_warm(base / ".local" / "state" / "hermes" / "log" / "hermes.log", process)
            yield Server(url, llm, process, home)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("XDG_RUNTIME_DIR", str(runtime))
                warm.stop()
            shutil.rmtree(runtime, ignore_errors=True)


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"hermes-web exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"hermes-web did not answer within 30 s:\n{log.read_text()}")


WARM_LINES = ("LLM layer warmed", "model calls go to the warm helper")  # in the web, or the helper


def _wait_until_warm(hermes_log: Path, process: subprocess.Popen[bytes]) -> None:
    """The first chat must not race litellm's import (3-5 s, longer on a busy machine)."""
    deadline = time.monotonic() + 90
    while not (hermes_log.exists() and any(line in hermes_log.read_text() for line in WARM_LINES)):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail("hermes-web did not warm the LLM layer within 90 s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Watch:
    """Everything the page did that it should not: dialogs, foreign requests, script errors."""

    origin: str
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check(self, page: Page) -> None:
        foreign = [u for u in self.requests if not u.startswith(self.origin + "/")]
        assert not foreign, f"requests left {self.origin}: {foreign}"
        assert not self.dialogs, f"dialogs opened: {self.dialogs}"
        assert not self.errors, f"page errors: {self.errors}"
        assert page.evaluate("window.__xss") is None


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[tuple[Page, Watch]]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    watch = Watch(server.url)
    page.on("request", lambda request: watch.requests.append(request.url))
    page.on("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: watch.errors.append(str(error)))
    page.on("console", lambda msg: watch.errors.append(msg.text) if msg.type == "error" else None)
    yield page, watch
    watch.check(page)
    context.close()


def log_in(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    expect(page).to_have_url(server.url + "/login")
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(server.url + "/")
    expect(page.locator("#skill-list")).to_contain_text("evil-skill")


def send(page: Page, text: str) -> None:
    page.fill("#chat-input", text)
    page.press("#chat-input", "Enter")


def allow_once(page: Page) -> None:
    """Answer the chat's approval question (shell commands and writes ask on the web)."""
    page.locator("#messages .approval button", has_text="Allow once").click()
    expect(page.locator("#messages .approval-said").last).to_have_text("Allowed once.")


def screenshot(page: Page, name: str, tmp_path: Path) -> Path:
    folder = Path(os.environ.get("HERMES_WEB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    return path


# --------------------------------------------------------------------------- features


def test_wrong_password_then_login_and_chat_with_a_tool_call(
    page: tuple[Page, Watch], server: Server, tmp_path: Path
) -> None:
    page, watch = page
    page.goto(server.url + "/login")
    page.fill("#password", "not it")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_have_text("Wrong password.")
    watch.errors.clear()  # the 401 of the failed login is logged by Chromium as a console error

    log_in(page, server)
    send(page, "please list the files here")
    answer = page.locator(".msg.assistant .rendered strong")
    expect(answer).to_have_text("two")
    tool = page.locator("details.tool").first
    expect(tool.locator(".tool-name")).to_have_text("list_dir")
    expect(tool.locator(".tool-state")).to_contain_text("done")
    tool.locator("summary").click()
    expect(tool.locator(".tool-result")).to_contain_text("notes.txt")
    expect(page.locator("#send")).to_be_enabled()
    expect(page.locator("#session-list .current")).to_contain_text("please list the files here")
    screenshot(page, "dashboard-desktop.png", tmp_path)

    page.set_viewport_size({"width": 390, "height": 844})
    columns = page.evaluate("""() => ['.memory', '.chat', '.sessions', '.skills'].map(s => {
        const r = document.querySelector(s).getBoundingClientRect(); return [r.x, r.y, r.width]; })""")
    assert all(x == 0 and width == 390 for x, _, width in columns), columns  # stacked, full width
    assert columns[0][1] < columns[1][1] < columns[2][1] < columns[3][1]  # search, chat, sessions, skills
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sticks out sideways
    screenshot(page, "dashboard-phone.png", tmp_path)


def test_a_sub_agents_session_is_listed_under_its_parent(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    memory = MemoryStore(server.home / "memory.sqlite3")  # as a TUI delegating meanwhile leaves them
    parent = memory.new_session(source="tui")
    memory.add_message(parent, "user", "kiwi delegation")
    child = memory.new_session(source="subagent", parent_id=parent)
    memory.add_message(child, "user", "read kiwi.txt")  # the newest activity: it would head the list
    memory.close()
    log_in(page, server)
    listed = page.locator("#session-list button")
    expect(listed.first).to_contain_text("kiwi delegation")
    expect(listed.nth(1)).to_contain_text("↳ read kiwi.txt")
    expect(listed.nth(1)).to_contain_text(f"#{child} · sub-agent of #{parent}")
    expect(page.locator("#session-list li.subagent")).to_have_count(1)


def test_a_sub_agents_write_is_asked_in_the_chat_naming_it(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    send(page, "delegate the kiwi write")
    question = page.locator("#messages .approval").last
    expect(question).to_contain_text(re.compile(r"Allow this write_file call\? Asked by sub-agent \d+: "
                                                + re.escape(SUB_TASK)))
    expect(page.locator("details.tool").last.locator(".tool-name")).to_have_text("↳ write_file")
    allow_once(page)
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("Delegated.")
    assert (server.home.parent / "workspace" / "kiwi.txt").read_text() == "kiwi\n"


def test_stop_a_running_turn(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    send(page, "talk slowly please")
    expect(page.locator(".msg.assistant.streaming")).to_contain_text("slow slow")
    expect(page.locator("#stop")).to_be_visible()
    page.click("#stop")
    expect(page.locator(".stopped")).to_have_text("Stopped.")
    expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator("#send")).to_be_enabled()
    streamed = page.locator(".msg.assistant").last.inner_text()
    assert 0 < streamed.count("slow") < 400  # it really stopped midway

    send(page, "hello again")  # the session goes on after a stop
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("ok")


def test_open_a_past_session_and_search_memory(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    page.locator("#session-list button", has_text="papaya smoothie").click()
    expect(page.locator("#transcript-bar")).to_be_visible()
    expect(page.locator("#chat-form")).to_be_hidden()  # read-only
    expect(page.locator("#transcript .msg.assistant")).to_have_text("A papaya smoothie needs ripe papaya.")
    page.click("#back-to-chat")
    expect(page.locator("#chat-form")).to_be_visible()

    page.fill("#memory-q", "papaya")
    page.press("#memory-q", "Enter")
    hits = page.locator("#memory-results .hit")
    expect(hits.first.locator("mark").first).to_have_text("papaya")
    hits.first.click()
    expect(page.locator("#transcript")).to_contain_text("papaya smoothie")


# --------------------------------------------------------------------------- untrusted content


def _assert_nothing_loads_or_runs(page: Page) -> None:
    active = page.evaluate("""() => ({
        scripts: [...document.scripts].map(s => s.src),
        loaders: document.querySelectorAll('img, svg, iframe, object, embed, video, audio, link[rel=prefetch]').length,
        handlers: [...document.querySelectorAll('*')]
            .filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
        jsLinks: [...document.querySelectorAll('a[href]')].filter(a => !/^(https?:|mailto:)/.test(a.href)).length,
    })""")
    origin = page.evaluate("location.origin")
    assert active == {"scripts": [origin + "/static/app.js"], "loaders": 0, "handlers": 0, "jsLinks": 0}, active


def test_an_edit_shows_its_diff(page: tuple[Page, Watch], server: Server) -> None:
    page, _watch = page
    log_in(page, server)
    send(page, "please fix the todo list")
    allow_once(page)
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("Fixed.")
    tool = page.locator("details.tool").last
    expect(tool.locator(".tool-name")).to_have_text("edit_file")
    expect(tool).to_have_attribute("open", "")  # opened for the question, so the diff shows
    expect(tool.locator(".diff-del")).to_have_text("-    2\tbuy milk")
    expect(tool.locator(".diff-add")).to_have_text("+    2\tbuy oat milk <script>window.__xss=1</script>")
    expect(tool.locator(".diff-line").filter(has_text="wake up")).to_have_count(1)
    assert page.evaluate("() => window.__xss") is None


def test_a_shell_command_waits_for_the_answer_in_the_chat(page: tuple[Page, Watch], server: Server,
                                                          tmp_path: Path) -> None:
    page, _ = page
    log_in(page, server)
    workspace = server.home.parent / "workspace"
    send(page, "shell: echo one >> approved.txt")
    question = page.locator("#messages .approval").last
    expect(question).to_contain_text("Allow this run_bash call?")
    expect(question.locator("button")).to_have_text(["Allow once", "Allow for the session", "Deny"])
    tool = page.locator("details.tool").last
    expect(tool.locator(".tool-state")).to_have_text("waiting for your approval")
    expect(tool.locator(".tool-args")).to_contain_text("echo one >> approved.txt")  # the whole call, shown
    assert not (workspace / "approved.txt").exists()
    screenshot(page, "approval-question.png", tmp_path)
    allow_once(page)
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("Ran it.")
    expect(tool.locator(".tool-state")).to_contain_text("done")
    assert (workspace / "approved.txt").read_text() == "one\n"

    send(page, "shell: echo two >> approved.txt")
    page.locator("#messages .approval button", has_text="Deny").click()
    expect(page.locator("#messages .approval-said").last).to_have_text("Denied.")
    expect(page.locator("details.tool").last.locator(".tool-state")).to_contain_text("failed")
    expect(page.locator("#send")).to_be_enabled()
    assert (workspace / "approved.txt").read_text() == "one\n"

    send(page, "shell: echo three >> approved.txt")
    page.locator("#messages .approval button", has_text="Allow for the session").click()
    expect(page.locator("#messages .approval-said").last).to_have_text("Allowed for this session.")
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("Ran it.")
    asked = page.locator("#messages .approval").count()
    send(page, "shell: echo four >> approved.txt")  # all shell, for this session: not asked again
    expect(page.locator("details.tool").last.locator(".tool-arg")).to_have_text("echo four >> approved.txt")
    expect(page.locator("details.tool").last.locator(".tool-state")).to_contain_text("done")
    assert page.locator("#messages .approval").count() == asked
    assert (workspace / "approved.txt").read_text() == "one\nthree\nfour\n"
    page.click("#new-session")  # a new session asks again
    send(page, "shell: echo five >> approved.txt")
    page.locator("#messages .approval button", has_text="Deny").click()
    expect(page.locator("#messages .approval-said").last).to_have_text("Denied.")


def test_closing_the_page_denies_the_waiting_call(browser: Browser, server: Server) -> None:
    context = browser.new_context()
    first = context.new_page()
    log_in(first, server)
    send(first, "shell: echo closed > closed-page.txt")
    expect(first.locator("#messages .approval")).to_contain_text("Allow this run_bash call?")
    session = first.evaluate("() => fetch('/api/sessions').then(r => r.json()).then(d => d.current)")
    first.close()  # the page goes away with the question open
    second = context.new_page()  # the same login, to read the transcript
    second.goto(server.url + "/")
    status = second.evaluate("""async (id) => {  // until the turn has stored the call's result
        for (let i = 0; i < 600; i++) {
            const data = await (await fetch(`/api/sessions/${id}`)).json();
            const tool = data.messages.find(m => m.role === "tool");
            if (tool) return tool.status;
            await new Promise(r => setTimeout(r, 100));
        }
        return "never stored";
    }""", session)
    assert status == "denied"
    assert not (server.home.parent / "workspace" / "closed-page.txt").exists()
    context.close()


def test_xss_from_model_tool_skill_and_memory_is_shown_as_text(
    page: tuple[Page, Watch], server: Server, tmp_path: Path
) -> None:
    page, _ = page
    log_in(page, server)

    send(page, "xss please")
    rendered = page.locator(".msg.assistant .rendered").last
    expect(rendered).to_contain_text("Here you go: <script>window.__xss=1;alert('model')</script>")
    expect(rendered).to_contain_text("<img src=x onerror=")
    expect(rendered).to_contain_text("[image: pixel]")
    tool = page.locator("details.tool").last
    tool.locator("summary").click()
    expect(tool.locator(".tool-result")).to_contain_text("<script>window.__xss=1;alert('tool')</script>")

    page.locator("#skill-list button", has_text="evil-skill").click()
    expect(page.locator("#skill-description")).to_have_text("Looks harmless <img src=x onerror=alert('description')>")
    expect(page.locator("#skill-body")).to_contain_text("<script>window.__xss=1;alert('skill')</script>")

    page.fill("#memory-q", "guanabana")
    page.press("#memory-q", "Enter")
    snippet = page.locator("#memory-results .snippet").first
    expect(snippet).to_contain_text("guanabana <script>window.__xss=1;alert('memory')</script>")
    expect(snippet.locator("mark")).to_have_text("guanabana")
    page.locator("#memory-results .hit").first.click()
    expect(page.locator("#transcript .msg.user").last).to_contain_text("alert('memory')</script>")
    screenshot(page, "dashboard-untrusted.png", tmp_path)

    page.click("#back-to-chat")
    page.reload()  # the live conversation is re-rendered from the server after a reload
    expect(page.locator("#messages .rendered").last).to_contain_text("alert('model')")
    _assert_nothing_loads_or_runs(page)


def test_the_mcp_panel_shows_what_a_server_sent_as_text(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    panel = page.locator("#mcp-panel")
    expect(panel).to_contain_text("10 tools", timeout=60_000)  # the page asks again while it starts
    expect(panel).to_contain_text("Not offered on the web")  # untrusted, and no HERMES_WEB_ENABLE_MCP
    panel.locator("summary").click()
    expect(panel.locator("code", has_text='<img src=x onerror="alert(1)">')).to_have_count(1)
    expect(panel).to_contain_text("<script>alert('description')</script>")
    _assert_nothing_loads_or_runs(page)


def test_the_files_a_turn_changed_are_shown_as_text(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    send(page, "write a file please")
    allow_once(page)
    files = page.locator("#messages .msg.files")
    expect(files.locator(".note")).to_contain_text("Changed 1 file · checkpoint")
    expect(files.locator("li.file.added")).to_have_text(f"added {FILE_XSS}")
    expect(page.locator("#messages .tool-arg").last).to_have_text(FILE_XSS)  # the path, as text
    expect(page.locator("#send")).to_be_enabled()
    page.locator("#session-list .current").click()  # the transcript shows each turn's files too
    expect(page.locator("#transcript .msg.files li")).to_have_text(f"added {FILE_XSS}")
    expect(page.locator("#transcript .tool-arg").last).to_have_text(FILE_XSS)
    _assert_nothing_loads_or_runs(page)


# --------------------------------------------------------------------------- hosts


def test_a_rebound_host_name_gets_nothing(page: tuple[Page, Watch], server: Server) -> None:
    """DNS rebinding: a foreign name resolving to the server is same-origin with itself, not with us."""
    page, watch = page
    port = server.url.rsplit(":", 1)[1]
    response = page.goto(f"http://rebind.test:{port}/login")
    assert response is not None and response.status == 400
    expect(page.locator("body")).to_contain_text("does not answer to that host name")
    assert page.locator("#password").count() == 0
    status = page.evaluate("fetch('/api/sessions').then(r => r.status)")
    assert status == 400
    watch.errors.clear()  # Chromium logs the refused requests as console errors
    watch.origin = f"http://rebind.test:{port}"


# --------------------------------------------------------------------------- login throttling


def test_a_known_browser_still_gets_in_during_a_distributed_guessing_attack(browser: Browser, server: Server) -> None:
    known = browser.new_context()
    stranger = browser.new_context()
    database = server.home / "memory.sqlite3"
    try:
        page = known.new_page()
        log_in(page, server)  # the owner's browser, once: it keeps a device cookie for /login
        page.click(".logout-form button")
        expect(page).to_have_url(server.url + "/login")
        device = [c for c in known.cookies() if c["name"] == "hermes_device"]
        assert device and device[0]["path"] == "/login" and device[0]["httpOnly"]

        with sqlite3.connect(database) as conn:  # 20 failures from 20 addresses just now
            conn.executemany("INSERT INTO web_login_attempts (client, at) VALUES (?, ?)",
                             [(f"198.51.100.{n}", time.time()) for n in range(20)])
        other = stranger.new_page()
        other.goto(server.url + "/login")
        other.fill("#password", PASSWORD)
        other.click("button[type=submit]")
        expect(other.locator(".error")).to_contain_text("from many addresses")
        expect(other).to_have_url(server.url + "/login")

        log_in(page, server)  # the owner's browser is not refused
    finally:
        with sqlite3.connect(database) as conn:
            conn.execute("DELETE FROM web_login_attempts")
        known.close()
        stranger.close()


def test_context_share_and_compact(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    log_in(page, server)
    send(page, "please list the files here")
    expect(page.locator(".msg.assistant .rendered strong")).to_have_text("two")
    expect(page.locator("#context")).to_have_text(re.compile(r"^context \d+%$"))
    send(page, "hello again")
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("ok")
    send(page, "/compact the files")  # typed like in the terminal app
    expect(page.locator(".note").last).to_contain_text("Compacted the conversation")
    expect(page.locator("#compact")).to_be_enabled()
    page.click("#compact")  # nothing older than the last turn is left to fold
    expect(page.locator(".note").last).to_have_text("Nothing to compact yet: the conversation is short.")


# --------------------------------------------------------------------------- the daily driver (issue 23, item 10)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])

AT_BOTTOM = "(s) => { const e = document.querySelector(s); return e.scrollHeight - e.scrollTop - e.clientHeight < 40; }"


def _seed_session(server: Server, texts: list[str], source: str = "tui") -> tuple[int, list[int]]:
    """A stored session written beside the running server (SQLite WAL: both may write)."""
    memory = MemoryStore(server.home / "memory.sqlite3")
    try:
        session = memory.new_session(source=source)
        ids = [memory.add_message(session, "user" if n % 2 == 0 else "assistant", text) for n, text in enumerate(texts)]
    finally:
        memory.close()
    return session, ids


def _user_prompts(server: Server) -> list[str]:
    return [m["content"] for r in server.llm.requests for m in r.messages if m["role"] == "user"]


def test_a_message_sent_while_a_new_session_opens_is_sent_there_and_stays_on_screen(
    page: tuple[Page, Watch], server: Server
) -> None:
    """Enter right after "New session": the switch used to wipe the message and its answer off
    the screen when it finished. Now the message waits, queued, until the new session is open."""
    page, _ = page
    log_in(page, server)
    held: list = []  # the switch's request, answered when the test says so (a slow network)

    def hold_the_switch(route) -> None:  # playwright's Route
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route("**/api/sessions", hold_the_switch)
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/api/sessions")):
        page.click("#new-session")
    send(page, "a long answer please")
    expect(page.locator("#queued .queued-text")).to_have_text("a long answer please")
    assert len(held) == 1 and not [p for p in _user_prompts(server) if "a long answer" in p]  # not sent yet
    held[0].continue_()
    expect(page.locator("#messages .rendered").last).to_contain_text("Paragraph 59")
    expect(page.locator("#messages .msg.user")).to_have_text(["a long answer please"])
    expect(page.locator("#queued .queued-text")).to_have_count(0)
    listed = page.request.get(f"{server.url}/api/sessions").json()
    newest = max(listed["sessions"], key=lambda s: s["id"])
    assert listed["current"] == newest["id"] and newest["message_count"] == 2  # the new session has it


@SIZES
def test_after_a_reload_the_streamed_answer_stays_on_screen(
    page: tuple[Page, Watch], server: Server, size: dict[str, int]
) -> None:
    page, _ = page
    page.set_viewport_size(size)
    log_in(page, server)
    page.click("#new-session")
    send(page, "a long answer please")
    expect(page.locator("#messages .rendered").last).to_contain_text("Paragraph 59")
    page.reload()
    expect(page.locator("#messages .rendered").last).to_contain_text("Paragraph 59")
    assert page.evaluate(AT_BOTTOM, "#messages")  # the reloaded conversation opens at its end

    page.evaluate("document.querySelector('#messages').scrollTop = 0")  # read from the top, then send
    send(page, "a long answer again")
    expect(page.locator("#messages .msg.user").last).to_have_text("a long answer again")
    expect(page.locator("#messages .rendered").last).to_contain_text("Paragraph 59")
    assert page.evaluate(AT_BOTTOM, "#messages")
    last = page.evaluate("""() => { const m = document.querySelector('#messages').getBoundingClientRect();
        const a = [...document.querySelectorAll('#messages .msg.assistant')].pop().getBoundingClientRect();
        return a.bottom <= m.bottom + 1 && a.bottom > m.top; }""")
    assert last  # the answer's end is inside the visible part of the chat

    # Scrolled up while it streams: the reader is left where they are.
    send(page, "talk slowly please")
    streaming = page.locator("#messages .msg.assistant.streaming")
    expect(streaming).to_contain_text("slow slow")
    page.evaluate("document.querySelector('#messages').scrollTop = 0")
    seen = len(streaming.inner_text())
    page.wait_for_function("(n) => document.querySelector('#messages .streaming').textContent.length > n + 100", arg=seen)
    assert page.evaluate("document.querySelector('#messages').scrollTop") == 0
    page.click("#stop")
    expect(page.locator(".stopped")).to_have_text("Stopped.")


@SIZES
def test_enter_during_a_turn_queues_the_message(
    page: tuple[Page, Watch], server: Server, size: dict[str, int], tmp_path: Path
) -> None:
    page, _ = page
    page.set_viewport_size(size)
    log_in(page, server)
    send(page, "talk slowly please")
    expect(page.locator(".msg.assistant.streaming")).to_contain_text("slow slow")
    send(page, f"queued hello {size['width']}")
    queued = page.locator("#queued .msg.user.queued")
    expect(queued).to_have_count(1)
    expect(queued.locator(".queued-label")).to_have_text("queued")
    expect(queued.locator(".queued-text")).to_have_text(f"queued hello {size['width']}")
    expect(page.locator("#chat-input")).to_have_value("")
    screenshot(page, f"dashboard-queued-{size['width']}.png", tmp_path)

    send(page, "take me back")  # queued too, then taken back into the box with its Edit button
    page.locator("#queued .msg.user.queued", has_text="take me back").locator(".take-back").click()
    expect(page.locator("#chat-input")).to_have_value("take me back")
    expect(queued).to_have_count(1)

    page.click("#stop")  # the turn ends: the queued message is sent
    expect(queued).to_have_count(0)
    expect(page.locator("#messages .msg.user").last).to_have_text(f"queued hello {size['width']}")
    expect(page.locator("#messages .rendered").last).to_have_text("ok")
    assert f"queued hello {size['width']}" in _user_prompts(server)
    assert "take me back" not in _user_prompts(server)
    expect(page.locator("#chat-input")).to_have_value("take me back")  # still there, unsent


def test_what_was_queued_behind_a_failed_turn_comes_back_to_the_box(page: tuple[Page, Watch], server: Server) -> None:
    page, watch = page
    log_in(page, server)
    send(page, "talk slowly please")
    expect(page.locator(".msg.assistant.streaming")).to_contain_text("slow slow")
    send(page, "fail this one")
    send(page, "queued behind the failure")
    expect(page.locator("#queued .msg.user.queued")).to_have_count(2)
    page.click("#stop")
    expect(page.locator("#messages .note").last).to_have_text(
        "The queued messages were not sent after the failure: they are in the box.", timeout=60_000)
    expect(page.locator("#chat-input")).to_have_value("fail this one\n\nqueued behind the failure")
    expect(page.locator("#queued .msg.user.queued")).to_have_count(0)
    assert "queued behind the failure" not in _user_prompts(server)
    watch.errors.clear()


def test_help_and_unknown_slash_words_stay_in_the_page(page: tuple[Page, Watch], server: Server, tmp_path: Path) -> None:
    page, watch = page
    log_in(page, server)
    before = len(server.llm.requests)
    send(page, "/help")
    card = page.locator("#help-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("/compact [focus]")
    expect(card).to_contain_text("Shift+Enter")
    expect(page.locator("#chat-input")).to_have_value("")
    expect(page.locator("#messages .msg.user")).to_have_count(0)

    send(page, "/frobnicate the widgets")
    expect(page.locator("#messages .error").last).to_have_text(
        "Unknown command /frobnicate: not sent. /help lists the commands of the web; "
        "start with // to send a line that begins with / as a message.")
    expect(page.locator("#chat-input")).to_have_value("/frobnicate the widgets")  # nothing typed is lost
    expect(page.locator("#messages .msg.user")).to_have_count(0)
    assert len(server.llm.requests) == before  # neither reached the model
    page.set_viewport_size(PHONE)
    expect(card).to_be_visible()
    screenshot(page, "dashboard-help-phone.png", tmp_path)
    page.click("#help-close")
    expect(card).to_be_hidden()
    watch.errors.clear()  # Chromium logs the refused /api/chat (400) as a console error


@SIZES
def test_a_tool_header_shows_its_summary_argument(page: tuple[Page, Watch], server: Server, size: dict[str, int]) -> None:
    page, _ = page
    page.set_viewport_size(size)
    log_in(page, server)
    send(page, "read the notes please")
    expect(page.locator("#messages .rendered").last).to_have_text("Read.")
    tool = page.locator("#messages details.tool").last
    assert tool.get_attribute("open") is None  # collapsed, and still shows what it read
    expect(tool.locator("summary .tool-arg")).to_have_text("notes.txt")
    expect(tool.locator("summary .tool-arg")).to_be_visible()
    page.reload()  # stored calls show it too
    expect(page.locator("#messages details.tool summary .tool-arg").last).to_have_text("notes.txt")


@SIZES
def test_headings_outrank_the_text_and_code_has_colours_and_a_copy_button(
    page: tuple[Page, Watch], server: Server, size: dict[str, int], tmp_path: Path
) -> None:
    page, _ = page
    page.set_viewport_size(size)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    log_in(page, server)
    send(page, "show me markdown")
    rendered = page.locator("#messages .rendered").last
    expect(rendered.locator("h1")).to_have_text("Big title")
    sizes = rendered.evaluate("""(r) => ['h1', 'h2', 'h3', 'p'].map(
        t => parseFloat(getComputedStyle(r.querySelector(t)).fontSize))""")
    assert sizes[0] > sizes[1] > sizes[2] > sizes[3], sizes
    expect(rendered.locator("pre span.k").first).to_have_text("def")
    keyword, text = rendered.evaluate("""(r) => [getComputedStyle(r.querySelector('pre .k')).color,
        getComputedStyle(r.querySelector('pre .n, pre .nf')).color]""")
    assert keyword != text  # highlighted: the keyword has a colour of its own
    screenshot(page, f"dashboard-markdown-{size['width']}.png", tmp_path)

    copy = rendered.locator(".code-block .copy")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == CODE + "\n"

    # Without the clipboard API (plain http from another host) the button still copies.
    page.evaluate("""() => { window.__clipboard = navigator.clipboard;
        Object.defineProperty(navigator, 'clipboard', { get: () => undefined }); }""")
    page.evaluate("window.__clipboard.writeText('something else')")
    expect(copy).to_have_text("Copy", timeout=5_000)
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("window.__clipboard.readText()") == CODE + "\n"


def test_a_memory_hit_opens_the_transcript_at_it(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    texts = [f"filler message number {n} about nothing much" for n in range(40)]
    texts[33] = "the kumquatzest recipe is here"
    _, ids = _seed_session(server, texts)
    log_in(page, server)
    page.fill("#memory-q", "kumquatzest")
    page.press("#memory-q", "Enter")
    page.locator("#memory-results .hit").first.click()
    hit = page.locator(f'#transcript [data-message-id="{ids[33]}"]')
    expect(hit).to_have_class(re.compile(r"\bhit\b"))
    expect(hit).to_contain_text("kumquatzest")
    expect(hit).to_be_in_viewport()
    inside = page.evaluate("""(id) => { const t = document.querySelector('#transcript').getBoundingClientRect();
        const h = document.querySelector(`#transcript [data-message-id="${id}"]`).getBoundingClientRect();
        return h.top >= t.top && h.bottom <= t.bottom; }""", ids[33])
    assert inside  # scrolled to it, not left at the top
    assert page.evaluate("document.querySelector('#transcript').scrollTop") > 0


def test_resume_a_session_continue_the_live_one_and_delete_another(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    resumed, _ = _seed_session(server, ["durian diary entry", "Noted, the durian diary."])
    doomed, _ = _seed_session(server, ["a doomed wombat session", "ok"])
    log_in(page, server)
    page.locator("#session-list button", has_text="durian diary entry").click()
    expect(page.locator("#transcript-kind")).to_have_text("read-only")
    page.click("#resume-session")
    expect(page.locator("#chat-form")).to_be_visible()
    expect(page.locator("#messages .msg.user").first).to_have_text("durian diary entry")
    expect(page.locator("#session-list .current")).to_contain_text("durian diary entry")
    send(page, "and the mango diary?")
    expect(page.locator("#messages .rendered").last).to_have_text("ok")
    # The turn's request: background ones (the ended session's summary and facts) stream too, and
    # may come after it.
    last = next(r for r in reversed(server.llm.requests)
                if any(m["role"] == "user" and m["content"] == "and the mango diary?" for m in r.messages))
    assert [m["content"] for m in last.messages if m["role"] == "user"][-2:] == ["durian diary entry", "and the mango diary?"]

    page.locator("#session-list .current").click()  # the live one opens ready to go on
    expect(page.locator("#transcript-kind")).to_have_text("your live conversation")
    expect(page.locator("#delete-session")).to_be_hidden()
    page.click("#resume-session")  # "Continue"
    expect(page.locator("#chat-form")).to_be_visible()

    page.locator("#session-list button", has_text="a doomed wombat session").click()
    page.click("#delete-session")
    expect(page.locator("#delete-confirm")).to_be_visible()
    page.click("#delete-no")  # asked first: keeping it keeps it
    expect(page.locator("#delete-confirm")).to_be_hidden()
    expect(page.locator("#session-list")).to_contain_text("a doomed wombat session")
    page.click("#delete-session")
    page.click("#delete-yes")
    expect(page.locator("#status")).to_have_text(f"Deleted session #{doomed}.")
    expect(page.locator("#session-list")).not_to_contain_text("a doomed wombat session")
    memory = MemoryStore(server.home / "memory.sqlite3")
    try:
        assert memory.get_session(doomed) is None and memory.get_session(resumed) is not None
    finally:
        memory.close()


def test_at_phone_width_the_memory_search_is_in_the_first_viewport(page: tuple[Page, Watch], server: Server) -> None:
    page, _ = page
    for n in range(40):
        _seed_session(server, [f"one of many sessions, number {n}", "ok"])
    page.set_viewport_size(PHONE)
    log_in(page, server)
    # The list arrives after the page (a fetch): wait for it, as a reader does.
    page.wait_for_function("document.querySelectorAll('#session-list li').length >= 40")
    box = page.locator("#memory-q").bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], box
    expect(page.locator("#memory-q")).to_be_in_viewport()
    page.fill("#memory-q", "papaya")
    page.press("#memory-q", "Enter")
    expect(page.locator("#memory-results .hit").first).to_be_in_viewport()


def test_the_image_button_uploads_an_image_for_the_next_message(page: tuple[Page, Watch], server: Server,
                                                                tmp_path: Path) -> None:
    from PIL import Image

    page, watch = page
    shot = tmp_path / "screen.png"
    Image.new("RGB", (64, 48), "purple").save(shot, "PNG")
    (tmp_path / "notes.png").write_text("not a picture\n")
    log_in(page, server)
    page.set_input_files("#attach-image", str(tmp_path / "notes.png"))
    expect(page.locator("#messages .error").last).to_have_text(
        "Not attached: notes.png is not an image Hermes can send (PNG, JPEG, GIF or WebP).")
    watch.errors.clear()  # Chromium logs the refusal's 400 as a console error
    page.set_input_files("#attach-image", str(shot))
    expect(page.locator("#messages .note").last).to_have_text(
        "Attached screen.png (PNG, 64×48): it goes with your next message.")
    send(page, "what is on my purple screen?")
    expect(page.locator(".msg.assistant .rendered").last).to_have_text("ok")
    (turn,) = [r for r in server.llm.requests if "purple screen" in str(r.messages[-1]["content"])]
    assert turn.images == [("user", "image/png", shot.read_bytes())]
