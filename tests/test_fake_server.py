"""The fake LLM server, checked through the real ``litellm.completion`` on both wire formats (no mocks)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before the import: no price-list download
import litellm  # (imported once per module: it takes seconds)
from litellm.exceptions import MidStreamFallbackError  # (not exported as litellm.X)

from hermes_tui.config import Config
from tests.fakes.server import (
    MALFORMED_EVENT,
    WIRES,
    EmptyStream,
    FakeLLMServer,
    Fault,
    Reply,
    ToolCall,
    Wire,
    load_script,
)

litellm.suppress_debug_info = True

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SCRIPT = REPO / "tests" / "fakes" / "example_script.json"

TOOLS = [
    {"type": "function", "function": {
        "name": "list_dir", "description": "List a folder.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": []}}},
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
]
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "hi"}]

wires = pytest.mark.parametrize("wire", WIRES)


def complete(server: FakeLLMServer, wire: Wire, *, stream: bool = True, **kwargs: Any) -> Any:
    """Call the real litellm.completion against the fake server over ``wire``."""
    if wire == "anthropic":
        target = {"model": "anthropic/claude-sonnet-4-5", "api_base": server.url, "api_key": "sk-ant-test"}
    else:
        target = {"model": "openai/test-model", "api_base": server.openai_base, "api_key": "sk-test"}
    options: dict[str, Any] = {"messages": MESSAGES, "tools": TOOLS, "max_retries": 0, "stream": stream}
    if stream:
        options["stream_options"] = {"include_usage": True}
    return litellm.completion(**target, **{**options, **kwargs})


@dataclass
class Streamed:
    """What a consumer of litellm's stream reassembles."""

    text: str = ""
    content_chunks: int = 0
    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # index -> id, name, arguments
    argument_chunks: int = 0
    finish_reason: str | None = None
    usage: Any = None


def collect(stream: Iterable[Any], into: Streamed | None = None) -> Streamed:
    result = into or Streamed()
    for chunk in stream:
        if getattr(chunk, "usage", None):
            result.usage = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        if choice.delta.content:
            result.text += choice.delta.content
            result.content_chunks += 1
        for call in choice.delta.tool_calls or []:
            entry = result.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            entry["name"] = call.function.name or entry["name"]
            if call.function.arguments:
                entry["arguments"] += call.function.arguments
                result.argument_chunks += 1
        result.finish_reason = choice.finish_reason or result.finish_reason
    return result


# ------------------------------------------------------------------------------------------------ streaming


@wires
def test_streamed_text_reassembles_exactly(fake_llm: FakeLLMServer, wire: Wire) -> None:
    text = "# Title\n\nSome **bold** text, `code`, émojis 🎉 and \"quotes\"\n\n- one\n- two\n"
    fake_llm.queue(Reply(text=text, chunk_size=5))
    result = collect(complete(fake_llm, wire))
    assert result.text == text
    assert result.content_chunks >= len(text) // 5
    assert result.calls == {}
    assert result.finish_reason == "stop"


@wires
def test_tool_call_arguments_split_over_many_chunks_reassemble(fake_llm: FakeLLMServer, wire: Wire) -> None:
    arguments = {"path": "src/dir with spaces/é.py", "nested": {"list": [1, 2.5, None, True], "quote": 'a "b" \\ c'}}
    fake_llm.queue(Reply(text="Reading.", tool_calls=[ToolCall("read_file", arguments, id="call_fixed_1")],
                         chunk_size=4))
    result = collect(complete(fake_llm, wire))
    assert result.text == "Reading."
    assert list(result.calls) == [0]
    call = result.calls[0]
    assert call["id"] == "call_fixed_1"
    assert call["name"] == "read_file"
    assert json.loads(call["arguments"]) == arguments
    assert result.argument_chunks >= len(json.dumps(arguments)) // 2
    assert result.finish_reason == "tool_calls"


@wires
def test_parallel_tool_calls_come_out_as_separate_calls_with_ids(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Reply(tool_calls=[ToolCall("list_dir", {"path": "."}), ToolCall("read_file", {"path": "a.txt"})]))
    result = collect(complete(fake_llm, wire))
    assert result.text == ""
    assert sorted(result.calls) == [0, 1]
    first, second = result.calls[0], result.calls[1]
    assert (first["name"], json.loads(first["arguments"])) == ("list_dir", {"path": "."})
    assert (second["name"], json.loads(second["arguments"])) == ("read_file", {"path": "a.txt"})
    prefix = "toolu_" if wire == "anthropic" else "call_"
    assert first["id"].startswith(prefix) and second["id"].startswith(prefix)
    assert first["id"] != second["id"]
    assert result.finish_reason == "tool_calls"


@wires
def test_tool_call_without_arguments_means_empty_object(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Reply(tool_calls=[ToolCall("list_skills", "")]))
    result = collect(complete(fake_llm, wire))
    # Anthropic: litellm emits "{}" at content_block_stop; OpenAI: the arguments stay empty.
    assert result.calls[0]["arguments"] in ("", "{}")
    assert result.calls[0]["name"] == "list_skills"


@wires
def test_usage_arrives(fake_llm: FakeLLMServer, wire: Wire) -> None:
    # OpenAI: the final `choices: []` chunk; Anthropic: message_start (input) + message_delta (output),
    # which litellm turns into a usage-only chunk at the end of the stream as well.
    fake_llm.queue(Reply(text="counted", usage=(123, 45)))
    result = collect(complete(fake_llm, wire))
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (123, 45)


@wires
def test_cache_usage_arrives(fake_llm: FakeLLMServer, wire: Wire) -> None:
    # Both wires: prompt_tokens counts the cached tokens too; litellm exposes reads as
    # prompt_tokens_details.cached_tokens (Anthropic also as cache_read_input_tokens) and
    # Anthropic's writes as cache_creation_input_tokens.
    fake_llm.queue(Reply(text="cached", usage=(100, 5), cache_read=900, cache_write=300))
    usage = collect(complete(fake_llm, wire)).usage
    assert usage.prompt_tokens == 1300 and usage.prompt_tokens_details.cached_tokens == 900
    if wire == "anthropic":
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (900, 300)
    else:
        assert usage.prompt_tokens_details.cache_write_tokens == 300


def test_cache_control_marks_are_recorded(fake_llm: FakeLLMServer) -> None:
    points = [{"location": "message", "role": "system"}, {"location": "tool_config"},
              {"location": "message", "index": -1}]
    collect(complete(fake_llm, "anthropic", cache_control_injection_points=points))
    assert fake_llm.requests[0].cache_marks == [("tool", "read_file"), ("system", "You are Hermes."),
                                                 ("user", "hi")]
    collect(complete(fake_llm, "anthropic"))
    assert fake_llm.requests[1].cache_marks == []


@wires
def test_empty_stream_is_a_clean_200_without_events(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(EmptyStream())
    path = "/v1/messages" if wire == "anthropic" else "/v1/chat/completions"
    status, headers, body = raw_post(fake_llm, path, {"model": "m", "stream": True, "messages": []})
    assert status == 200 and headers["content-type"].startswith("text/event-stream") and body == ""


@wires
def test_non_streamed_reply_parses(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Reply(text="Plain **answer**", tool_calls=[ToolCall("list_dir", {"path": "x"}, id="call_9")],
                         usage=(30, 4)))
    response = complete(fake_llm, wire, stream=False)
    message = response.choices[0].message
    assert message.content == "Plain **answer**"
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("call_9", "list_dir", {"path": "x"})
    ]
    assert response.choices[0].finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 4)
    assert fake_llm.requests[-1].body.get("stream") in (None, False)


@wires
def test_chunk_delay_slows_the_stream(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Reply(text="x" * 32, chunk_size=8, chunk_delay=0.04))
    started = time.monotonic()
    assert collect(complete(fake_llm, wire)).text == "x" * 32
    assert time.monotonic() - started >= 0.04 * 5  # at least 6 events on either wire


# ------------------------------------------------------------------------------------------------ faults


@wires
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(("status", "error"), [
    (429, litellm.RateLimitError),
    (401, litellm.AuthenticationError),
    (500, litellm.InternalServerError),
])
def test_http_faults_map_to_litellm_exceptions(
    fake_llm: FakeLLMServer, wire: Wire, stream: bool, status: int, error: type[Exception]
) -> None:
    fake_llm.queue(Fault(status, retry_after=2 if status == 429 else None))
    with pytest.raises(error) as raised:
        complete(fake_llm, wire, stream=stream)  # raised by the call itself, before any chunk
    assert raised.value.status_code == status
    assert raised.value.llm_provider == wire
    if status == 429:
        # e.response.headers is empty on the Anthropic path; litellm_response_headers has them on both.
        assert raised.value.litellm_response_headers["retry-after"] == "2"


@wires
def test_fault_body_is_in_the_wire_format_shape(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Fault(429), Fault(400, body={"error": {"message": "custom body", "type": "x"}}))
    with pytest.raises(litellm.RateLimitError) as raised:
        complete(fake_llm, wire)
    assert "rate_limit_error" in str(raised.value)
    with pytest.raises(litellm.BadRequestError, match="custom body"):
        complete(fake_llm, wire)


@wires
def test_slow_fault_hits_the_client_timeout(fake_llm: FakeLLMServer, wire: Wire) -> None:
    fake_llm.queue(Fault(500, delay=1.0))
    with pytest.raises(litellm.Timeout) as raised:
        complete(fake_llm, wire, timeout=0.3)
    assert raised.value.status_code == 408


@wires
def test_cut_stream_raises_after_the_text_already_sent(fake_llm: FakeLLMServer, wire: Wire) -> None:
    # The connection closes without the final HTTP chunk (no [DONE] / message_stop). LiteLLM does not end
    # the stream silently: iterating raises MidStreamFallbackError (a ServiceUnavailableError subclass,
    # status_code 500) wrapping an APIConnectionError, after yielding every delta received before the cut.
    text = "abcdefgh" * 6
    fake_llm.queue(Reply(text=text, chunk_size=8, cut_after=5))
    stream = complete(fake_llm, wire)  # the call itself succeeds: headers were a 200
    received = Streamed()
    with pytest.raises(MidStreamFallbackError) as raised:
        collect(stream, into=received)
    assert isinstance(raised.value, litellm.ServiceUnavailableError)
    assert isinstance(raised.value.original_exception, litellm.APIConnectionError)
    assert raised.value.status_code == 500
    assert received.text and text.startswith(received.text) and received.text != text
    assert received.finish_reason is None
    assert raised.value.generated_content == received.text


@wires
def test_malformed_event_raises(fake_llm: FakeLLMServer, wire: Wire) -> None:
    # OpenAI: the SDK's json.loads fails on the garbage line -> APIConnectionError ("Expecting property
    # name..."), text before it already yielded. Anthropic: litellm switches to "accumulate partial JSON"
    # mode on the garbage and swallows every later event, then fails with "Stream ended before a
    # finish_reason was received". Both surface as MidStreamFallbackError.
    text = "abcdefgh" * 6
    fake_llm.queue(Reply(text=text, chunk_size=8, malformed_at=5))
    received = Streamed()
    with pytest.raises(MidStreamFallbackError) as raised:
        collect(complete(fake_llm, wire), into=received)
    assert isinstance(raised.value.original_exception, litellm.APIConnectionError)
    assert text.startswith(received.text) and received.text != text


# ------------------------------------------------------------------------------------------------ recording


HISTORY = [
    {"role": "system", "content": "You are Hermes."},
    {"role": "user", "content": "list files"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": '{"path": "."}'}},
        {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
    {"role": "tool", "tool_call_id": "call_2", "content": "hello"},
    {"role": "user", "content": "thanks"},
]


@wires
def test_requests_are_recorded_with_normalized_messages_and_tools(fake_llm: FakeLLMServer, wire: Wire) -> None:
    collect(complete(fake_llm, wire, messages=HISTORY))
    (request,) = fake_llm.requests
    assert request.wire == wire
    assert request.tools == ["list_dir", "read_file"]
    assert request.system == "You are Hermes."
    # The same logical conversation on both wires, although litellm sends Anthropic a top-level `system`
    # and folds both tool results and the next user text into ONE user message of blocks.
    assert request.messages == [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "name": "list_dir", "arguments": {"path": "."}},
            {"id": "call_2", "name": "read_file", "arguments": {"path": "a"}},
        ]},
        {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_1"},
        {"role": "tool", "content": "hello", "tool_call_id": "call_2"},
        {"role": "user", "content": "thanks"},
    ]
    if wire == "anthropic":
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == "sk-ant-test"
        assert request.body["system"] == [{"type": "text", "text": "You are Hermes."}]
    else:
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer sk-test"


def test_queue_is_fifo_across_wires_then_responder(fake_llm: FakeLLMServer) -> None:
    fake_llm.queue(Reply(text="first"), Fault(500), Reply(text="third"))
    assert collect(complete(fake_llm, "anthropic")).text == "first"
    with pytest.raises(litellm.InternalServerError):
        complete(fake_llm, "openai")
    assert collect(complete(fake_llm, "openai")).text == "third"
    assert collect(complete(fake_llm, "anthropic")).text == "ok"  # the default responder
    fake_llm.responder = lambda request: Reply(text=f"{request.wire}:{request.messages[-1]['content']}")
    assert collect(complete(fake_llm, "openai")).text == "openai:hi"
    assert [r.wire for r in fake_llm.requests] == ["anthropic", "openai", "openai", "anthropic", "openai"]
    fake_llm.queue(Reply(text="dropped"))
    fake_llm.reset()
    assert fake_llm.requests == []
    assert collect(complete(fake_llm, "anthropic")).text == "anthropic:hi"


# ------------------------------------------------------------------------------------------------ raw wire


def raw_post(server: FakeLLMServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=5)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        connection.close()


def test_openai_sse_framing(fake_llm: FakeLLMServer) -> None:
    fake_llm.queue(Reply(text="hi there", chunk_size=3, tool_calls=[ToolCall("list_dir", {"path": "."})]))
    body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    status, headers, text = raw_post(fake_llm, "/v1/chat/completions", body)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 19
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    head = chunks[4]["choices"][0]["delta"]["tool_calls"][0]  # role chunk + 3 text chunks come first
    assert head["index"] == 0 and head["id"].startswith("call_") and head["function"]["name"] == "list_dir"


def test_anthropic_sse_framing(fake_llm: FakeLLMServer) -> None:
    fake_llm.queue(Reply(text="hi", tool_calls=[ToolCall("list_dir", {"path": "."})], malformed_at=2))
    status, _, text = raw_post(fake_llm, "/v1/messages", {"model": "m", "messages": [], "stream": True})
    assert status == 200
    events = text.split("\n\n")[:-1]
    assert events[2] + "\n\n" == MALFORMED_EVENT.decode()
    del events[2]
    names = [e.split("\n")[0].removeprefix("event: ") for e in events]
    payloads = [json.loads(e.split("\n")[1].removeprefix("data: ")) for e in events]
    assert [p["type"] for p in payloads] == names
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", *["content_block_delta"] * 5, "content_block_stop",
                     "message_delta", "message_stop"]
    assert payloads[5]["content_block"]["id"].startswith("toolu_")
    assert "".join(p["delta"]["partial_json"] for p in payloads[6:11]) == '{"path": "."}'
    assert payloads[-2]["delta"]["stop_reason"] == "tool_use" and payloads[-2]["usage"] == {"output_tokens": 7}


def test_unknown_path_is_a_404_and_not_recorded(fake_llm: FakeLLMServer) -> None:
    status, _, text = raw_post(fake_llm, "/v2/nothing", {})
    assert status == 404 and "/v2/nothing" in text
    assert fake_llm.requests == []


# ------------------------------------------------------------------------------------------------ lifecycle


def _handler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "process_request_thread" in t.name or t.name == "fake-llm-server"]


def test_client_disconnect_mid_stream_is_quiet_and_stop_is_clean(capfd: pytest.CaptureFixture[str]) -> None:
    server = FakeLLMServer().start()
    server.queue(Reply(text="y" * 400, chunk_size=4, chunk_delay=0.01), Reply(text="z" * 400, chunk_delay=5))
    stream = complete(server, "openai")
    assert next(iter(stream)) is not None
    stream.close()  # hang up mid-stream; the server's next write fails
    slow = complete(server, "anthropic")  # a stream still running (5 s per event) when stop() comes
    time.sleep(0.2)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    with pytest.raises(MidStreamFallbackError):
        collect(slow)
    deadline = time.monotonic() + 3
    while _handler_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _handler_threads() == []
    assert capfd.readouterr().err == ""


# ------------------------------------------------------------------------------------------------ fixtures, script


def test_fake_llm_env_points_hermes_config_at_the_server(fake_llm_env: FakeLLMServer) -> None:
    config = Config.load()
    assert config.provider == fake_llm_env.wire_under_test
    assert config.api_base in (fake_llm_env.url, fake_llm_env.openai_base)
    fake_llm_env.queue(Reply(text="through the config"))
    response = litellm.completion(model=f"{config.provider}/{config.model}", api_base=config.api_base,
                                  api_key=config.api_key, messages=MESSAGES, max_retries=0, stream=True)
    assert collect(response).text == "through the config"
    assert fake_llm_env.requests[0].wire == fake_llm_env.wire_under_test


def test_example_script_loads() -> None:
    items = load_script(EXAMPLE_SCRIPT)
    assert all(isinstance(item, Reply) for item in items)
    assert [c.name for item in items for c in item.tool_calls] == ["list_dir"]


def test_runnable_by_hand_serves_the_script_in_a_cycle() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.server", "--script", str(EXAMPLE_SCRIPT), "--port", "0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        banner = [process.stdout.readline() for _ in range(3)]
        url = banner[0].split(" on ")[1].split()[0]
        assert f"api_base {url}/v1" in banner[1]
        texts = []
        for _ in range(4):
            connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=5)
            connection.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": []}))
            texts.append(json.loads(connection.getresponse().read())["choices"][0]["message"])
            connection.close()
        script = load_script(EXAMPLE_SCRIPT)
        assert [t["content"] for t in texts] == [script[0].text, script[1].text, script[2].text, script[0].text]
        assert texts[1]["tool_calls"][0]["function"]["name"] == "list_dir"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=5)
    assert process.returncode == 0, err
    assert "stopped" in out


def test_strict_local_mode_refuses_like_llama_cpp(fake_llm: FakeLLMServer) -> None:
    """Missing ``content``: an empty 200 stream (template error); null ``content``: a 500 validation error."""
    import httpx

    fake_llm.strict_local = True
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    base = [{"role": "user", "content": "hi"}]
    url = fake_llm.openai_base + "/chat/completions"
    missing = {"messages": [*base, {"role": "assistant", "tool_calls": [call]},
                            {"role": "tool", "tool_call_id": "c1", "content": "done"}], "stream": True}
    response = httpx.post(url, json=missing)
    assert response.status_code == 200 and response.content == b""
    null = {"messages": [*base, {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": "done"}], "stream": True}
    response = httpx.post(url, json=null)
    assert response.status_code == 500 and "valid string" in response.json()["error"]["message"]
    fine = {"messages": [*base, {"role": "assistant", "content": "", "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": "done"}], "stream": True}
    assert b"[DONE]" in httpx.post(url, json=fine).content
    assert len(fake_llm.violations) == 2 and len(fake_llm.refused) == 2
