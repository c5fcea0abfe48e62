"""The learning loop: distil a finished multi-step turn into a skill, summarise a closed session.

Both ask the model for text in a strict format and parse it deterministically; a bad answer is
logged and changes nothing.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_tui.agent.prompts import (
    FAILED_CALLS_NOTE,
    MEMORY_CURATOR_PROMPT,
    SESSION_SUMMARY_PROMPT,
    SKILL_AUTHORING_PROMPT,
)
from hermes_tui.conversation import ChatMessage
from hermes_tui.events import Notice, SkillLearned
from hermes_tui.llm_errors import LLMError
from hermes_tui.memory.facts import FactError, FactStore, Saved
from hermes_tui.skills.lifecycle import Provenance
from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.schema import SkillError, normalize_name

log = logging.getLogger(__name__)

TOOL_RESULT_CHARS = 600  # tool results are trimmed in transcripts handed to the curator
TRANSCRIPT_CHARS = 40_000


class Completer(Protocol):
    def complete(self, messages: list[dict[str, Any]], *, timeout: float = ...,
                 cancel: threading.Event | None = ...) -> str: ...


class ProposalError(ValueError):
    """The model's answer does not follow SKILL_AUTHORING_PROMPT's format."""


@dataclass(frozen=True)
class Proposal:
    """A skill the curator drafted from a finished task, not yet checked or saved."""

    name: str
    description: str
    triggers: list[str]
    body: str


_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.S)
_FIELD = re.compile(r"^\s*(NAME|DESCRIPTION|TRIGGERS|BODY)\s*:[ \t]*(.*)$", re.I)


def parse_proposal(text: str) -> Proposal | None:
    """``None`` for NONE; a ``Proposal`` for a well-formed answer; ``ProposalError`` otherwise."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if re.fullmatch(r"\**NONE\**\.?", text, re.I):
        return None
    fields: dict[str, str] = {}
    body_lines: list[str] | None = None
    for line in text.splitlines():
        if body_lines is not None:
            body_lines.append(line)
            continue
        match = _FIELD.match(line)
        if not match:
            if line.strip():
                raise ProposalError(f"unexpected line before BODY: {line.strip()[:80]!r}")
            continue
        key, value = match.group(1).upper(), match.group(2).strip()
        if key in fields:
            raise ProposalError(f"{key} given twice")
        fields[key] = value
        if key == "BODY":
            body_lines = [value] if value else []
    missing = [k for k in ("NAME", "DESCRIPTION", "TRIGGERS", "BODY") if k not in fields]
    if missing:
        raise ProposalError(f"missing field(s): {', '.join(missing)}")
    body = "\n".join(body_lines or []).strip()
    if not fields["DESCRIPTION"] or not body:
        raise ProposalError("DESCRIPTION and BODY must not be empty")
    try:
        name = normalize_name(fields["NAME"])
    except SkillError as exc:
        raise ProposalError(str(exc)) from exc
    triggers = [t.strip() for t in fields["TRIGGERS"].split(",") if t.strip()]
    return Proposal(name, fields["DESCRIPTION"], triggers, body)


def render_transcript(messages: Sequence[ChatMessage], *, tool_chars: int = TOOL_RESULT_CHARS,
                      max_chars: int = TRANSCRIPT_CHARS) -> str:
    """Plain-text transcript with tool results trimmed, newest part kept when over ``max_chars``."""
    parts: list[str] = []
    for message in messages:
        content = message.content or ""
        if message.role == "system":
            continue
        if message.role == "tool":
            if len(content) > tool_chars:
                content = content[:tool_chars] + f" [... {len(content) - tool_chars} characters trimmed]"
            parts.append(f"[tool result {message.name or ''}] {content}")
            continue
        if content:
            parts.append(f"[{message.role}] {content}")
        for image in message.images:  # the bytes are not shown: a summary says one was there
            parts.append(f"[{message.role} attached the image {image.path}]")
        for call in message.calls:
            parts.append(f"[{message.role} calls {call.name}] {call.raw or '{}'}")
    text = "\n".join(parts)
    return text if len(text) <= max_chars else "[... earlier part trimmed ...]\n" + text[-max_chars:]


EXISTING_SHOWN = 25  # existing skills named in the authoring prompt (the closest, then the most used)


def propose_skill(
    llm: Completer, skills: SkillManager, transcript: Sequence[ChatMessage],
    cancel: threading.Event | None = None, *, failures: str = "", provenance: Provenance | None = None,
    review: bool = False,
) -> SkillLearned | Notice | None:
    """Ask the model to author or refine a skill from ``transcript``; save it; report what happened.

    ``SkillLearned`` for a new skill or version; a ``Notice`` when the proposal was kept as a
    pending version (the user edited the file) or refused (the guard flagged it); None when there
    was nothing to save. Never raises for a provider failure or a bad answer: they are logged.
    Setting ``cancel`` abandons the request and closes its connection (the user wants the model).
    ``failures``: the calls that failed on the way (``outcome.failures_note``), named to the model
    as pitfalls; ``provenance`` is recorded with what is saved; ``review`` keeps it in the inbox.
    """
    prompt = SKILL_AUTHORING_PROMPT.format(
        existing=_existing(skills, transcript), transcript=render_transcript(transcript),
        failures=FAILED_CALLS_NOTE.format(failed=failures) if failures else "",
    )
    try:
        answer = llm.complete([{"role": "user", "content": prompt}], cancel=cancel)
    except LLMError as exc:
        log.warning("skill proposal skipped: %s", exc.message)
        return None
    try:
        proposal = parse_proposal(answer)
    except ProposalError as exc:
        log.warning("skill proposal unparsable (%s): %s", exc, json.dumps(answer[:500]))
        return None
    if proposal is None:
        return None
    try:
        outcome = skills.propose(proposal.name, proposal.description, proposal.triggers, proposal.body,
                                 provenance=provenance, review=review)
    except (SkillError, OSError) as exc:
        log.warning("skill %s not saved: %s", proposal.name, exc)
        return None
    if outcome.kind in ("created", "refined"):
        return SkillLearned(outcome.name, outcome.version, created=outcome.kind == "created")
    if outcome.kind == "pending" and review:
        return Notice(f"Learned skill {outcome.name}; it waits for your review ({outcome.detail}): "
                      "`hermes-tui inbox list` shows it, `hermes-tui inbox accept N` offers it.")
    if outcome.kind == "pending":
        return Notice(f"Skill {outcome.name} was edited outside Hermes, so the proposed change was kept "
                      "as a pending version (Skills pane: versions).")
    if outcome.kind == "refused":
        log.warning("skill %s not saved: %s", outcome.name, outcome.detail)
        return Notice(f"Did not save skill {outcome.name}: {outcome.detail}")
    return None


def _existing(skills: SkillManager, transcript: Sequence[ChatMessage]) -> str:
    """The skills the curator should know about: those closest to the task, then the most used."""
    request = next((m.content or "" for m in transcript if m.role == "user"), "")
    shown = {s.name: s for s in skills.search(request, limit=EXISTING_SHOWN)}
    for skill in skills.list(limit=EXISTING_SHOWN):
        if len(shown) >= EXISTING_SHOWN:
            break
        shown.setdefault(skill.name, skill)
    return "\n".join(f"- {s.name}: {json.dumps(s.description, ensure_ascii=False)}" for s in shown.values()) or "(none)"


def summarize_session(llm: Completer, transcript: Sequence[ChatMessage], *, timeout: float = 30.0,
                      cancel: threading.Event | None = None) -> str | None:
    """A first-person note for a future self, or None (empty session, provider failure, abandoned).

    At ``timeout``, or when ``cancel`` is set, the request is abandoned and its connection closed.
    """
    if not any(m.role == "user" for m in transcript):
        return None
    prompt = SESSION_SUMMARY_PROMPT.format(transcript=render_transcript(transcript, tool_chars=200))
    try:
        summary = llm.complete([{"role": "user", "content": prompt}], timeout=timeout, cancel=cancel).strip()
    except LLMError as exc:
        log.warning("session summary skipped: %s", exc.message)
        return None
    return summary or None


_TITLE_LINE = re.compile(r"^\W*title\W*:\s*(.+?)\s*$", re.IGNORECASE)
TITLE_CHARS = 80


def split_title(summary: str) -> tuple[str, str | None]:
    """The note and the title the summary ends with (SESSION_SUMMARY_PROMPT); no title line, no title."""
    lines = summary.strip().splitlines()
    for index in range(len(lines) - 1, -1, -1):  # the last "Title:" line, wherever the model put it
        if match := _TITLE_LINE.match(lines[index]):
            title = " ".join(match.group(1).strip("*_\"'` ").split())[:TITLE_CHARS].strip()
            note = "\n".join(lines[:index] + lines[index + 1:]).strip()
            return (note or summary.strip()), (title or None)
    return summary.strip(), None


_MEMORY_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:(USER|PROJECT)|REPLACE\s+([0-9a-f]{6}))\s*:\s*(.+?)\s*$", re.I)
MEMORY_SAID_CHARS = 12_000  # of the user's own words handed to the memory curator
MEMORY_PROPOSALS = 8  # at most, per session


def propose_memories(llm: Completer, transcript: Sequence[ChatMessage], facts: FactStore, *,
                     session_id: int | None = None, timeout: float = 30.0,
                     cancel: threading.Event | None = None, review: bool = False) -> list[Saved]:
    """At session close: keep what the user stated (preferences, corrections, environment facts,
    decisions) as curated facts; near-duplicates only confirm, a REPLACE keeps the old wording in
    the fact's history. Lines not in the strict format are dropped. With ``review``
    (HERMES_LEARN=review) every fact waits for the user's approval in ``facts``, whatever its scope."""
    said = "\n".join(f"- {' '.join(m.content.split())}" for m in transcript
                     if m.role == "user" and m.content)[-MEMORY_SAID_CHARS:]
    if not said:
        return []
    existing = "\n".join(f"- [{f.id}] ({f.scope}) {f.text}" for f in facts.facts()) or "(none)"
    prompt = MEMORY_CURATOR_PROMPT.format(existing=existing, said=said)
    try:
        answer = llm.complete([{"role": "user", "content": prompt}], timeout=timeout, cancel=cancel).strip()
    except LLMError as exc:
        log.warning("memory curator skipped: %s", exc.message)
        return []
    if answer.upper().rstrip(".") == "NONE":
        return []
    saved: list[Saved] = []
    for line in answer.splitlines()[:MEMORY_PROPOSALS]:
        match = _MEMORY_LINE.match(line)
        if not match:
            if line.strip():
                log.info("memory curator: dropped a line not in the format: %r", line[:120])
            continue
        scope, fact_id, text = match.groups()
        try:
            if fact_id:
                saved.append(facts.replace(fact_id.lower(), text, session_id=session_id, by="curator", wait=review))
            else:
                saved.append(facts.save(scope.lower(), text, session_id=session_id, by="curator", wait=review))  # type: ignore[arg-type]  # the pattern lets only USER or PROJECT through
        except FactError as exc:
            log.info("memory curator: not kept (%s): %r", exc, text[:120])
    return saved
