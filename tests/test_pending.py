"""Pending session summaries (hermes_tui/learning/pending.py) against the fake server, both wires.

A summary that does not finish when its session closes stays pending in the store, its request
is closed (a one-at-a-time local server is free again), and it is written later: by a background
writer that gives way to the user's turns, or by ``hermes-tui doctor``. The user is told once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.learning import pending
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply
from tests.helpers import cli, wait_until

LONG = " ".join(f"word{n}" for n in range(400))
SLOW = Reply(text=LONG, chunk_size=5, chunk_delay=0.05)  # ~4 s of streaming: far past the timeouts below


@pytest.fixture
def stores(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> Iterator[tuple[Config, MemoryStore]]:
    config = Config.load()
    memory = MemoryStore(config.db_path)
    yield config, memory
    memory.close()


def a_session(stores: tuple[Config, MemoryStore], server: FakeLLMServer) -> AgentLoop:
    config, memory = stores
    loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
    server.queue(Reply(text="Kiwi noted."))
    list(loop.run_turn("remember kiwi"))
    return loop


def test_an_unfinished_summary_stays_pending_its_request_closes_and_it_is_written_later(
        stores: tuple[Config, MemoryStore], fake_llm_env: FakeLLMServer) -> None:
    config, memory = stores
    loop = a_session(stores, fake_llm_env)
    fake_llm_env.queue(SLOW)
    assert loop.close(timeout=0.5) is None  # the quit grace ran out
    assert pending.pending(memory) == [loop.session_id]
    assert memory.get_session(loop.session_id).summary is None
    # Abandoned means closed: the server is not left generating for nobody.
    assert wait_until(lambda: fake_llm_env.open_connections == 0)
    assert len(fake_llm_env.requests) == 2

    assert pending.tell(memory) == f"{pending.TOLD} (session {loop.session_id})."
    assert pending.tell(memory) is None  # once

    fake_llm_env.queue(Reply(text="I noted that the user likes kiwi."))
    from hermes_tui.llm import LLMClient

    writer = pending.Writer(memory, LLMClient(config)).start()
    assert writer.done.wait(60)
    assert writer.written == 1 and pending.pending(memory) == []
    assert memory.get_session(loop.session_id).summary == "I noted that the user likes kiwi."
    assert "remember kiwi" in str(fake_llm_env.requests[-1].messages)


def test_a_summary_that_finishes_leaves_nothing_pending(stores: tuple[Config, MemoryStore],
                                                        fake_llm_env: FakeLLMServer) -> None:
    _, memory = stores
    loop = a_session(stores, fake_llm_env)
    fake_llm_env.queue(Reply(text="Kiwi."))
    assert loop.close(timeout=30) == "Kiwi."
    assert pending.pending(memory) == [] and pending.tell(memory) is None


def test_the_summary_names_the_session(stores: tuple[Config, MemoryStore], fake_llm_env: FakeLLMServer) -> None:
    """#23 item 24: a session was titled by its first message ("remember kiwi"); now by its summary."""
    _, memory = stores
    loop = a_session(stores, fake_llm_env)
    fake_llm_env.queue(Reply(text="The user told me they like kiwi.\n**Title:** Kiwi, the favourite fruit"))
    assert loop.close(timeout=30) == "The user told me they like kiwi."
    assert any("\"Title:\"" in str(r.messages) for r in fake_llm_env.requests)  # the summary prompt asks for it
    info = memory.get_session(loop.session_id)
    assert (info.title, info.summary) == ("Kiwi, the favourite fruit", "The user told me they like kiwi.")
    assert [hit.session_id for hit in memory.search_sessions("favourite")] == [loop.session_id]  # titles are searched


def test_the_background_writer_gives_way_to_the_users_turn(stores: tuple[Config, MemoryStore],
                                                            fake_llm_env: FakeLLMServer) -> None:
    config, memory = stores
    loop = a_session(stores, fake_llm_env)
    pending.mark(memory, loop.session_id)
    busy = threading.Event()
    fake_llm_env.queue(SLOW, Reply(text="Written after the turn."))
    from hermes_tui.llm import LLMClient

    writer = pending.Writer(memory, LLMClient(config), busy=busy.is_set).start()
    assert wait_until(lambda: len(fake_llm_env.requests) == 2 and fake_llm_env.open_connections == 1)
    busy.set()  # the user sends a message: the summary in flight is dropped, its connection closed
    assert wait_until(lambda: fake_llm_env.open_connections == 0)
    assert pending.pending(memory) == [loop.session_id] and not writer.done.is_set()
    assert len(fake_llm_env.requests) == 2  # and nothing new starts while the user is busy
    busy.clear()
    assert writer.done.wait(60)
    assert memory.get_session(loop.session_id).summary == "Written after the turn."
    assert pending.pending(memory) == []


def test_a_refused_summary_is_not_retried_forever(stores: tuple[Config, MemoryStore],
                                                  fake_llm_env: FakeLLMServer) -> None:
    from tests.fakes.server import Fault

    _, memory = stores
    loop = a_session(stores, fake_llm_env)
    fake_llm_env.queue(Fault(401))
    assert loop.close(timeout=30) is None
    assert pending.pending(memory) == []


@pytest.mark.parametrize("fake_llm_env", ["openai"], indirect=True)  # one wire: a process importing litellm
@pytest.mark.timeout(600)  # that import alone took 90 s on a loaded CI machine
def test_doctor_writes_pending_summaries(stores: tuple[Config, MemoryStore], fake_llm_env: FakeLLMServer) -> None:
    _, memory = stores
    loop = a_session(stores, fake_llm_env)
    pending.mark(memory, loop.session_id, told=True)
    fake_llm_env.responder = lambda request: Reply(text="Summary by the doctor.")
    result = cli("doctor")
    assert result.returncode == 0, result.stderr
    assert "pending session summaries: wrote 1 of 1" in result.stdout
    assert memory.get_session(loop.session_id).summary == "Summary by the doctor."
    assert pending.pending(memory) == []


@on_wire("openai")
def test_a_one_shot_run_without_the_helper_leaves_its_summary_pending_for_the_next_start(
        fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    fake_llm_env.queue(Reply(text="Answered."))
    result = cli("-p", "one question")
    assert result.returncode == 0, result.stderr
    assert len(fake_llm_env.requests) == 1  # the run did not wait for a summary
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        (session,) = memory.list_sessions()
        assert pending.pending(memory) == [session.id]
        assert pending.tell(memory) is None  # nobody expected one: nothing to tell


@pytest.mark.timeout(600)  # the app's stream helper imports litellm
def test_the_tui_writes_earlier_pending_summaries_at_its_start(hermes_home: Path, workspace: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.tui_harness import run, wait_for

    with FakeLLMServer() as server:
        from tests.fakes.fixtures import wire_env

        for name, value in wire_env(server, "openai").items():
            monkeypatch.setenv(name, value)
        config = Config.load()
        with MemoryStore(config.db_path) as memory:
            earlier = memory.new_session(source="headless")
            memory.add_message(earlier, "user", "what is a kiwi?")
            memory.add_message(earlier, "assistant", "A fruit.")
            pending.mark(memory, earlier, told=True)
        server.responder = lambda request: Reply(text="I told the user a kiwi is a fruit.")

        async def scenario(app, pilot) -> None:
            await wait_for(pilot, lambda: app.stores.opened and not pending.pending(app.memory), timeout=300)
            assert app.memory.get_session(earlier).summary == "I told the user a kiwi is a fruit."

        run(scenario)
