"""The one sanitizer for terminal output (``hermes_tui.textsafe``) and its use in the chat."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from hermes_tui.textsafe import StreamCleaner, printable, printable_data
from hermes_tui.tui.answer import AnswerText
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.blocks import ToolCallView
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.tui_harness import conversation, run, send_and_wait, server, text_of

__all__ = ["server"]

HOSTILE = [
    ("clip\x1b]52;c;U0VLUkVU\x07board", "clipboard"),  # OSC 52, BEL-terminated
    ("ti\x1b]0;PWNED\x1b\\tle", "title"),  # OSC 0, ST-terminated
    ("\x1b[2J\x1b[31mred\x1b[0m", "red"),  # CSI
    ("a\x9b2Jb\x9d0;T\x07c", "abc"),  # 8-bit CSI and OSC
    ("x\x1bPq#0;2;0;0;0\x1b\\y", "xy"),  # DCS (sixel)
    ("safe\u202egnp.exe", "safegnp.exe"),  # bidi override
    ("keep\ttabs\r\nand\nlines\r", "keep\ttabs\nand\nlines"),
    ("bell\x07 nul\x00 del\x7f", "bell nul del"),
]


@pytest.mark.parametrize(("raw", "clean"), HOSTILE)
def test_printable_removes_control_sequences(raw: str, clean: str) -> None:
    assert printable(raw) == clean


def test_an_unterminated_osc_swallows_its_payload() -> None:
    assert printable("ok\x1b]52;c;SEKRET") == "ok"


def test_stream_cleaner_removes_a_sequence_split_across_pieces() -> None:
    cleaner = StreamCleaner()
    pieces = ["hi \x1b]5", "2;c;SEK", "RET\x07 done \x1b", "[31mred", " end\x1b"]
    out = "".join(cleaner.feed(p) for p in pieces) + cleaner.flush()
    assert out == "hi  done red end"
    assert "SEKRET" not in out and "\x1b" not in out


def test_printable_data_reaches_nested_values_and_events() -> None:
    from hermes_tui.events import ToolCallStarted

    event = ToolCallStarted("id", "run_bash", {"command": "echo \x1b]0;PWNED\x07hi", "n": [1, "\x1b[2Jx"]})
    clean = printable_data(event)
    assert clean.arguments == {"command": "echo hi", "n": [1, "x"]}
    assert clean.name == "run_bash" and isinstance(clean, ToolCallStarted)


def test_no_escape_reaches_a_chat_widget(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_APPROVAL", "always")
    server.queue(
        Reply(tool_calls=[ToolCall("run_bash", {"command": "printf '\\033]52;c;SEKRET\\007'; echo \x1b]0;PWNED\x07"},
                                   id="call_x")]),
        Reply(text="Answer \x1b]52;c;SEKRET\x07 with \x1b[31mcolour\x1b[0m.", chunk_size=3),
    )

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "go")
        tool = conversation(app, ToolCallView)[0]
        shown = [tool.summary, tool._result or "", conversation(app, AnswerText)[0].source,
                 text_of(tool.query_one(".tool-head"))]
        assert not any("\x1b" in text or "\x07" in text for text in shown), shown
        assert conversation(app, AnswerText)[0].source == "Answer  with colour."
        assert "SEKRET" not in tool._result

    run(scenario)
