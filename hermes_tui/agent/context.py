"""What is *sent* of a conversation: always within the model's context window, always sendable.

Memory stores every message verbatim; the model gets a view of them. Before each call the view
is counted (litellm's tokenizer for the model) against the model's input window. At
``Config.compact_at`` of it (or when the provider says the request is too long), the view is
compacted:

* older messages are replaced by a structured summary the model writes (``COMPACTION_PROMPT``:
  goals and constraints, facts to remember, tasks done/open, files, decisions, errors). The
  summary is kept only when it has every section and is smaller than what it replaces; else the
  turns stay and only old tool results are trimmed (a small model easily writes a made-up
  dialogue, or more text than it was given);
* the most recent messages stay verbatim; tool results before the current turn are sent
  trimmed to their head and tail, with a note;
* the cut always falls between steps, so a tool call and its result are never separated.

The view is then ``repair``-ed, so whatever is stored, both wire formats accept what is sent.
A compaction is identified by stored message ids, so a resumed session sends the same view.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from hermes_tui.agent.attachments import IMAGE_TOKENS
from hermes_tui.agent.history import repair
from hermes_tui.agent.prompts import (
    COMPACTED_VIEW_HEADER,
    COMPACTION_FOCUS,
    COMPACTION_PROMPT,
    COMPACTION_SECTIONS,
)
from hermes_tui.config import Config
from hermes_tui.conversation import ChatMessage
from hermes_tui.llm import LLMClient
from hermes_tui.llm_errors import LLMError
from hermes_tui.windows import SERVER, Window, window_of

log = logging.getLogger(__name__)

KEEP_SHARE = 0.4
"""After an automatic compaction, the verbatim recent messages aim at this share of the window."""
SUMMARY_RESERVE = 2_000
"""Tokens set aside for the summary itself when choosing what stays verbatim."""
TRIM_HEAD, TRIM_TAIL = 2_000, 600
"""Characters kept of an old tool result (its start says what it is, its end how it finished)."""
SUMMARY_TOOL_CHARS = 800
"""Characters of each tool result the summarizer sees."""
SUMMARY_TIMEOUT = 120.0
SUMMARY_PROMPT_TOKENS, SUMMARY_ANSWER_TOKENS = 600, 700
"""Tokens of the compaction prompt without its transcript, and set aside for the summary written."""
CHARS_PER_TOKEN, MIN_TRANSCRIPT_CHARS = 3, 1_500
"""A cautious characters-per-token ratio, and the least of a transcript worth summarizing."""
LEARNED_SHARE = 0.9
"""After a "too long" refusal the window is taken to be at most this share of what was sent."""
NEAR_WINDOW = 0.5
"""An empty answer (HTTP 200, no data) to a request over this share of the window is taken for a
context overflow: llama.cpp refuses a prompt longer than its window that way, and Hermes' counts
are estimates (a local model's tokenizer may count a fifth more)."""


@dataclass
class Compacted:
    """What one compaction did, in tokens of the request (system prompt and tools included)."""

    before: int
    after: int
    summarized: int  # messages newly folded into the summary
    fallback: bool  # the model's summary was not used: turns kept and trimmed, or a mechanical one
    note: str = ""  # why, for the user (empty when the model's summary was kept)


@dataclass
class ContextWindow:
    """The compaction state of one conversation, and the arithmetic around the window.

    ``history`` arguments are the loop's messages as stored (typed, append-only; compactions
    refer to their store ids); this object never changes it, and makes the dicts that are sent.
    """

    llm: LLMClient
    config: Config
    summary: str | None = None
    start: int = 0  # index of the first message sent verbatim
    trim_before: int = 0  # tool results at indexes below this are sent trimmed
    learned_limit: int | None = None  # what a provider's "too long" refusal taught
    _counts: dict[tuple[int, bool], tuple[ChatMessage, int]] = field(default_factory=dict, repr=False)
    _summary_count: tuple[str | None, int] = field(default=(None, 0), repr=False)
    _known: Window | None = field(default=None, repr=False)  # the window before anything was learned

    # -- the window

    def limit(self) -> int:
        """The input window in tokens (``hermes_tui.windows``: a local server's own answer, litellm's
        model table, HERMES_CONTEXT_TOKENS, else the provider's assumed fallback), or less when a
        "too long" refusal taught so."""
        known = self.window().tokens
        return min(known, self.learned_limit) if self.learned_limit else known

    def window(self) -> Window:
        """The window before anything was learned, and where it comes from (asked once)."""
        if self._known is None:
            table = None if self.config.provider_info.window_probe else self.llm.max_input_tokens()
            self._known = window_of(self.config, table)
        return self._known

    @property
    def assumed(self) -> bool:
        """No one said what the window is: the number is the provider table's conservative guess."""
        return self.learned_limit is None and self.window().assumed

    def threshold(self) -> int:
        return int(self.limit() * self.config.compact_at)

    def learn(self, error: LLMError, sent_tokens: int) -> None:
        """A provider refused a request as too long: believe it from now on."""
        candidates = [self.limit(), int(sent_tokens * LEARNED_SHARE)]
        if error.max_tokens:
            candidates.append(error.max_tokens)
        self.learned_limit = max(min(c for c in candidates if c > 0), 1_000)
        log.info("context window taken to be %d tokens after a 'too long' refusal", self.learned_limit)

    def overflowed(self, error: LLMError, sent_tokens: int) -> bool:
        """Whether ``error`` says the request did not fit: a "too long" refusal, or an empty answer to a
        request near the window (what a local server does with a prompt over its window)."""
        return error.too_long or (error.empty and sent_tokens >= NEAR_WINDOW * self.limit())

    def explain(self, error: LLMError, sent_tokens: int) -> str:
        """The error's message, with what the window was taken to be when an empty answer may mean it is wrong."""
        if not error.empty:
            return error.message
        if self.learned_limit is None and self.window().source == SERVER:
            return f"{error.message.rstrip('.')}. This request was ~{sent_tokens:,} tokens of its {self.limit():,}."
        return (f"{error.message.rstrip('.')}. This request was ~{sent_tokens:,} tokens against a window taken to be "
                f"{self.limit():,}; if the server's window is smaller, set HERMES_CONTEXT_TOKENS to it.")

    def reset_model(self, llm: LLMClient, config: Config) -> None:
        """Another model: another window (what was learned about the old one no longer holds)."""
        self.llm, self.config, self.learned_limit, self._known = llm, config, None, None
        self._counts.clear()  # another tokenizer

    # -- what is sent

    def view(self, history: list[ChatMessage]) -> list[dict[str, Any]]:
        """The messages to send (without the system prompt): summary, then the verbatim rest."""
        part = [self._sent_form(history, i) for i in range(self.start, len(history))]
        if self.summary:
            part.insert(0, {"role": "user", "content": COMPACTED_VIEW_HEADER + self.summary})
        return repair(part)

    def tokens(self, history: list[ChatMessage], fixed: int) -> int:
        """Tokens of the view plus ``fixed`` (the system prompt and the tool schemas)."""
        return fixed + self._summary_tokens() + self._suffix_tokens(history, self.trim_before)[self.start]

    def count(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        return self.llm.count_tokens(messages, tools)

    # -- compaction

    def compact(self, history: list[ChatMessage], fixed: int, *, focus: str | None = None,
                manual: bool = False) -> Compacted | None:
        """Fold older messages into the summary and trim old tool results; None if nothing to do."""
        before = self.tokens(history, fixed)
        n = len(history)
        if self.start >= n:
            return None
        last_user = max((i for i in range(self.start, n) if history[i].role == "user"), default=self.start)
        steps = [i for i in range(self.start, n) if history[i].role != "tool"]
        budget = self.limit() * KEEP_SHARE - fixed - SUMMARY_RESERVE
        trim_before = last_user
        suffix = self._suffix_tokens(history, trim_before)
        if manual:  # the user asked for room: everything before the last turn is folded
            start = last_user
        else:
            start = next((i for i in steps if i <= last_user and suffix[i] <= budget), last_user)
        if suffix[start] > budget:  # the current turn alone is too big: trim its earlier steps too
            trim_before = max(i for i in steps if i >= last_user)
            if self._suffix_tokens(history, trim_before)[start] > budget:
                trim_before = n  # even the latest results: their head and tail must do
        if start == self.start and trim_before <= self.trim_before:
            return None
        folded = history[self.start:start]
        fallback, note = False, ""
        if folded:
            summary, problem = self._summarize(folded, focus)
            if problem is None:
                problem = self._worse(history, start, summary)
            if problem is None:
                self.summary = summary
            else:
                fallback = True
                log.warning("compaction summary not kept: %s", problem)
                kept = self._trim_only(history, fixed, last_user, before)
                if kept is not None:
                    return Compacted(before, kept, 0, True, f"{problem}; the turns were kept and old tool "
                                                            "results trimmed instead")
                self.summary = _mechanical_summary(self.summary, folded)
                note = f"{problem}; your messages were kept in a plain list instead"
        self.start, self.trim_before = start, max(trim_before, self.trim_before)
        return Compacted(before, self.tokens(history, fixed), len(folded), fallback, note)

    def _worse(self, history: list[ChatMessage], start: int, summary: str) -> str | None:
        """Why the model's ``summary`` must not replace ``history[self.start:start]``, or None."""
        missing = [name for name in COMPACTION_SECTIONS
                   if not re.search(rf"^#+\s*{re.escape(name)}\s*$", summary, re.I | re.M)]
        if missing:
            return f"the model's summary lacks the section(s) {', '.join(missing)}"
        replaced = self._summary_tokens() + sum(self._count_message(history[i], i < self.trim_before
                                                                    and history[i].role == "tool")
                                                for i in range(self.start, start))
        size = self.llm.count_tokens([{"role": "user", "content": COMPACTED_VIEW_HEADER + summary}])
        if size >= replaced:
            return f"the model's summary ({size:,} tokens) was not smaller than what it replaced ({replaced:,})"
        return None

    def _trim_only(self, history: list[ChatMessage], fixed: int, last_user: int, before: int) -> int | None:
        """Keep every turn, trim the tool results before the current turn: the tokens then, or None
        when that saves nothing or does not bring the request under the threshold."""
        if last_user <= self.trim_before:
            return None
        tokens = fixed + self._summary_tokens() + self._suffix_tokens(history, last_user)[self.start]
        if tokens >= min(before, self.threshold()):
            return None
        self.trim_before = last_user
        return tokens

    def checkpoint(self, history: list[ChatMessage]) -> tuple[int, int | None] | None:
        """Store ids that identify this state: (last summarized id, last trimmed id), or None."""
        through = _id_before(history, self.start)
        if through is None or not self.summary:
            return None
        return through, _id_before(history, self.trim_before)

    def restore(self, history: list[ChatMessage], summary: str, through_id: int,
                trim_through_id: int | None) -> None:
        """Take up a stored compaction: what a resumed session sends is what was sent before."""
        self.summary = summary
        self.start = _index_after(history, through_id)
        self.trim_before = 0 if trim_through_id is None else _index_after(history, trim_through_id)

    # -- internals

    def _sent_form(self, history: list[ChatMessage], index: int) -> dict[str, Any]:
        message = history[index]
        return _wire(message, trim=index < self.trim_before and message.role == "tool")

    def _count_message(self, message: ChatMessage, trim: bool) -> int:
        key = (id(message), trim)
        cached = self._counts.get(key)
        if cached is not None and cached[0] is message:
            return cached[1]
        value = self.llm.count_tokens([_counted(message, trim)]) + IMAGE_TOKENS * len(message.images)
        self._counts[key] = (message, value)
        return value

    def _count_messages(self, wanted: list[tuple[ChatMessage, bool]]) -> None:
        """Count the messages of ``wanted`` not counted yet, all in one call (a helper process
        answers them in one round trip, not one each)."""
        missing: dict[tuple[int, bool], tuple[ChatMessage, bool]] = {}
        for message, trim in wanted:
            cached = self._counts.get((id(message), trim))
            if cached is None or cached[0] is not message:
                missing[(id(message), trim)] = (message, trim)
        counts = self.llm.count_many([[_counted(message, trim)] for message, trim in missing.values()])
        for key, (message, _trim), value in zip(missing, missing.values(), counts, strict=True):
            self._counts[key] = (message, value + IMAGE_TOKENS * len(message.images))

    def _suffix_tokens(self, history: list[ChatMessage], trim_before: int) -> list[int]:
        """``suffix[i]``: tokens of ``history[i:]`` as sent with tool results below ``trim_before`` trimmed."""
        self._count_messages([(history[i], i < trim_before and history[i].role == "tool")
                              for i in range(self.start, len(history))])
        suffix = [0] * (len(history) + 1)
        for i in range(len(history) - 1, self.start - 1, -1):
            message = history[i]
            trim = i < trim_before and message.role == "tool"
            suffix[i] = suffix[i + 1] + self._count_message(message, trim)
        return suffix

    def _summary_tokens(self) -> int:
        if not self.summary:
            return 0
        if self._summary_count[0] != self.summary:
            message = {"role": "user", "content": COMPACTED_VIEW_HEADER + self.summary}
            self._summary_count = (self.summary, self.llm.count_tokens([message]))
        return self._summary_count[1]

    def _summarize(self, folded: list[ChatMessage], focus: str | None) -> tuple[str, str | None]:
        """The model's summary of the previous summary plus ``folded``, or why there is none."""
        from hermes_tui.learning.curator import render_transcript  # compaction is rare: loaded when it runs

        prompt = COMPACTION_PROMPT.format(
            focus=COMPACTION_FOCUS.format(focus=focus.strip()) if focus and focus.strip() else "",
            previous=self.summary or "(none: this is the first compaction)",
            transcript=render_transcript(folded, tool_chars=SUMMARY_TOOL_CHARS,
                                         max_chars=self._transcript_chars()) or "(no new messages)",
        )
        try:
            text = self.llm.complete([{"role": "user", "content": prompt}], timeout=SUMMARY_TIMEOUT).strip()
        except LLMError as exc:
            log.warning("compaction summary failed: %s", exc.message)
            return "", "the model could not write the summary"
        return text, None if text else "the model's summary was empty"


    def _transcript_chars(self) -> int:
        """What of the transcript the summarizer is shown: its request must fit the window too
        (a local model's 2,048 tokens hold a few thousand characters, not 40,000)."""
        from hermes_tui.learning.curator import TRANSCRIPT_CHARS

        room = self.limit() - SUMMARY_PROMPT_TOKENS - SUMMARY_ANSWER_TOKENS - self._summary_tokens()
        return max(MIN_TRANSCRIPT_CHARS, min(TRANSCRIPT_CHARS, room * CHARS_PER_TOKEN))


def trimmed(content: str) -> str:
    """An old tool result cut to its head and tail, with a note saying so."""
    if len(content) <= TRIM_HEAD + TRIM_TAIL + 200:
        return content
    cut = len(content) - TRIM_HEAD - TRIM_TAIL
    return (f"{content[:TRIM_HEAD]}\n\n[... {cut} characters of this old tool result were trimmed to save "
            f"context; run the tool again if you need them ...]\n\n{content[-TRIM_TAIL:]}")


def _mechanical_summary(previous: str | None, folded: list[ChatMessage]) -> str:
    """What stands in for the summary when the model cannot write one: nothing the user said is lost."""
    lines = [previous or "", "## Earlier requests (the summary could not be written; the user's messages follow)"]
    for message in folded:
        if message.role == "user" and message.content:
            text = " ".join(message.content.split())
            lines.append(f"- {text[:600]}")
    return "\n".join(line for line in lines if line)


def _wire(message: ChatMessage, trim: bool) -> dict[str, Any]:
    """``message`` as sent (before ``repair``), an old tool result trimmed."""
    sent = message.to_llm()
    if trim:
        sent["content"] = trimmed(message.content or "")
    return sent


def _counted(message: ChatMessage, trim: bool) -> dict[str, Any]:
    """What the tokenizer is given of ``message``: its text (its images are ``IMAGE_TOKENS`` each)."""
    sent = _wire(message, trim)
    sent.pop("_images", None)
    return sent


def _id_before(history: list[ChatMessage], index: int) -> int | None:
    """The store id of the last message before ``index``."""
    return history[index - 1].id if index > 0 else None


def _index_after(history: list[ChatMessage], message_id: int) -> int:
    """How many leading messages belong up to ``message_id``."""
    return next((i for i, message in enumerate(history) if message.id > message_id), len(history))
