"""The web tests' harness: the app on tmp_path with the fake server, a login, a chat, the served process."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from hermes_tui.config import Config
from hermes_tui.web import create_app
from hermes_tui.web.context import EXTENSION
from hermes_tui.web.render import TOKEN_CLASSES
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer
from tests.helpers import wait_until

PASSWORD = "papaya orbit lantern 42"
SECRET = "test-secret-key-0123456789abcdef"
COOKIE = "hermes_session"

XSS_MARKDOWN = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<svg onload=alert(1)><circle/></svg>",
    "[click me](javascript:alert(1))",
    "[click me](JaVaScRiPt:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![tracker](http://evil.example/pixel.png)",
    "![inline](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=http://evil.example></iframe>",
    '<div style="background:url(http://evil.example/x)">x</div>',
    "`<script>alert(1)</script>` and ```\n<script>alert(1)</script>\n```",
]
XSS_HTML = [
    "<script>alert(1)</script>",
    '<img src="http://evil.example/x.png" onerror="alert(1)">',
    '<img src="data:image/png;base64,AAAA">',
    "<svg><script>alert(1)</script></svg>",
    '<svg onload="alert(1)"></svg>',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="  jav&#x09;ascript:alert(1)">x</a>',
    '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    '<p onclick="alert(1)" style="color:red">x</p>',
    '<iframe src="http://evil.example"></iframe>',
    '<math><mtext><style><img src=x onerror=alert(1)></style></mtext></math>',
    '<form action="http://evil.example"><input name=x></form>',
    '<base href="http://evil.example/">',
    '<meta http-equiv="refresh" content="0;url=http://evil.example">',
]
SAFE_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
             "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "span", "mark"}
SAFE_ATTRIBUTES = {"href", "title", "rel", "target", "start"}


class _Inspector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in SAFE_TAGS:
            self.problems.append(f"tag <{tag}>")
        for name, value in attrs:
            if tag == "span" and name == "class" and set((value or "").split()) <= TOKEN_CLASSES:
                continue  # Pygments' token classes, for highlighted code
            if name not in SAFE_ATTRIBUTES:
                self.problems.append(f"attribute {name} on <{tag}>")
            if name == "href" and not re.match(r"(https?:|mailto:|/|#)", value or "", re.IGNORECASE):
                self.problems.append(f"href {value!r}")
            if tag == "a" and name == "rel" and value != "noopener noreferrer":
                self.problems.append(f"rel {value!r}")


def assert_inert(html: str) -> None:
    """Only allowlisted tags and attributes; links only to http(s)/mailto; nothing that loads or runs."""
    inspector = _Inspector()
    inspector.feed(html)
    inspector.close()
    assert not inspector.problems, (inspector.problems, html)


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def web_env(hermes_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLASK_SECRET_KEY", SECRET)
    monkeypatch.setenv("HERMES_WEB_PASSWORD", PASSWORD)
    return hermes_home


@pytest.fixture
def llm(fake_llm: FakeLLMServer, web_env: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    """The fake server on the OpenAI wire (tests that need no per-wire coverage)."""
    for name, value in wire_env(fake_llm, "openai").items():
        monkeypatch.setenv(name, value)
    return fake_llm


@pytest.fixture
def make_app(web_env: Path) -> Iterator[Any]:
    """Build apps from the current environment; their background work is stopped afterwards."""
    apps: list[Flask] = []

    def make(**kwargs: Any) -> Flask:
        app = create_app(Config.load(), **kwargs)
        app.config["TESTING"] = True
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.extensions[EXTENSION].state.close()


@pytest.fixture
def app(make_app: Any, llm: FakeLLMServer) -> Flask:
    return make_app()


def csrf_from(html: str) -> str:
    match = re.search(r'name="csrf-token" content="([^"]+)"', html) or re.search(
        r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF token in the page"
    return match.group(1)


def try_login(client: FlaskClient, password: str = PASSWORD, **kwargs: Any) -> Any:
    token = csrf_from(client.get("/login", **kwargs).get_data(as_text=True))
    return client.post("/login", data={"csrf_token": token, "password": password}, **kwargs)


def login(client: FlaskClient, password: str = PASSWORD) -> str:
    """Log in; return the dashboard's CSRF token for API calls."""
    response = try_login(client, password)
    assert response.status_code == 302 and response.headers["Location"] == "/", response.get_data(as_text=True)
    return csrf_from(client.get("/").get_data(as_text=True))


def ndjson(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "application/x-ndjson"
    return [json.loads(line) for line in response.get_data(as_text=True).splitlines()]


def lines_of(response: Any) -> Iterator[dict[str, Any]]:
    """Read an unbuffered streaming response line by line as it is produced."""
    buffer = b""
    for chunk in response.response:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def chat(client: FlaskClient, token: str, text: str, **kwargs: Any) -> Any:
    return client.post("/api/chat", json={"message": text}, headers={"X-CSRF-Token": token}, **kwargs)


def cookie_value(client: FlaskClient) -> str | None:
    cookie = client.get_cookie(COOKIE)
    return cookie.value if cookie else None


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] not in ("usage", "keepalive")]


@dataclass
class Served:
    """``hermes-web`` started through its entry point, as on Railway, on a free local port."""

    process: subprocess.Popen[bytes]
    port: int
    home: Path
    log_dir: Path

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 5.0) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        connection.request(method, path, body=body, headers=headers or {})
        return connection.getresponse()

    def log_text(self) -> str:
        path = self.log_dir / "hermes.log"
        return path.read_text() if path.exists() else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def approve(client: FlaskClient, token: str, call_id: str, decision: str) -> Any:
    return client.post("/api/approve", json={"id": call_id, "decision": decision}, headers={"X-CSRF-Token": token})


def chat_answering(client: FlaskClient, token: str, text: str, decision: str = "once") -> list[dict[str, Any]]:
    """A turn's events, answering every approval question with ``decision`` as it comes (the page's buttons)."""
    events = []
    for event in lines_of(chat(client, token, text, buffered=False)):
        events.append(event)
        if event["type"] == "approval_needed":
            answered = approve(client, token, event["id"], decision)
            assert answered.status_code == 200, answered.get_data(as_text=True)
    return events


@contextmanager
def serving(web_env: Path, tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None,
            name: str = "served") -> Iterator[Served]:
    """A real ``hermes-web`` (gunicorn) on a free port with ``args``, once it answers its login page;
    its stderr in ``tmp_path/<name>.err``. ``XDG_RUNTIME_DIR`` (where the warm helper's socket is)
    is passed on when set."""
    port = free_port()
    home = tmp_path / "served-home"
    env = {**{k: v for k, v in os.environ.items() if k.startswith(("HERMES_", "OPENAI_", "FLASK_", "XDG_RUNTIME_DIR"))},
           "PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(Path(__file__).parents[1]),
           **(extra_env or {})}
    with open(tmp_path / f"{name}.err", "wb") as stderr:
        process = subprocess.Popen([str(Path(sys.executable).with_name("hermes-web")), "--port", str(port), *args],
                                   env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
        server = Served(process, port, web_env, home / ".local" / "state" / "hermes" / "log")

        def answers() -> bool:
            assert process.poll() is None, (tmp_path / f"{name}.err").read_text()
            try:
                return server.request("GET", "/login", timeout=2).status == 200
            except OSError:
                return False

        try:
            assert wait_until(answers, 90), "hermes-web did not answer within 90 s"
            yield server
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


@pytest.fixture
def served(llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path) -> Iterator[Served]:
    with serving(web_env, tmp_path) as server:
        yield server


def served_login(served: Served) -> tuple[str, str]:
    """Log in over HTTP; returns (cookie header, CSRF token for the API)."""
    page = served.request("GET", "/login")
    cookie = page.getheader("Set-Cookie").split(";", 1)[0]
    token = csrf_from(page.read().decode())
    form = f"csrf_token={token}&password={PASSWORD.replace(' ', '+')}".encode()
    done = served.request("POST", "/login", form, {"Cookie": cookie,
                                                   "Content-Type": "application/x-www-form-urlencoded"})
    assert done.status == 302, done.read()
    cookie = next(v.split(";", 1)[0] for k, v in done.getheaders() if k.lower() == "set-cookie"
                  and v.startswith(COOKIE + "="))
    index = served.request("GET", "/", headers={"Cookie": cookie})
    return cookie, csrf_from(index.read().decode())
