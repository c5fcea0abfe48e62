"""A fake model for ``hermes-tui eval``: it works a task out step by step until a skill for it is offered,
then follows the skill; and it answers the curator with that skill. Used by tests/test_eval.py and
bench/learning_eval.py.

It answers from what each request holds, not from a queue, so the order of the children's requests
does not matter: the curator's request carries SKILL_AUTHORING_PROMPT; a turn whose system prompt or
message names the skill is a warm one; the number of tool results so far is the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.fakes.server import RecordedRequest, Reply, Responder, ToolCall

CURATOR_MARK = "You maintain a library of reusable skills"  # the start of SKILL_AUTHORING_PROMPT


@dataclass(frozen=True)
class LearnableTask:
    """How the fake model solves one task cold (``cold`` calls, one per step) and warm (``use_skill``
    then ``warm``), and the skill the curator writes from the cold turn."""

    skill: str
    description: str
    triggers: str
    cold: Sequence[ToolCall]
    warm: Sequence[ToolCall]
    answer: str = "Done."
    usage: tuple[int, int] = (900, 60)

    @property
    def skill_answer(self) -> str:
        steps = "\n".join(f"{n}. `{call.name}` {call.arguments_json}" for n, call in enumerate(self.warm, 1))
        return (f"NAME: {self.skill}\nDESCRIPTION: {self.description}\nTRIGGERS: {self.triggers}\n"
                f"BODY:\n{steps}")


def learner(tasks: Sequence[LearnableTask]) -> Responder:
    """The server's responder for these tasks (each recognised by words of its triggers in the request)."""

    def respond(request: RecordedRequest) -> Reply:
        messages = request.messages
        users = [m for m in messages if m["role"] == "user"]
        first = users[0]["content"] if users else ""
        if CURATOR_MARK in first:  # the task is the transcript's first user line
            asked = next((line for line in first.splitlines() if line.startswith("[user] ")), "")
            task = _which(tasks, asked)
            return Reply(text=task.skill_answer if task else "NONE", usage=(1500, 80))
        task = _which(tasks, first.split("\n\n[Possibly relevant skills")[0])
        if task is None:
            return Reply(text="I do not know this task.")
        offered = task.skill in (request.system or "") or task.skill in first
        steps = [ToolCall("use_skill", {"name": task.skill}), *task.warm] if offered else list(task.cold)
        done = sum(m["role"] == "tool" for m in messages)
        if done < len(steps):
            return Reply(tool_calls=[steps[done]], usage=(task.usage[0] + 200 * done, task.usage[1]))
        return Reply(text=task.answer, usage=(task.usage[0] + 200 * done, task.usage[1]))

    return respond


def _which(tasks: Sequence[LearnableTask], text: str) -> LearnableTask | None:
    words = set(text.lower().replace(".", " ").replace(",", " ").split())
    return next((t for t in tasks if sum(w.strip() in words for w in t.triggers.split(",")) >= 2), None)


COUNT_LINES = LearnableTask(
    skill="count-file-lines",
    description="Count the lines of a text file and write the number to count.txt",
    triggers="count, lines, file, wc, line count",
    cold=[ToolCall("list_dir", {"path": "."}), ToolCall("read_file", {"path": "data.txt"}),
          ToolCall("run_bash", {"command": "wc -l < data.txt > count.txt"})],
    warm=[ToolCall("run_bash", {"command": "wc -l < data.txt > count.txt"})],
    answer="data.txt has 3 lines; the count is in count.txt.",
)

TASK_YAML = """\
- id: count-lines
  prompt: Count the lines of data.txt and write the number to count.txt.
  files:
    data.txt: "alpha\\nbeta\\ngamma\\n"
  check: test "$(tr -d ' ' < count.txt)" = 3
"""
