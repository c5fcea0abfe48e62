"""The helpers' wire (hermes_tui/wire.py): data-only records, each message signed with the key.

Every record type of every table round-trips (a new record without a test fails here), and what
is not a declared record, or not signed with the key, is refused before anything is built.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import wire
from hermes_tui.config import Config
from hermes_tui.conversation import ToolCall
from hermes_tui.events import Notice, TextDelta, Usage
from hermes_tui.llm import StreamResult
from hermes_tui.llm_errors import LLMError
from hermes_tui.llm_host import (
    RECORDS,
    STARTUP,
    Answer,
    CompleteRequest,
    CountManyRequest,
    CountRequest,
    Start,
    StreamRequest,
    WindowRequest,
)
from hermes_tui.warm import WARM_RECORDS, Hello, Identity, Stale, Stop, Summaries, Welcome

KEY = b"k" * 32
CONFIG = dataclasses.replace(Config(), api_keys={"OPENAI_API_KEY": "sk-test"}, home=Path("/h"),
                             web_allowed_hosts=("a", "b"), configured_endpoint=("x", "y"))
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "hi", "@": "not a tag"}]}]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

# One example of every record type either helper sends or reads.
EXAMPLES: list[Any] = [
    StreamRequest(CONFIG, MESSAGES, TOOLS), StreamRequest(CONFIG, MESSAGES, None),
    CompleteRequest(CONFIG, MESSAGES, 2.5), CountRequest(CONFIG, MESSAGES, TOOLS), WindowRequest(CONFIG),
    CountManyRequest(CONFIG, [MESSAGES, []]),
    TextDelta("déjà"), Notice("retrying"), Answer("text"), Answer(12), Answer([3, 0]), Answer(None), wire.Cancel(),
    StreamResult("t", [ToolCall("c1", "read_file", {"path": "a"}, '{"path":"a"}')],
                 Usage(3, 4, 0.5, context_limit=100), False),
    StreamResult(cancelled=True),
    Identity("1.0+abc"), Hello(), Stop(), Summaries(CONFIG, "/db"), Welcome(7), Stale("0.1+old", 8),
]


def test_every_record_of_every_table_round_trips() -> None:
    covered = {type(example) for example in EXAMPLES} | {wire.Failure}
    assert set(WARM_RECORDS.values()) == covered and set(RECORDS.values()) <= covered
    for example in EXAMPLES:
        assert wire.loads(WARM_RECORDS, wire.dumps(WARM_RECORDS, example)) == example
    error = wire.loads(RECORDS, wire.dumps(RECORDS, LLMError("429", retryable=True, status=429, max_tokens=5)))
    assert isinstance(error, LLMError) and (error.message, error.retryable, error.status, error.max_tokens) == (
        "429", True, 429, 5)
    start = Start(CONFIG, True, KEY.hex())
    assert wire.loads(STARTUP, wire.dumps(STARTUP, start)) == start


@pytest.mark.parametrize("payload", [
    b'{"type": "hello", "record": {"extra": 1}}',  # a field the record lacks
    b'{"type": "welcome", "record": {"pid": "7"}}',  # the wrong type
    b'{"type": "welcome", "record": {}}',  # a field missing
    b'{"type": "os.system", "record": {}}',  # no such record
    b'{"type": "hello"}',
    b"[1, 2]",
    pickle.dumps(Hello()),
])
def test_what_is_not_a_declared_record_is_refused(payload: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.loads(WARM_RECORDS, payload)


def test_a_record_of_another_table_is_refused() -> None:
    with pytest.raises(wire.WireError):
        wire.loads(RECORDS, wire.dumps(WARM_RECORDS, Stop()))


def test_only_a_message_signed_with_the_key_is_read() -> None:
    message = wire.sign(KEY, wire.dumps(WARM_RECORDS, Hello()))
    assert wire.verified(KEY, message) == message[wire.DIGEST:]
    for forged in (wire.sign(os.urandom(32), message[wire.DIGEST:]), message[:-1] + b" ", b"", message[:10]):
        with pytest.raises(wire.WireError):
            wire.verified(KEY, forged)
