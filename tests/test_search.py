"""glob and grep on a real tree, once with ripgrep and once with the pure-Python fallback (PATH
without rg): the same answers, .gitignore honoured, secrets and links out never reached, output capped."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from hermes_tui.agent import search
from hermes_tui.agent.toolkit import ToolContext
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager

pytestmark = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is installed by .ci/run")


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    if request.param == "python":
        empty = tmp_path / "no-rg-bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
    assert search.engine() == request.param
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> ToolRegistry:
    ws = tmp_path / "ws"
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 'main'\n",
        "src/vendor/.gitignore": "generated.py\n",
        "src/vendor/generated.py": "def main(): pass\n",
        "src/vendor/real.py": "MAIN = 1\n",
        "build/out.py": "def main(): pass\n",
        "debug.log": "main log\n",
        "keep.log": "main kept\n",
        ".github/ci.yml": "run: main\n",
        ".env": "MAIN_KEY=sk-live-abcdef\n",
        "config/.env.local": "main=secret\n",
        "certs/server.pem": "main private key\n",
        "docs/readme.md": "The main idea.\n",
    }
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    (ws / "blob.bin").write_bytes(b"main\x00\x01\x02")
    (ws / "huge.txt").write_text("main\n" * (search.MAX_FILESIZE // 5 + 10))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("def main(): 'OUTSIDE'\n")
    (ws / "linked").symlink_to(outside)
    (ws / "leak_link.py").symlink_to(outside / "leak.py")
    (ws / ".git").mkdir()
    (ws / ".git" / "config.py").write_text("main = 'git internals'\n")
    now = time.time()
    for age, name in enumerate(["src/app.py", "src/vendor/real.py", "src/util.py", "docs/readme.md"]):
        os.utime(ws / name, (now - 1000 * age, now - 1000 * age))
    return ToolRegistry(ws, MemoryStore(tmp_path / "m.db"), SkillManager(tmp_path / "s"),
                        approver=lambda name, arguments: False)  # denies everything that asks


def test_glob_lists_matches_newest_first_and_skips_what_it_must(engine: str, tree: ToolRegistry) -> None:
    result = tree.execute("glob", {"pattern": "**/*.py"})
    assert result.ok, result.output
    assert result.output.splitlines() == ["src/app.py", "src/vendor/real.py", "src/util.py"]  # newest first
    md = tree.execute("glob", {"pattern": "*.md"}).output.splitlines()
    assert md == ["docs/readme.md"]  # no slash: any depth
    everything = set(tree.execute("glob", {"pattern": "*"}).output.splitlines())
    assert {".github/ci.yml", "keep.log", ".gitignore", "blob.bin"} <= everything
    for absent in (".env", "config/.env.local", "certs/server.pem", "debug.log", "build/out.py",
                   "src/vendor/generated.py", ".git/config.py", "leak_link.py", "linked/leak.py"):
        assert absent not in everything
    assert tree.execute("glob", {"pattern": "*.py", "path": "src/vendor"}).output == "src/vendor/real.py"
    assert "No files match" in tree.execute("glob", {"pattern": "*.rs"}).output
    assert not tree.execute("glob", {"pattern": "*", "path": "../"}).ok
    assert not tree.execute("glob", {"pattern": "*", "path": "linked"}).ok


def test_glob_sorts_by_modification_time(engine: str, tree: ToolRegistry) -> None:
    names = tree.execute("glob", {"pattern": "src/*.py"}).output.splitlines()
    assert names == ["src/app.py", "src/util.py"]  # app.py was modified last
    os.utime(tree.workspace / "src/util.py", None)
    assert tree.execute("glob", {"pattern": "src/*.py"}).output.splitlines() == ["src/util.py", "src/app.py"]


def test_glob_caps_its_list_with_a_note(engine: str, tree: ToolRegistry) -> None:
    many = tree.workspace / "many"
    many.mkdir()
    for n in range(search.GLOB_CAP + 20):
        (many / f"f{n:03d}.txt").write_text("x")
    lines = tree.execute("glob", {"pattern": "many/*.txt"}).output.splitlines()
    assert len(lines) == search.GLOB_CAP + 1 and "20 more files match" in lines[-1]


def test_grep_finds_lines_grouped_by_file_and_skips_what_it_must(engine: str, tree: ToolRegistry) -> None:
    result = tree.execute("grep", {"pattern": "main"})
    assert result.ok, result.output
    assert result.output.splitlines() == [
        ".github/ci.yml", "1: run: main",
        "docs/readme.md", "1: The main idea.",
        "keep.log", "1: main kept",
        "src/app.py", "3: def main():",
        "src/util.py", "2:     return 'main'",
    ]  # not: .env*, *.pem, ignored, binary, huge, .git, links out, other case (MAIN)
    assert "OUTSIDE" not in result.output and "sk-live" not in result.output


def test_grep_regex_glob_context_and_path(engine: str, tree: ToolRegistry) -> None:
    context = tree.execute("grep", {"pattern": r"def \w+\(\)", "glob": "*.py", "context": 1}).output
    assert context.splitlines() == ["src/app.py", "2- ", "3: def main():", "4-     return os.getcwd()",
                                    "src/util.py", "1: def helper():", "2-     return 'main'"]
    assert tree.execute("grep", {"pattern": "(?i)^main", "path": "src"}).output.splitlines() == \
        ["src/vendor/real.py", "1: MAIN = 1"]
    one = tree.execute("grep", {"pattern": "getcwd", "path": "src/app.py"})
    assert one.output.splitlines() == ["src/app.py", "4:     return os.getcwd()"]
    bad = tree.execute("grep", {"pattern": "main("})
    assert not bad.ok and "regular expression" in bad.output and len(bad.output.splitlines()) == 1
    assert not tree.execute("grep", {"pattern": "main", "path": ".env"}).ok  # a secret named outright
    assert not tree.execute("grep", {"pattern": "main", "path": "linked"}).ok
    assert "No matches" in tree.execute("grep", {"pattern": "zebra"}).output


def test_grep_caps_its_output_with_a_note(engine: str, tree: ToolRegistry) -> None:
    lots = tree.workspace / "lots"
    lots.mkdir()
    for n in range(30):
        (lots / f"f{n:02d}.txt").write_text("needle " + "x" * 500 + "\n" + "needle\n" * 20)
    result = tree.execute("grep", {"pattern": "needle", "path": "lots"})
    lines = result.output.splitlines()
    assert len(lines) <= search.GREP_LINES + 1 and len(result.output) <= search.GREP_CHARS + 300
    assert lines[1].endswith("x…") and len(lines[1]) < search.LINE_WIDTH + 20  # a long line is cut
    assert lines[-1].startswith("[... output capped:") and "more files" in lines[-1]


def test_cancel_stops_a_search(engine: str, tree: ToolRegistry) -> None:
    cancel = threading.Event()
    cancel.set()
    ctx = ToolContext(tree.workspace, tree.memory, tree.skills, cancel=cancel)
    assert "cancelled" in search.grep_tool(ctx, "main").output
    assert "cancelled" in search.glob_tool(ctx, "*").output


def test_search_tools_need_no_approval_and_stay_on_without_shell_or_writes(tree: ToolRegistry) -> None:
    assert not tree.needs_approval("glob") and not tree.needs_approval("grep")
    assert tree.needs_approval("edit_file")
    reg = ToolRegistry(tree.workspace, tree.memory, tree.skills, families=frozenset())
    assert {"glob", "grep"} <= set(reg.names) and "edit_file" not in reg.names


def test_the_search_filter_refuses_exactly_what_check_not_secret_refuses(tmp_path: Path) -> None:
    from hermes_tui.agent.paths import check_not_secret, secret_filter

    home = tmp_path / "ws" / "hermes-home"
    names = [".env", "src/.env.local", "a/.netrc", "keys/id_ed25519", "keys/id_card.txt", "tls/site.pem",
             ".aws/credentials", "x/credentials", ".docker/config.json", "docker/config.json", ".kube/config",
             "gh/hosts.yml", ".ssh/known_hosts", "deep/.gnupg/pubring.kbx", "hermes-home/memory.sqlite3",
             "hermes-home.txt", "src/app.py", "environment.py", "notes/.envrc", "README.md"]
    refused = secret_filter(home)
    for name in names:
        path = tmp_path / "ws" / name
        assert refused(str(path)) == (check_not_secret(path, home=home) is not None), name
    assert sum(refused(str(tmp_path / "ws" / name)) for name in names) == 12
