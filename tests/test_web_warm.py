"""The served ``hermes-web`` makes its model calls in the per-user warm helper (hermes_tui/warm.py).

With the helper on as shipped (``HERMES_HELPER`` unset) the web process never imports litellm: a
turn's stream and token counts, the window, ``/api/context`` and a retired session's summary all
run in the helper, which every ``hermes-web`` of the user (every gunicorn worker) attaches to.
Which modules a process imported is read from ``PYTHONPROFILEIMPORTTIME``'s lines on its stderr;
the helper's stderr is not the web's. With the helper off the web imports litellm itself.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from hermes_tui import warm
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply
from tests.helpers import wait_until
from tests.web_harness import Served, llm, served_login, serving, web_env  # noqa: F401 - fixtures among them

pytestmark = pytest.mark.timeout(900)  # the helper's first start imports litellm: a minute loaded

SUMMARY = "I said hello to the user."
SESSION_SUMMARY = "note to your future self"  # a closing session's summary prompt (agent/prompts.py)
MEMORY_CURATOR = "What the user wrote"  # the memory curator's prompt
REACHED = re.compile(r"model calls go to the warm helper \(pid (\d+)\)")


def answer(request: RecordedRequest) -> Reply:
    """Summaries and turns told apart by their prompt, so their order never matters."""
    if SESSION_SUMMARY in str(request.messages):
        return Reply(text=SUMMARY)
    if MEMORY_CURATOR in str(request.messages):
        return Reply(text="NONE")  # nothing worth keeping
    return Reply(text="Answered: " + str(request.messages[-1]["content"])[:40], chunk_size=4)


def litellm_imports(err: Path) -> list[str]:
    """The litellm modules a process imported (its PYTHONPROFILEIMPORTTIME lines on stderr)."""
    modules = [line.rsplit("|", 1)[-1].strip() for line in err.read_text().splitlines()
               if line.startswith("import time:")]
    assert any(name == "hermes_tui.web.serve" for name in modules)  # the lines are there to read
    return [name for name in modules if name.split(".")[0] == "litellm"]


def talk(server: Served) -> tuple[str, int | None]:
    """One chat turn over HTTP: the answer's text and the context tokens counted for it."""
    cookie, token = served_login(server)
    headers = {"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"}
    response = server.request("POST", "/api/chat", json.dumps({"message": "hello there"}).encode(), headers, 300)
    events = [json.loads(line) for line in response.read().decode().splitlines()]
    usage = [e for e in events if e["type"] == "usage" and e.get("context_tokens")]
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    context = server.request("GET", "/api/context", headers=headers, timeout=300)  # counted for a new one too
    assert context.status == 200 and json.loads(context.read())["parts"]
    retired = server.request("POST", "/api/sessions", b"{}", headers, 30)  # the old one is summarized
    assert retired.status == 201, retired.read()
    return text, usage[-1]["context_tokens"] if usage else None


def test_the_served_web_answers_through_the_warm_helper_and_never_imports_litellm(
        llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path, runtime: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ``hermes-web`` of one user (as two gunicorn workers) start at once: they attach to one
    helper, which answers the turn, its counts and the retired session's summary."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("HERMES_HELPER", raising=False)  # as shipped (conftest turns it off)
    warm.stop()  # none runs: the web starts it
    llm.responder = answer
    imports = {"PYTHONPROFILEIMPORTTIME": "1"}
    with serving(web_env, tmp_path, extra_env=imports) as first, \
            serving(web_env, tmp_path, extra_env=imports, name="second") as second:
        text, counted = talk(first)
        assert text == "Answered: hello there"
        assert counted is not None and counted > 0
        assert wait_until(lambda: any(SESSION_SUMMARY in str(r.messages) for r in llm.requests), 300)
        assert wait_until(lambda: len(REACHED.findall(first.log_text())) == 2, 300), first.log_text()
        running = warm.status()
        assert running is not None and running[1] == warm.identity()
        assert REACHED.findall(first.log_text()) == [str(running[0])] * 2  # both webs, the one helper
        assert second.process.poll() is None
    assert litellm_imports(tmp_path / "served.err") == []
    assert litellm_imports(tmp_path / "second.err") == []


def test_with_the_helper_off_the_web_imports_litellm_itself(
        llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path) -> None:
    llm.responder = answer
    with serving(web_env, tmp_path, extra_env={"PYTHONPROFILEIMPORTTIME": "1"}) as server:
        text, counted = talk(server)
        assert text == "Answered: hello there"
        assert counted is not None and counted > 0
        assert wait_until(lambda: any(SESSION_SUMMARY in str(r.messages) for r in llm.requests), 300)
        assert "LLM layer warmed" in server.log_text() and not REACHED.search(server.log_text())
    assert litellm_imports(tmp_path / "served.err")


def test_the_web_holds_the_helper_and_starts_it_again_when_it_goes_away(
        llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path, runtime: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper killed under a running dashboard is replaced by the web's hello (every idle/3
    seconds: 1 s here), not by the next turn, which then finds it warm."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("HERMES_HELPER", raising=False)
    monkeypatch.setenv("HERMES_HELPER_IDLE", "3")
    llm.responder = answer
    with serving(web_env, tmp_path) as server:
        assert wait_until(lambda: REACHED.search(server.log_text()) is not None, 300), server.log_text()
        first = warm.status()
        assert first is not None
        os.kill(first[0], signal.SIGKILL)
        assert wait_until(lambda: (now := warm.status()) is not None and now[0] != first[0], 300)
        text, _counted = talk(server)
        assert text == "Answered: hello there"
