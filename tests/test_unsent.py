"""A message whose turn failed before any answer (a 500 on every retry) is not sent again merged
into the next one, nor folded by /compact: it is offered back, in the TUI's prompt and in the
web's message box. Against the fake server's fault injection."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from hermes_tui.events import Error, Unsent
from hermes_tui.tui.app import HermesApp
from tests.engine_harness import make_loop, stores
from tests.fakes.server import FakeLLMServer, Fault, Reply
from tests.tui_harness import notices, run, send, server, wait_for
from tests.web_harness import PASSWORD, app, chat, llm, login, make_app, ndjson, types, web_env

__all__ = ["PASSWORD", "app", "llm", "make_app", "server", "stores", "web_env"]
FAIL = (Fault(500), Fault(500), Fault(500))  # every retry


def sent_texts(request: object) -> str:
    return "\n".join(str(m) for m in request.messages)


def test_a_failed_message_is_not_resent_nor_compacted(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    fake_llm_env.queue(*FAIL)
    events = list(loop.run_turn("boom now"))
    assert any(isinstance(e, Error) for e in events)
    assert Unsent("boom now") in events
    assert events.index(Unsent("boom now")) < len(events) - 1  # before TurnFinished
    fake_llm_env.queue(Reply(text="fine"))
    assert events[-1].stopped_reason == "error"
    list(loop.run_turn("ratelimit me"))
    last = fake_llm_env.requests[-1]
    assert "ratelimit me" in sent_texts(last) and "boom now" not in sent_texts(last)
    fake_llm_env.queue(Reply(text="## Goals\n- none"))
    list(loop.compact())
    assert all("boom now" not in sent_texts(r) for r in fake_llm_env.requests[3:])
    _, memory, _ = stores
    assert "boom now" in [m.content for m in memory.get_messages(loop.session_id)]  # memory keeps it


def test_a_turn_that_answered_before_failing_keeps_its_message(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    fake_llm_env.queue(Reply(text="partial partial partial partial", chunk_size=4, cut_after=4))
    events = list(loop.run_turn("tell me"))
    assert not any(isinstance(e, Unsent) for e in events)  # it was answered in part: it stays
    fake_llm_env.queue(Reply(text="more"))
    list(loop.run_turn("go on"))
    assert "tell me" in sent_texts(fake_llm_env.requests[-1])


def test_the_tui_gives_a_failed_message_back_to_the_prompt(server: FakeLLMServer) -> None:
    server.queue(*FAIL, Reply(text="second try worked"))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, "boom now")
        await wait_for(pilot, lambda: not app.chat.busy and app.chat.prompt.text, timeout=120)
        await pilot.pause()
        assert app.chat.prompt.text == "boom now"
        assert any(n.startswith("Not sent") or "Not sent" in n for n in notices(app))
        await pilot.press("enter")  # retry as it is
        await wait_for(pilot, lambda: len(server.requests) == 4 and not app.chat.busy)
        user_turns = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
        assert len(user_turns) == 1 and str(user_turns[0]["content"]).startswith("boom now")
        assert "\n\nboom now" not in str(user_turns[0]["content"])

    run(scenario)


def test_the_web_offers_a_failed_message_back(app, llm: FakeLLMServer) -> None:
    client = app.test_client()
    token = login(client)
    llm.queue(*FAIL, Reply(text="answered"))
    events = ndjson(chat(client, token, "boom now"))
    assert {"type": "unsent", "text": "boom now"} in events and "error" in types(events)
    ndjson(chat(client, token, "something else"))
    sent = sent_texts(llm.requests[-1])
    assert "something else" in sent and "boom now" not in sent


def test_the_web_starts_a_new_session_when_its_own_was_forgotten_elsewhere(app, llm: FakeLLMServer,
                                                                          hermes_home: Path) -> None:
    """The TUI's /forget deleted the web's live session: every message then failed with
    "KeyError: 'no session 14'" until "New session". Now the next message starts one, and says so."""
    from hermes_tui.memory.store import MemoryStore

    client = app.test_client()
    token = login(client)
    llm.queue(Reply(text="first"), Reply(text="second"))
    first = ndjson(chat(client, token, "hello"))
    old = next(e["session_id"] for e in first if e["type"] == "turn_started")
    with MemoryStore(hermes_home / "memory.sqlite3") as other:  # another process forgets it
        other.delete_session(old)
    events = ndjson(chat(client, token, "still there?"))
    assert "error" not in types(events), events
    assert events[0]["type"] == "notice" and f"Session {old} was forgotten elsewhere" in events[0]["message"]
    new = next(e["session_id"] for e in events if e["type"] == "turn_started")
    assert {"type": "turn_finished", "text": "second", "tool_calls": 0, "stopped_reason": "done"} in events
    with MemoryStore(hermes_home / "memory.sqlite3") as other:  # (SQLite may reuse the freed id)
        assert [m.content for m in other.get_messages(new)] == ["still there?", "second"]
