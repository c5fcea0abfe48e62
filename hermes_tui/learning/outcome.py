"""Did a turn work? The gate in front of the curator, and the signs that a turn did not.

Self-judged skills do not help (SkillsBench 2026: +0 pp on average; SkillLearnBench: gains come
from external feedback), so the curator distils only turns whose work ended well by what the
world said: an answer, and no tool call that failed after the last success of its kind (a failure
that a later call of the same tool fixed is a pitfall worth naming, not a failed turn). A user who
corrects the next message, or runs /retry or /undo on the turn, fails it afterwards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hermes_tui.conversation import ChatMessage, Status

FAILED_SHOWN = 8  # failed calls named to the curator, at most
FAILED_OUTPUT_CHARS = 200  # of each failed call's output

# Openings of a next message that say the turn before did not work. Matched at the start of the
# message (after spaces and punctuation), case-insensitively; kept short so a new request that
# merely contains "no" is not taken for a correction.
CORRECTIONS = (
    "no,", "no.", "no!", "nope", "that's wrong", "that is wrong", "thats wrong", "wrong",
    "that didn't work", "that did not work", "it didn't work", "it did not work", "didn't work",
    "doesn't work", "does not work", "not what i asked", "that's not right", "that is not right",
    "that's incorrect", "incorrect", "you broke", "still broken", "still fails", "still failing",
    "nein", "falsch", "das stimmt nicht", "funktioniert nicht", "non,", "c'est faux", "ça ne marche pas",
    "ca ne marche pas", "no funciona", "está mal", "esta mal", "non funziona", "sbagliato", "não funciona",
    "errado",
)
_LEAD = re.compile(r"^[\s\"'`*_>(\[-]+")


def is_correction(text: str) -> bool:
    """Whether ``text`` opens by telling the agent its last turn was wrong (``CORRECTIONS``)."""
    start = _LEAD.sub("", text.lower())[:80]
    start = start.replace("\u2019", "'")
    return any(start.startswith(phrase) for phrase in CORRECTIONS) or start.rstrip(".! ") == "no"


@dataclass(frozen=True)
class CallOutcome:
    """One tool call of a turn: its name, arguments as sent, whether it worked, its output."""

    name: str
    arguments: str
    status: Status
    output: str

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


def call_outcomes(turn: Sequence[ChatMessage]) -> list[CallOutcome]:
    """The tool calls of a turn's messages, in order, with how each ended."""
    arguments = {call.id: call.raw or json.dumps(dict(call.arguments)) for m in turn for call in m.calls}
    return [CallOutcome(m.name or "", arguments.get(m.tool_call_id or "", "{}"), Status(m.status), m.content or "")
            for m in turn if m.role == "tool"]


def unrecovered(calls: Sequence[CallOutcome]) -> list[CallOutcome]:
    """The failed calls no later success of the same tool made good (empty: the work ended well)."""
    last: dict[str, CallOutcome] = {}
    for call in calls:
        last[call.name] = call
    return [call for call in last.values() if not call.ok]


def worked(stopped_reason: str, calls: Sequence[CallOutcome]) -> bool:
    """The turn ended with an answer and no tool failure was left standing."""
    return stopped_reason == "done" and not unrecovered(calls)


def failures_note(calls: Sequence[CallOutcome]) -> str:
    """The failed calls on the way, one line each, for the curator to name as pitfalls ('' for none)."""
    failed = [c for c in calls if not c.ok][:FAILED_SHOWN]
    lines = []
    for call in failed:
        output = " ".join(call.output.split())[:FAILED_OUTPUT_CHARS]
        lines.append(f"- {call.name} {call.arguments[:FAILED_OUTPUT_CHARS]} -> {call.status.value}: {output}")
    return "\n".join(lines)
