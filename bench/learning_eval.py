"""``hermes-tui eval`` end to end against the fake server: what the harness reports. Prints; never fails.

  python bench/learning_eval.py [--runs N]

Three tasks of evals/tasks.yaml (their files, prompts, paraphrases and real checks). The fake model
(tests/eval_harness.py) works each one out cold in four steps (list_dir, read_file, then the
command with run_bash, then the answer), the curator answers with a skill for it, and warm, when
that skill is offered, it loads it with use_skill and runs the command at once. Every turn is a
real ``hermes-tui -p --yes --json`` child (sandboxed shell, real checks); the fake server runs in
this process, the evaluation in a child of its own.

The figures show that the harness measures what happened, not that skills help a real model: the
fake model is scripted to need fewer steps when it is offered a skill. Seconds are mostly each
child's start (litellm's import: the warm helper is off in evaluations).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common
import yaml

from hermes_tui.learning.eval import load_tasks
from tests.eval_harness import LearnableTask, learner
from tests.fakes.server import FakeLLMServer, ToolCall

SCRIPTS = {
    "dedupe-lines": ("dedupe-lines-in-place", "Remove duplicate lines from a file in place, first occurrence kept",
                     "duplicate, lines, list, txt, dedupe, once, repeated",
                     "awk '!seen[$0]++' list.txt > list.tmp && mv list.tmp list.txt", "list.txt"),
    "csv-to-json": ("csv-to-json-records", "Convert a CSV file to a JSON list of row objects keyed by the header",
                    "csv, json, people, convert, rows, header",
                    "python3 -c 'import csv,json; json.dump(list(csv.DictReader(open(\"people.csv\"))), "
                    "open(\"people.json\",\"w\"))'", "people.csv"),
    "tar-backup": ("tar-gz-backup", "Back up a folder into a gzip-compressed tar archive",
                   "backup, tar, gz, project, archive, gzip", "tar czf backup.tar.gz project", "project/main.py"),
}


def learnable(task_id: str) -> LearnableTask:
    skill, description, triggers, command, peek = SCRIPTS[task_id]
    run = ToolCall("run_bash", {"command": command})
    return LearnableTask(skill, description, triggers,
                         cold=[ToolCall("list_dir", {"path": "."}), ToolCall("read_file", {"path": peek}), run],
                         warm=[run], answer=f"Done: {task_id}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    shipped = {task.id: task for task in load_tasks(_common.ROOT / "evals" / "tasks.yaml")}
    entries = [{"id": t.id, "prompt": t.prompt, "paraphrases": list(t.paraphrases), "files": dict(t.files),
                "check": t.check} for t in (shipped[task_id] for task_id in SCRIPTS)]
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        server.responder = learner([learnable(task_id) for task_id in SCRIPTS])
        tasks = Path(tmp) / "tasks.yaml"
        tasks.write_text(yaml.safe_dump(entries, sort_keys=False))
        env = {**os.environ, "HERMES_HOME": str(Path(tmp) / "user-home"), "HERMES_PROVIDER": "openai",
               "HERMES_MODEL": "test-model", "HERMES_API_BASE": server.openai_base, "OPENAI_API_KEY": "sk-bench"}
        command = [sys.executable, "-c", "from hermes_tui.cli import tui_main; tui_main()", "eval", str(tasks),
                   "--runs", str(args.runs), "--json", str(Path(tmp) / "rows.json")]
        print(f"hermes-tui eval: {len(entries)} tasks of evals/tasks.yaml, {args.runs} run(s), fake model "
              "(OpenAI wire)\n")
        result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tmp)
        print(result.stderr, end="")
        print()
        print(result.stdout, end="")
        print(f"\nexit code {result.returncode}; {len(server.requests)} requests reached the fake server")


if __name__ == "__main__":
    main()
