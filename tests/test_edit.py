"""edit_file on a real workspace: exact and unique, all or none, what a file keeps, big files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes_tui.agent.edit import Change, EditError, apply_changes
from hermes_tui.agent.loop import AgentLoop
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.config import Config
from hermes_tui.events import ToolCallFinished
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.tools_harness import HOSTILE_PATHS, outside, registry  # noqa: F401  (fixtures)

CODE = "def f():\n    x = 1\n    return x\n\n\ndef g():\n    return 1\n"


def edit(registry: ToolRegistry, path: str, **arguments: object):
    return registry.execute("edit_file", {"path": path, **arguments})


def test_an_exact_unique_edit_returns_a_numbered_diff(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text(CODE)
    target.chmod(0o754)
    inode = target.stat().st_ino
    result = edit(registry, "code.py", old="x = 1", new="x = 2")
    assert result.ok, result.output
    assert target.read_text() == CODE.replace("x = 1", "x = 2")
    lines = result.output.splitlines()
    assert lines[0] == "Edited code.py: 1 replacement, +1 −1 lines."
    assert "-    2\t    x = 1" in lines and "+    2\t    x = 2" in lines and "     3\t    return x" in lines
    assert stat.S_IMODE(target.stat().st_mode) == 0o754  # the mode is kept
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert [p.name for p in registry.workspace.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_ambiguous_old_fails_unless_replace_all(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text(CODE)
    result = edit(registry, "code.py", old="return", new="yield")
    assert not result.ok and "occurs 2 times (lines 3, 7)" in result.output and "replace_all" in result.output
    assert target.read_text() == CODE
    result = edit(registry, "code.py", old="return", new="yield", replace_all=True)
    assert result.ok and "2 replacements" in result.output
    assert target.read_text().count("yield") == 2


def test_several_edits_apply_in_order_all_or_none(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text(CODE)
    failing = [{"old": "x = 1", "new": "x = 2"}, {"old": "no such text", "new": "y"}]
    result = edit(registry, "code.py", edits=failing)
    assert not result.ok and "edit 2 of 2" in result.output and "Nothing was changed" in result.output
    assert target.read_text() == CODE  # the first edit was not written either
    chained = [{"old": "x = 1", "new": "x = 2"}, {"old": "x = 2\n    return x", "new": "return 2"}]
    result = edit(registry, "code.py", edits=chained)
    assert result.ok, result.output
    assert target.read_text() == CODE.replace("x = 1\n    return x", "return 2")
    assert not edit(registry, "code.py", old="a", new="b", edits=chained).ok  # one form or the other
    assert "unexpected key" in edit(registry, "code.py", edits=[{"old": "f", "new": "h", "mode": 1}]).output


def test_no_match_shows_the_closest_lines_and_how_to_retry(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text("\n".join(f"line {n}" for n in range(100)) + "\ndef g():\n    return 1\n")
    result = edit(registry, "code.py", old="def g():\n    return 9", new="def g():\n    return 2")
    assert not result.ok
    assert "The closest lines are 99-102" in result.output
    assert "  101\tdef g():" in result.output and "  102\t    return 1" in result.output
    assert "read_file again" in result.output and "retry" in result.output


def test_a_whitespace_only_difference_applies_when_unique_and_says_so(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text(CODE)
    result = edit(registry, "code.py", old="def g():\n  return 1\n", new="def g():\n  return 3\n  # done\n")
    assert result.ok, result.output
    assert "matched only when whitespace is ignored (lines 6-7)" in result.output
    assert target.read_text().endswith("def g():\n    return 3\n    # done\n")  # the file's indentation
    target.write_text("if a:\n    go()\nif b:\n    go()\n")
    result = edit(registry, "code.py", old="if a:\n  go()\nif b:\n  go()", new="go()")
    assert result.ok
    twice = edit(registry, "code.py", old="  go( )", new="stop()")
    assert not twice.ok  # not unique once whitespace is ignored
    target.write_text("if a:\n    go()\nif b:\n    go()\n")
    assert "matches 2 places when whitespace is ignored" in edit(registry, "code.py", old="\tgo()\n", new="x()\n").output
    assert target.read_text() == "if a:\n    go()\nif b:\n    go()\n"


def test_line_numbers_copied_from_read_file_are_dropped(registry: ToolRegistry) -> None:
    target = registry.workspace / "code.py"
    target.write_text(CODE)
    shown = registry.execute("read_file", {"path": "code.py", "offset": 2, "limit": 2}).output.split("\n[")[0]
    result = edit(registry, "code.py", old=shown, new="    return 1")
    assert result.ok and "line numbers" in result.output
    assert target.read_text() == "def f():\n    return 1\n\n\ndef g():\n    return 1\n"


@pytest.mark.parametrize(("raw", "old", "new", "expected"), [
    (b"a\r\nb\r\nc\r\n", "b\nc", "B\nC", b"a\r\nB\r\nC\r\n"),  # CRLF stays CRLF
    (b"a\r\nb\r\n", "b\r\n", "B\r\n", b"a\r\nB\r\n"),  # old/new given with CRLF
    (b"one\ntwo", "two", "2", b"one\n2"),  # no final newline stays so
    (b"\xef\xbb\xbfcaf\xc3\xa9\n", "café", "tea", b"\xef\xbb\xbftea\n"),  # UTF-8 BOM kept
    ("h\u00e9llo\n".encode("utf-16"), "héllo", "hi", "hi\n".encode("utf-16")),  # UTF-16 with BOM
    (b"caf\xe9 \xff\x80 end\n", "end", "fin", b"caf\xe9 \xff\x80 fin\n"),  # not UTF-8: every byte kept
])
def test_encoding_line_endings_and_final_newline_are_kept(registry: ToolRegistry, raw: bytes, old: str,
                                                          new: str, expected: bytes) -> None:
    target = registry.workspace / "file.txt"
    target.write_bytes(raw)
    result = edit(registry, "file.txt", old=old, new=new)
    assert result.ok, result.output
    assert target.read_bytes() == expected


def test_what_cannot_be_edited_is_one_line_and_untouched(registry: ToolRegistry) -> None:
    (registry.workspace / "blob.bin").write_bytes(b"\x89PNG\x00\x00data")
    assert "binary" in edit(registry, "blob.bin", old="data", new="x").output
    assert "does not exist" in edit(registry, "missing.py", old="a", new="b").output
    latin = registry.workspace / "latin.txt"
    latin.write_bytes(b"caf\xe9\n")
    result = edit(registry, "latin.txt", old="caf", new="東京")
    assert not result.ok and "latin-1" in result.output and latin.read_bytes() == b"caf\xe9\n"
    assert "old is empty" in edit(registry, "notes.txt", old="", new="x").output
    assert "the same" in edit(registry, "notes.txt", old="hello", new="hello").output
    assert "nothing to do" in edit(registry, "notes.txt").output


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_edit_file_refuses_hostile_paths(registry: ToolRegistry, outside: Path, path: str) -> None:
    result = edit(registry, path, old="TOP-SECRET", new="pwned")
    assert not result.ok
    assert (outside / "secret.txt").read_text() == "TOP-SECRET"


def test_secrets_are_refused_and_a_link_inside_edits_its_target(registry: ToolRegistry) -> None:
    (registry.workspace / ".env").write_text("KEY=sk-live-1234\n")
    result = edit(registry, ".env", old="KEY", new="X")
    assert not result.ok and "refused" in result.output and "sk-live" not in result.output
    assert edit(registry, "ok_link", old="hello", new="goodbye").ok
    assert (registry.workspace / "ok_link").is_symlink()
    assert (registry.workspace / "notes.txt").read_text() == "goodbye notes\n"


def test_a_hard_linked_file_is_refused_and_its_twin_untouched(registry: ToolRegistry, tmp_path: Path) -> None:
    """A hard link inside the workspace may be another name for a file outside it (the write policy)."""
    target = registry.workspace / "shared.txt"
    target.write_text("version 1\n")
    twin = tmp_path / "twin.txt"
    os.link(target, twin)
    refused = edit(registry, "shared.txt", old="1", new="2")
    assert not refused.ok and "hard links" in refused.output
    assert target.read_text() == twin.read_text() == "version 1\n"


def test_a_5_mb_file_is_edited_without_passing_through_the_model(registry: ToolRegistry) -> None:
    lines = [f"row {n:07d} value={n * 7 % 1000}" for n in range(240_000)]
    body = "\n".join(lines) + "\n"
    target = registry.workspace / "big.txt"
    target.write_text(body)
    assert target.stat().st_size > 5_000_000
    old = f"row 0123456 value={123456 * 7 % 1000}"
    result = edit(registry, "big.txt", old=old, new="row 0123456 value=CHANGED")
    assert result.ok, result.output
    assert len(result.output) < 600  # the call and its result are a few lines, not the file
    assert "+123457\trow 0123456 value=CHANGED" in result.output
    assert target.read_text() == body.replace(old + "\n", "row 0123456 value=CHANGED\n", 1)


def test_a_denied_edit_changes_nothing(registry: ToolRegistry) -> None:
    registry.approver = lambda name, arguments: False
    assert not edit(registry, "notes.txt", old="hello", new="bye").ok
    assert (registry.workspace / "notes.txt").read_text() == "hello notes\n"


def test_apply_changes_is_pure_and_all_or_none() -> None:
    with pytest.raises(EditError, match="edit 2 of 2"):
        apply_changes("a b", [Change("a", "c"), Change("zzz", "d")])
    assert apply_changes("a b a", [Change("a", "x", True), Change("b", "y")]).after == "x y x"


def test_the_model_edits_through_the_engine(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    """The fake model's edit_file call, streamed in both wires, runs and its diff reaches the model."""
    (workspace / "app.py").write_text(CODE)
    fake_llm_env.queue(
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "edits": [
            {"old": "x = 1", "new": "x = 41 + 1"}, {"old": "def g():", "new": "def h():"}]})]),
        Reply(text="Done."))
    config = Config.load()
    memory = MemoryStore(config.db_path)
    try:
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir), approver=lambda name, args: True)
        finished = [e for e in loop.run_turn("fix it") if isinstance(e, ToolCallFinished)]
    finally:
        memory.close()
    assert finished[0].ok, finished[0].result
    assert (workspace / "app.py").read_text() == CODE.replace("x = 1", "x = 41 + 1").replace("def g", "def h")
    sent = fake_llm_env.requests[1].messages[-1]
    assert sent["role"] == "tool" and "+    2\t    x = 41 + 1" in sent["content"] and "+    6\tdef h():" in sent["content"]


def test_the_diff_cites_real_line_numbers_wherever_the_change_is() -> None:
    """Random files and edits: every diff line's number points at that very text (old numbers for
    removed lines, new numbers for added and context lines), and a change is never left out."""
    import random

    from hermes_tui.agent.edit import diff_lines

    rng = random.Random(22)
    for _ in range(300):
        lines = [rng.choice(["", "x = 1", "return x", "def f():", f"v{rng.randint(0, 9)}"]) for _ in range(rng.randint(1, 40))]
        before = "\n".join(lines) + rng.choice(["", "\n"])
        start = rng.randint(0, len(before))
        stop = min(len(before), start + rng.randint(0, 30))
        after = before[:start] + rng.choice(["", "NEW", "a\nb", "\n", "\n\n", "x = 1\n"]) + before[stop:]
        if after == before:
            continue
        old_lines, new_lines = before.split("\n"), after.split("\n")
        diff = diff_lines(before, after)
        for line in diff:
            if line.strip() == "...":
                continue
            marker, number, text = line[0], int(line[1:].split("\t")[0]), line.split("\t", 1)[1]
            assert (old_lines if marker == "-" else new_lines)[number - 1] == text, (before, after, diff)
        changed = [line for line in diff if line[0] in "+-"]
        assert changed, (before, after, diff)
