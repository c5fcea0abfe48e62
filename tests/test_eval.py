"""``hermes-tui eval TASKS``: cold and warm arms as real ``hermes-tui -p`` children against the fake server.

The eval command itself runs in this process (``cli``); every turn is a real child process
(``hermes-tui -p ... --yes --json``), so these tests spawn two children per eval (seconds each).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from hermes_tui.config import Config
from hermes_tui.learning.eval import TaskFileError, _Finished, _run, child_environment, load_tasks, parse_tasks
from tests.eval_harness import COUNT_LINES, TASK_YAML, learner
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply, ToolCall
from tests.helpers import HERMES_TUI, cli, wait_until

ROOT = Path(__file__).resolve().parents[1]
JSON_KEYS = {"task", "arm", "run", "success", "model_calls", "tool_calls", "prompt_tokens", "completion_tokens",
             "seconds", "skills_used"}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


def test_eval_learns_cold_and_uses_the_skill_warm(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                   tmp_path: Path) -> None:
    fake_llm_env.responder = learner([COUNT_LINES])
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(TASK_YAML)
    before = _snapshot(hermes_home)
    keep = tmp_path / "keep"
    result = cli("eval", str(tasks), "--json", str(tmp_path / "out.json"), "--keep", str(keep))
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "out.json").read_text())
    assert [r["arm"] for r in rows] == ["cold", "warm"]
    for row in rows:
        assert set(row) >= JSON_KEYS, row
    cold, warm = rows
    # Cold: three tool calls and an answer (4 model calls); the curator wrote the skill.
    assert (cold["success"], cold["model_calls"], cold["tool_calls"]) == (True, 4, 3)
    assert cold["skills_learned"] == ["count-file-lines"] and cold["skills_used"] == []
    # Warm: offered only that skill, it used it and took fewer steps.
    assert (warm["success"], warm["model_calls"], warm["tool_calls"]) == (True, 3, 2)
    assert warm["skills_used"] == ["count-file-lines"]
    assert warm["prompt_tokens"] < cold["prompt_tokens"] and cold["prompt_tokens"] > 0
    assert "task count-lines" in result.stdout and "count-file-lines" in result.stdout
    delta = next(line for line in result.stdout.splitlines() if line.strip().startswith("Δ"))
    assert delta.split()[1:4] == ["+0", "pp", "-1.0"]
    # The curator's request and every turn went to the configured endpoint; the user's home is untouched.
    assert sum("You maintain a library of reusable skills" in (r.messages[-1]["content"] or "")
               for r in fake_llm_env.requests) == 1
    assert _snapshot(hermes_home) == before
    # Kept: both arms' homes and workspaces; the key reached the children by their environment only.
    (kept,) = keep.iterdir()
    assert (kept / "run-1" / "cold" / "count-lines" / "workspace" / "count.txt").read_text().strip() == "3"
    assert (kept / "run-1" / "warm" / "count-lines" / "0" / "home" / "skills" / "count-file-lines").is_dir()
    key = ("sk-ant-test" if fake_llm_env.wire_under_test == "anthropic" else "sk-test").encode()
    assert not [p for p in kept.rglob("*") if p.is_file() and key in p.read_bytes()]


@on_wire("anthropic")
def test_library_current_copies_the_users_skills_and_writes_nothing(fake_llm_env: FakeLLMServer,
                                                                    hermes_home: Path, tmp_path: Path) -> None:
    fake_llm_env.responder = learner([COUNT_LINES])
    skill = hermes_home / "skills" / "count-file-lines"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: count-file-lines\ndescription: Count the lines of a text file and "
                                    "write the number to count.txt\n---\n1. `run_bash` wc -l\n")
    before = _snapshot(hermes_home)
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(TASK_YAML)
    result = cli("eval", str(tasks), "--library", "current", "--json", str(tmp_path / "out.json"))
    assert result.returncode == 0, result.stderr
    cold, warm = json.loads((tmp_path / "out.json").read_text())
    assert cold["skills_used"] == [] and warm["skills_used"] == ["count-file-lines"]
    # The warm turn's system prompt offered the user's skill; the cold turn's did not.
    turn_systems = [r.system or "" for r in fake_llm_env.requests if r.tools]
    assert any("count-file-lines" in s for s in turn_systems) and "count-file-lines" not in turn_systems[0]
    assert _snapshot(hermes_home) == before  # read, never written: no index, no database, no lock file


@on_wire("openai")
def test_a_failing_check_counts_as_a_failure(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                             tmp_path: Path) -> None:
    fake_llm_env.responder = learner([COUNT_LINES])  # it does not know this task: answers in words only
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text("- id: report\n  prompt: Write the weekly report to report.md.\n"
                     "  check: grep -q Summary report.md\n")
    result = cli("eval", str(tasks), "--json", str(tmp_path / "out.json"))
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "out.json").read_text())
    assert [(r["arm"], r["success"], r["model_calls"]) for r in rows] == [("cold", False, 1), ("warm", False, 1)]
    assert all(r["error"].startswith("check exited") for r in rows)
    assert "0/1 (0%)" in result.stdout and "FAILED" in result.stderr


def _processes_with(text: str) -> list[int]:
    """The processes whose environment mentions ``text`` (a folder only this test's children know)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@on_wire("openai")
def test_ctrl_c_stops_the_child_and_prints_the_rows_so_far(fake_llm_env: FakeLLMServer, hermes_home: Path,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    learn = learner([COUNT_LINES])
    warm_started = threading.Event()

    def respond(request: RecordedRequest) -> Reply:
        if "count-file-lines" in (request.system or "") and request.tools:  # the warm turn: a long command
            warm_started.set()
            return Reply(tool_calls=[ToolCall("run_bash", {"command": "sleep 120"})])
        return learn(request)

    fake_llm_env.responder = respond
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(TASK_YAML)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # where the evaluation's temporary folders go
    proc = subprocess.Popen([HERMES_TUI, "eval", str(tasks)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=dict(os.environ))
    try:
        assert warm_started.wait(180), "the warm turn never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: the table holds the 1 turn(s) that finished" in err and "Traceback" not in err
    table = out.splitlines()
    assert any(line.split()[:2] == ["cold", "1"] for line in table)
    assert not any(line.split()[:1] == ["warm"] for line in table)
    # The warm child and its command were stopped, not left running; the temporary folders are gone.
    assert wait_until(lambda: not _processes_with(str(scratch)), 20), _processes_with(str(scratch))
    assert not [p for p in scratch.iterdir() if p.name.startswith("hermes-eval-")]


@on_wire("openai")
@pytest.mark.parametrize(("text", "expected"), [
    ("- id: a\n  prompt: [unclosed\n", "not valid YAML at line"),
    ("id: a\nprompt: p\ncheck: c\n", "expected a non-empty list of tasks"),
    ("- id: a\n  prompt: p\n", "task 1 (a): 'check' must be a non-empty string"),
    ("- id: a b\n  prompt: p\n  check: c\n", "task 1 (a b): 'id' must be letters"),
    ("- id: a\n  prompt: p\n  check: c\n  file: {}\n", "task 1 (a): unknown key 'file'"),
    ("- id: a\n  prompt: p\n  check: c\n  files: {../x: y}\n", "file '../x': the path must be relative"),
    ("- id: a\n  prompt: p\n  check: c\n  files: {x: 3}\n", "file 'x': the content must be a string"),
    ("- id: a\n  prompt: p\n  check: c\n- id: a\n  prompt: p\n  check: c\n", "task 2 (a): id 'a' is used twice"),
])
def test_a_bad_task_file_is_one_clear_line(fake_llm_env: FakeLLMServer, hermes_home: Path, tmp_path: Path,
                                           text: str, expected: str) -> None:
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(text)
    result = cli("eval", str(tasks))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes: ") and expected in lines[0], lines
    assert "Traceback" not in result.stderr and fake_llm_env.requests == []


def test_every_problem_of_a_task_file_has_its_line() -> None:
    with pytest.raises(TaskFileError) as caught:
        parse_tasks([{"id": "a", "prompt": "", "check": "c"}, {"prompt": "p", "check": ""}, "text"])
    assert len(caught.value.problems) == 4


def test_a_child_gets_the_users_model_and_key_and_no_other_setting_or_secret(tmp_path: Path) -> None:
    config = Config.load({"HERMES_HOME": str(tmp_path / "user"), "HERMES_PROVIDER": "openai",
                          "HERMES_MODEL": "gpt-x", "HERMES_API_BASE": "http://127.0.0.1:9/v1",
                          "OPENAI_API_KEY": "sk-mine"}, cwd=tmp_path)
    base = {"PATH": "/bin", "HERMES_HOME": "/home/me/.hermes", "HERMES_APPROVAL": "always",
            "ANTHROPIC_API_KEY": "sk-other", "GITHUB_SECRET_KEY": "s3cret", "OPENAI_API_KEY": "sk-mine"}
    env = child_environment(config, tmp_path / "h", tmp_path / "w", base)
    assert env["HERMES_HOME"] == str(tmp_path / "h") and env["HERMES_WORKSPACE"] == str(tmp_path / "w")
    assert (env["HERMES_PROVIDER"], env["HERMES_MODEL"], env["HERMES_API_BASE"]) == ("openai", "gpt-x",
                                                                                   "http://127.0.0.1:9/v1")
    assert env["OPENAI_API_KEY"] == "sk-mine" and env["HERMES_HELPER"] == "off" and env["PATH"] == "/bin"
    assert not {"ANTHROPIC_API_KEY", "GITHUB_SECRET_KEY", "HERMES_APPROVAL"} & set(env)


# A solution per shipped task: the checks pass once the work is done, and fail before.
SOLUTIONS = {
    "count-loc": """python3 -c 'import json,pathlib; c={}
for p in list(pathlib.Path("src").rglob("*"))+list(pathlib.Path("web").rglob("*")):
    c[p.suffix[1:]]=c.get(p.suffix[1:],0)+len(p.read_text().splitlines())
json.dump(c,open("loc.json","w"))'""",
    "largest-files": "find . -type f -printf '%s %P\\n' | sort -rn | head -3 | cut -d' ' -f2 > largest.txt",
    "csv-to-json": """python3 -c 'import csv,json; json.dump(list(csv.DictReader(open("people.csv"))),
open("people.json","w"))'""",
    "rotate-logs": "gzip logs/app.log.1 logs/app.log.2",
    "git-log-authors": "grep '^Author:' git.log | sed 's/^Author: //; s/ <.*//' | sort | uniq -c | sort -rn "
                       "| awk '{c=$1; $1=\"\"; sub(/^ /, \"\"); print $0\",\"c}' > authors.csv",
    "dedupe-lines": "awk '!seen[$0]++' list.txt > t && mv t list.txt",
    "extract-emails": "grep -ohE '[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+\\.[a-z]+' notes/*.txt | sort -u > emails.txt",
    "rename-photos": "cd photos && for f in IMG_*.jpg; do mv \"$f\" \"photo-${f#IMG_}\"; done",
    "tar-backup": "tar czf backup.tar.gz project",
    "word-frequencies": "tr -cs 'A-Za-z' '\\n' < text.txt | tr A-Z a-z | grep . | sort | uniq -c | sort -rn "
                        "| head -3 | awk '{print $2, $1}' > top.txt",
}


def _check(command: str, workspace: Path) -> _Finished:
    return _run(["/bin/sh", "-c", command], cwd=workspace, env=None, timeout=60)


def test_the_shipped_tasks_parse_and_their_checks_are_real(tmp_path: Path) -> None:
    tasks = load_tasks(ROOT / "evals" / "tasks.yaml")
    assert len(tasks) >= 10 and {t.id for t in tasks} == set(SOLUTIONS)
    for task in tasks:
        assert task.files and task.paraphrases, task.id
        empty, untouched, solved = (tmp_path / task.id / name for name in ("empty", "untouched", "solved"))
        for folder in (empty, untouched, solved):
            folder.mkdir(parents=True)
        for folder in (untouched, solved):
            for relative, content in task.files.items():
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                (folder / relative).write_text(content)
        assert _check(task.check, empty).code != 0, f"{task.id}: the check passes on an empty workspace"
        assert _check(task.check, untouched).code != 0, f"{task.id}: the check passes before any work"
        subprocess.run(["/bin/sh", "-c", SOLUTIONS[task.id]], cwd=solved, check=True)
        done = _check(task.check, solved)
        assert done.code == 0, f"{task.id}: the check fails on a solution: {done.stderr}"
