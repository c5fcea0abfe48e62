"""The TUI's pure helpers: history file, .env writing, slash commands, formatting, coalescing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from dotenv import dotenv_values

from hermes_tui.events import TextDelta, ToolCallStarted
from hermes_tui.tui import commands
from hermes_tui.tui.blocks import clip_result, line_count
from hermes_tui.tui.envfile import update_env_file
from hermes_tui.tui.format import duration, elapsed, short_args, short_path, usage_text, widget_id
from hermes_tui.tui.history import PromptHistory
from hermes_tui.tui.inbox import coalesce
from hermes_tui.tui.session import parse_model_spec


def test_history_browses_keeps_the_draft_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    history = PromptHistory(path)
    for text in ["one", "two", "two", "  ", "three\nlines"]:
        history.add(text)
    assert history.entries == ["one", "two", "three\nlines"]  # no repeats, no blanks
    assert history.previous("draft") == "three\nlines"
    assert history.previous("ignored") == "two"
    assert history.next() == "three\nlines"
    assert history.next() == "draft"
    assert history.next() is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert PromptHistory(path).entries == ["one", "two", "three\nlines"]


def test_history_is_capped_and_survives_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    history = PromptHistory(path, cap=3)
    for n in range(10):
        history.add(f"p{n}")
    assert len(path.read_text().splitlines()) <= 6
    with path.open("a") as handle:
        handle.write('"cut in the midd')
    assert PromptHistory(path, cap=3).entries == ["p7", "p8", "p9"]


def test_env_file_updates_in_place_and_keeps_other_lines(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("# comment\nexport OPENAI_API_KEY=old\nOTHER=1\nOPENAI_API_KEY=dup\nHERMES_MODEL=x\n")
    update_env_file(path, {"OPENAI_API_KEY": "sk-new value'\"", "HERMES_PROVIDER": "openai", "HERMES_MODEL": None})
    lines = path.read_text().splitlines()
    assert lines[0] == "# comment" and lines[2] == "OTHER=1" and len(lines) == 4
    assert dotenv_values(path) == {"OPENAI_API_KEY": "sk-new value'\"", "OTHER": "1", "HERMES_PROVIDER": "openai"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ValueError):
        update_env_file(path, {"X": "two\nlines"})


def test_slash_command_parsing_and_completion() -> None:
    assert commands.parse("/model  gpt-5 ") == commands.Invocation("model", "gpt-5")
    assert commands.parse("/RESUME 3").name == "resume"
    assert commands.parse("hello /model") is None
    assert commands.parse("//etc/hosts") is None and commands.as_message("//etc/hosts") == "/etc/hosts"
    assert commands.parse("/nope").command is None
    assert [c.name for c in commands.completions("/s")] == ["skills", "sessions", "setup"]
    assert commands.parse("/var/log/syslog shows errors") is None  # a path is a message
    assert commands.completions("/model x") == [] and commands.completions("hi") == []
    assert len(commands.completions("/")) == len(commands.COMMANDS)
    assert "/memory <query>" in commands.help_markdown([("ctrl+j", "new line")])


def test_formatting() -> None:
    assert short_path("/home/ann/proj", home="/home/ann") == "~/proj"
    assert short_path("/home/anna/proj", home="/home/ann") == "/home/anna/proj"
    assert short_args("run_bash", {"command": "ls   -la\n| wc"}) == "ls -la | wc"
    assert short_args("other", {"a": 1, "b": "x"}) == "a=1 b=x"
    assert len(short_args("run_bash", {"command": "x" * 200}, width=20)) == 20
    assert elapsed(3.9) == "3 s" and elapsed(125) == "2 m 05 s"
    assert duration(0.4) == "0.4 s" and duration(12.5) == "12 s"
    assert usage_text(1234, 5, None) == "1,234 in · 5 out · cost —"
    assert usage_text(1, 2, 0.01234) == "1 in · 2 out · $0.0123"
    assert widget_id("tool", "call/1 x") == "tool-call_1_x"
    assert clip_result("a\nb\n") == "a\nb" and line_count("a\nb\n") == 2 and line_count("") == 0
    assert clip_result("x" * 9000).endswith("(1,000 more characters)")


def test_model_spec() -> None:
    assert parse_model_spec("anthropic:claude-x") == ("anthropic", "claude-x")
    assert parse_model_spec("ollama:llama3.2:3b") == ("ollama", "llama3.2:3b")
    assert parse_model_spec("llama3.2:3b") == (None, "llama3.2:3b")
    assert parse_model_spec("openrouter") == ("openrouter", None)
    assert parse_model_spec("openai/gpt-x") == (None, "openai/gpt-x")


def test_text_deltas_are_coalesced_in_order() -> None:
    started = ToolCallStarted("c1", "list_dir", {})
    events = [TextDelta("a"), TextDelta("b"), started, TextDelta("c"), TextDelta("d")]
    assert coalesce(events) == [TextDelta("ab"), started, TextDelta("cd")]


def test_estimates_and_an_assumed_window_are_marked() -> None:
    from hermes_tui.memory.usage import ModelUsage, totals
    from hermes_tui.tui.session_tools import cost_markdown, window_line

    assert usage_text(300, 10, None, (829, 8192), estimated=True, assumed=True) == \
        "~300 in · ~10 out · cost — · context ~10% of an assumed 8,192"
    assert usage_text(300, 10, None, (829, 8192)) == "300 in · 10 out · cost — · context 10%"
    row = ModelUsage("openai-compatible:local").plus(300, 10, 0, None, estimated=True).plus(5, 1, 0, None)
    assert row.estimated and row.calls == 2 and totals([row, ModelUsage("other")]).estimated
    card = cost_markdown([row], window_line(8192, "assumed", True))
    assert "| ~305 | ~11 |" in card and "~ marks estimates" in card and "tool schemas" in card
    assert "8,192 tokens, assumed" in card and "HERMES_CONTEXT_TOKENS" in card
    plain = cost_markdown([ModelUsage("anthropic:claude").plus(300, 10, 0, 0.01)],
                          window_line(200_000, "litellm's model table", False))
    assert "~" not in plain and "200,000 tokens, from litellm's model table" in plain


def test_every_event_type_has_a_view_in_the_chat() -> None:
    """The chat dispatches through one table, not through handler names built from the event's
    ``type``: every event class in ``hermes_tui.events`` has its entry, and nothing else does."""
    import inspect

    from hermes_tui import events
    from hermes_tui.tui.chat import event_views

    kinds = {cls for _, cls in inspect.getmembers(events, inspect.isclass)
             if issubclass(cls, events.Event) and cls is not events.Event}
    assert kinds and set(event_views()) == kinds, kinds.symmetric_difference(event_views())
    assert len({cls.type for cls in kinds}) == len(kinds)  # one type string per class


def test_every_slash_command_has_a_handler() -> None:
    """Commands are dispatched through one table, not through method names built from the
    command's name: every row of ``commands.COMMANDS`` has its handler, and nothing else does."""
    from hermes_tui.tui.command_runner import HANDLERS

    assert set(HANDLERS) == {command.name for command in commands.COMMANDS}
