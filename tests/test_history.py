"""A stored history is always sendable: repair, and the strict fake server that proves it."""

from __future__ import annotations

import itertools
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import conversation
from hermes_tui.agent.history import INTERRUPTED, repair
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.config import Config
from hermes_tui.events import Error, TurnFinished
from hermes_tui.llm import LLMClient, StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply, ToolCall, strict_violation
from tests.helpers import assert_history_valid


def call(call_id: str, name: str = "read_file", arguments: str = '{"path": "a.txt"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def result(call_id: str, content: str = "ok", name: str = "read_file") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


BROKEN: list[dict[str, Any]] = [
    {"role": "assistant", "content": "leftover greeting"},  # does not start with the user
    {"role": "user", "content": "first"},
    {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
    result("c1", "one"),  # c2 never answered: killed mid-tool
    {"role": "user", "content": "second"},
    {"role": "user", "content": ""},  # a turn that failed before the model answered
    {"role": "assistant", "content": "Let me see.", "tool_calls": [call("c1"), call("c1", arguments="{oops")]},
    result("c1", "dup one"),
    result("c1", "dup two"),
    result("zz", "orphan result"),
    {"role": "assistant", "content": "", "tool_calls": [call("c3", arguments="[1, 2]")]},
    {"role": "user", "content": "third"},
]


def test_repair_makes_every_rule_hold() -> None:
    fixed = repair(BROKEN)
    assert_history_valid(fixed)
    assert fixed[0]["role"] == "user"
    roles = [m["role"] for m in fixed]
    assert all(not (a == b == "user") for a, b in itertools.pairwise(roles)), roles
    ids = [c["id"] for m in fixed for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)) == 5
    for m in fixed:
        for c in m.get("tool_calls") or []:
            assert isinstance(json.loads(c["function"]["arguments"]), dict)
    contents = {m["tool_call_id"]: m["content"] for m in fixed if m["role"] == "tool"}
    assert contents["c2"] == INTERRUPTED
    assert "dup one" in contents["c1_2"] and "dup two" in contents["c1_3"]  # results follow their calls in order
    assert "{oops" in contents["c1_3"] and "not valid JSON" in contents["c1_3"]
    assert "[1, 2]" in contents["c3"] and INTERRUPTED in contents["c3"]
    assert not any("orphan" in str(m["content"]) for m in fixed)
    assert "second" in fixed[roles.index("user", 3)]["content"]


def test_repair_leaves_a_valid_history_alone() -> None:
    good = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call("a")]}, result("a"),
            {"role": "assistant", "content": "done"}]
    assert repair(good) == good


def test_arguments_are_checked_once_into_the_call() -> None:
    def checked(raw: str) -> conversation.ToolCall:
        return conversation.ToolCall.parse("c1", "read_file", raw)

    assert checked('{"a": 1}').json == '{"a": 1}' and checked('{"a": 1}').arguments == {"a": 1}
    assert checked("").json == "{}" and checked("").error is None and checked("").valid
    bad = checked('{"path": "x"')
    assert bad.json == "{}" and bad.error and bad.raw == '{"path": "x"' and not bad.valid and bad.arguments == {}
    assert checked('"text"').error == "a JSON str, not an object"


# -- the strict fake server refuses what the real APIs refuse, through litellm's own translation


def _send(server: FakeLLMServer, messages: list[dict[str, Any]]) -> None:
    config = Config.load()
    client = LLMClient(config)
    items = list(client.stream([{"role": "system", "content": "s"}, *messages], None, threading.Event()))
    assert isinstance(items[-1], StreamResult)


@pytest.fixture
def strict(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    fake_llm_env.strict = True
    return fake_llm_env


def test_strict_server_refuses_an_unanswered_tool_call(strict: FakeLLMServer) -> None:
    broken = [{"role": "user", "content": "hi"},
              {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
              {"role": "user", "content": "again"}]
    with pytest.raises(LLMError) as caught:
        _send(strict, broken)
    assert caught.value.status == 400
    assert strict.violations and "c1" in strict.violations[0]
    _send(strict, repair(broken))
    assert len(strict.violations) == 1


def test_strict_server_refuses_duplicate_ids(strict: FakeLLMServer) -> None:
    broken = [{"role": "user", "content": "hi"},
              {"role": "assistant", "content": None, "tool_calls": [call("c1")]}, result("c1"),
              {"role": "assistant", "content": None, "tool_calls": [call("c1")]}, result("c1"),
              {"role": "user", "content": "again"}]
    with pytest.raises(LLMError):
        _send(strict, broken)
    _send(strict, repair(broken))
    assert len(strict.violations) == 1


@pytest.mark.parametrize("body,problem", [
    ({"messages": [{"role": "assistant", "content": "x"}]}, "first message"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "alternate"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]},
     "unexpected `tool_use_id`"),
    ({"messages": [{"role": "user", "content": "a"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": "raw"}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]},
     "valid dictionary"),
    ({"messages": [{"role": "user", "content": " "}]}, "non-whitespace"),
])
def test_strict_anthropic_rules(body: dict[str, Any], problem: str) -> None:
    found = strict_violation(RecordedRequest("/v1/messages", {}, body))
    assert found is not None and problem in found


def test_strict_openai_rule_on_orphan_result() -> None:
    body = {"messages": [{"role": "user", "content": "a"}, result("x")]}
    found = strict_violation(RecordedRequest("/v1/chat/completions", {}, body))
    assert found is not None and "must be a response" in found
    assert strict_violation(RecordedRequest("/v1/chat/completions", {}, {"messages": [{"role": "user", "content": "a"}]})) is None


def test_context_length_refusal_is_the_real_body(fake_llm_env: FakeLLMServer, hermes_home: Path) -> None:
    fake_llm_env.max_request_bytes = 2_000
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x" * 5_000}]}).encode()
    path = "/v1/messages" if fake_llm_env.wire_under_test == "anthropic" else "/v1/chat/completions"
    request = urllib.request.Request(fake_llm_env.url + path, data=body, headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    answer = json.loads(caught.value.read())
    assert caught.value.code == 400
    if fake_llm_env.wire_under_test == "anthropic":
        assert answer["error"]["type"] == "invalid_request_error"
        assert answer["error"]["message"].startswith("prompt is too long:") and "> 500 maximum" in answer["error"]["message"]
    else:
        assert answer["error"]["code"] == "context_length_exceeded"
    with pytest.raises(LLMError) as mapped:  # litellm and Hermes read it as "too long"
        _send(fake_llm_env, [{"role": "user", "content": "x" * 5_000}])
    assert mapped.value.too_long and mapped.value.max_tokens == 500


# -- resuming broken sessions against the strict server


@pytest.fixture
def stores(strict: FakeLLMServer) -> Iterator[tuple[Config, MemoryStore, SkillManager]]:
    config = Config.load()
    memory = MemoryStore(config.db_path)
    yield config, memory, SkillManager(config.skills_dir)
    memory.close()


def test_resume_of_a_broken_session_is_answered(strict: FakeLLMServer,
                                                stores: tuple[Config, MemoryStore, SkillManager]) -> None:
    config, memory, skills = stores
    session = memory.new_session(source="test")
    memory.bulk_add_messages(session, BROKEN)
    strict.queue(Reply(text="All good again."))
    loop = AgentLoop(config, memory, skills, session_id=session)
    events = list(loop.run_turn("are you there?"))
    assert not [e for e in events if isinstance(e, Error)], events
    assert events[-1] == TurnFinished("All good again.", 0, "done")
    assert strict.violations == []
    sent = strict.requests[-1].messages
    assert any(m.get("content") == INTERRUPTED for m in sent)
    assert len(memory.get_messages(session)) == len(BROKEN) + 2  # stored: the originals, untouched, + 2


def test_malformed_arguments_are_stored_as_empty_object(strict: FakeLLMServer, workspace: Path,
                                                        stores: tuple[Config, MemoryStore, SkillManager]) -> None:
    config, memory, skills = stores
    strict.queue(Reply(tool_calls=[ToolCall("read_file", '{"path": "a.txt"')]), Reply(text="Sorry."))
    loop = AgentLoop(config, memory, skills)
    events = list(loop.run_turn("read a.txt"))
    assert events[-1].stopped_reason == "done"
    stored = memory.get_messages(loop.session_id)
    assert stored[1].calls[0].raw == "{}" and stored[1].calls[0].valid
    assert '{"path": "a.txt"' in stored[2].content and "not valid JSON" in stored[2].content
    assert strict.violations == []
    strict.queue(Reply(text="Resumed."))
    again = AgentLoop(config, memory, skills, session_id=loop.session_id)
    assert list(again.run_turn("go on"))[-1].stopped_reason == "done"
    assert strict.violations == []
