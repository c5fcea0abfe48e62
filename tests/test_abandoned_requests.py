"""Background model calls (session summary, curator) that are given up close their connection.

A one-at-a-time local server (llama.cpp) keeps working for a request until it notices that its
client hung up, which it does only between the tokens of a stream: so a background request is
streamed, and abandoning it (its deadline, or a cancel) closes the connection at once. The fake
server counts the streams whose client hung up before their end (``hang_ups``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from hermes_tui.events import SkillLearned, TurnFinished
from tests.engine_harness import SKILL_ANSWER, make_loop, stores  # noqa: F401 - the fixture
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import wait_until

SLOW = Reply(text="a summary that takes long " * 100, chunk_size=4, chunk_delay=0.05)  # ~650 events, ~30 s


def test_an_abandoned_summary_closes_its_connection(stores, fake_llm_env: FakeLLMServer) -> None:
    _config, memory, _skills = stores
    loop = make_loop(stores)
    list(loop.run_turn("hi"))
    fake_llm_env.queue(SLOW, Reply(text="the next answer"))
    cancel = threading.Event()
    result: dict[str, object] = {}
    thread = threading.Thread(target=lambda: result.update(summary=loop.close(timeout=600, cancel=cancel)))
    thread.start()
    assert wait_until(lambda: len(fake_llm_env.requests) == 2)
    cancel.set()
    thread.join(timeout=30)
    assert not thread.is_alive() and result["summary"] is None
    assert wait_until(lambda: fake_llm_env.hang_ups == 1)  # the slow stream was hung up on, mid-way
    assert memory.get_session(loop.session_id).summary is None
    events = list(make_loop(stores).run_turn("and now?"))  # the server is free for the user
    assert next(e for e in events if isinstance(e, TurnFinished)).text == "the next answer"


def test_a_summary_past_its_deadline_closes_its_connection(stores, fake_llm_env: FakeLLMServer) -> None:
    loop = make_loop(stores)
    list(loop.run_turn("hi"))
    fake_llm_env.queue(SLOW)
    assert loop.close(timeout=1.0) is None
    assert wait_until(lambda: fake_llm_env.hang_ups == 1)


def test_cancel_abandons_the_curator_and_closes_its_connection(stores, fake_llm_env: FakeLLMServer,
                                                               workspace: Path) -> None:
    (workspace / "data.txt").write_text("alpha\n")
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "data.txt"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "data.txt"})]),
        Reply(text="Done."),
        SLOW,  # the curator's request
    )
    loop = make_loop(stores)
    seen: list[object] = []
    finished = threading.Event()

    def consume() -> None:
        for event in loop.run_turn("look at data.txt"):
            seen.append(event)
            if isinstance(event, TurnFinished):
                finished.set()

    thread = threading.Thread(target=consume)
    thread.start()
    assert finished.wait(60)
    assert wait_until(lambda: len(fake_llm_env.requests) == 5)
    loop.cancel()
    thread.join(timeout=30)
    assert not thread.is_alive() and not [e for e in seen if isinstance(e, SkillLearned)]
    assert wait_until(lambda: fake_llm_env.hang_ups == 1)
    fake_llm_env.queue(Reply(text=SKILL_ANSWER))
    assert isinstance(next(iter(loop.learn_now())), SkillLearned)  # /learn afterwards is not abandoned
