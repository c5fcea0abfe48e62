"""The dashboard's daily-driver fixes (issue 23, item 10) that are server behaviour, through Flask's
test client on real core objects and the fake LLM server: slash words never reach the model, tool
calls carry the argument their header shows, stored messages carry ids, a stored session can be
resumed, code blocks come highlighted and still inert."""

from __future__ import annotations

from flask import Flask

from hermes_tui.web.context import EXTENSION
from hermes_tui.web.render import markdown_html, sanitize
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.web_harness import app, assert_inert, chat, llm, login, make_app, ndjson, web_env  # noqa: F401 - fixtures


def test_a_slash_word_is_refused_with_one_line_and_never_sent(app: Flask, llm: FakeLLMServer) -> None:
    client = app.test_client()
    token = login(client)
    unknown = chat(client, token, "/frobnicate the widgets")
    assert unknown.status_code == 400
    assert unknown.get_json()["error"].startswith("Unknown command /frobnicate: not sent. /help lists")
    page_run = chat(client, token, "/help")
    assert page_run.status_code == 400 and "run by the page" in page_run.get_json()["error"]
    assert llm.requests == []

    events = ndjson(chat(client, token, "//etc holds the config"))  # // escapes a leading slash
    assert events[-1]["type"] == "turn_finished"
    ndjson(chat(client, token, "/var/log/syslog shows errors, why?"))  # a path is a message
    sent = [m["content"] for r in llm.requests for m in r.messages if m["role"] == "user"]
    assert "/etc holds the config" in sent and "/var/log/syslog shows errors, why?" in sent
    assert not any("frobnicate" in text or text == "/help" for text in sent)


def test_tool_calls_carry_the_argument_their_header_shows(app: Flask, llm: FakeLLMServer) -> None:
    client = app.test_client()
    token = login(client)
    llm.queue(Reply(tool_calls=[ToolCall("read_file", {"path": "<b>notes</b>.txt"}), ToolCall("glob", {"pattern": "**/*.py"})]),
              Reply(text="done"))
    events = ndjson(chat(client, token, "look around"))
    started = [e for e in events if e["type"] == "tool_call_started"]
    assert [e["summary"] for e in started] == ["<b>notes</b>.txt", "**/*.py"]  # text: the page uses textContent
    stored = client.get(f"/api/sessions/{events[0]['session_id']}").get_json()["messages"]
    assert [c["summary"] for c in stored[1]["tool_calls"]] == ["<b>notes</b>.txt", "**/*.py"]
    assert all(isinstance(m["id"], int) for m in stored)  # a memory hit's message_id finds it


def test_resume_makes_a_stored_session_this_browsers_conversation(
    app: Flask, make_app: object, llm: FakeLLMServer
) -> None:
    memory = app.extensions[EXTENSION].state.memory
    stored = memory.new_session(source="tui")
    memory.add_message(stored, "user", "remember the kiwi orchard")
    memory.add_message(stored, "assistant", "Noted: the kiwi orchard.")
    client = app.test_client()
    token = login(client)
    assert client.post(f"/api/sessions/{stored}/resume").status_code == 403  # no CSRF token
    assert client.post("/api/sessions/999999/resume", headers={"X-CSRF-Token": token}).status_code == 404
    response = client.post(f"/api/sessions/{stored}/resume", headers={"X-CSRF-Token": token})
    assert response.status_code == 200 and response.get_json() == {"id": stored}
    assert client.get("/api/sessions").get_json()["current"] == stored

    events = ndjson(chat(client, token, "and the pears?"))
    assert events[0] == {"type": "turn_started", "session_id": stored}
    sent = [m["content"] for m in llm.requests[-1].messages if m["role"] in ("user", "assistant")]
    assert sent[:3] == ["remember the kiwi orchard", "Noted: the kiwi orchard.", "and the pears?"]

    other = app.test_client()  # a second browser may not open the same conversation
    other_token = login(other)
    taken = other.post(f"/api/sessions/{stored}/resume", headers={"X-CSRF-Token": other_token})
    assert taken.status_code == 409 and "another browser" in taken.get_json()["error"]
    deleted = client.delete(f"/api/sessions/{stored}", headers={"X-CSRF-Token": token})
    assert deleted.status_code == 409  # the open conversation is not deleted from under itself


def test_code_blocks_are_highlighted_and_stay_inert() -> None:
    html = markdown_html('```python\ndef f():\n    return "<script>alert(1)</script>"\n```\n\n'
                         '```html\n<img src=x onerror=alert(1)>\n```\n\n```\nplain <b>text</b>\n```\n')
    assert '<span class="k">def</span>' in html and '<span class="nf">f</span>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<pre><code>plain &lt;b&gt;text&lt;/b&gt;\n</code></pre>" in html  # no language: nothing guessed
    assert_inert(html)
    # The sanitiser keeps Pygments' token classes on spans, and nothing else.
    assert sanitize('<span class="k evil" onclick="alert(1)">a</span><p class="k">b</p>') == '<span class="k">a</span><p>b</p>'

