"""What /copy, /export, /cost and /jobs compute: plain functions over stored messages and the
session's jobs (no Textual)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hermes_tui.conversation import ChatMessage, Status
from hermes_tui.memory.usage import ModelUsage, totals
from hermes_tui.textsafe import printable

if TYPE_CHECKING:
    from hermes_tui.agent.jobs import Job

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
ROLE_TITLES = {"user": "You", "assistant": "Hermes"}
# Terminals known to accept OSC 52 from applications. tmux does only with `set-clipboard on`
# (its default, "external", drops it) and macOS Terminal never does: there the file is the copy.
OSC52_PROGRAMS = {"iTerm.app", "WezTerm", "vscode", "ghostty", "kitty", "Alacritty", "foot", "rio", "Tabby"}


def last_answer(messages: list[ChatMessage]) -> str | None:
    """The newest assistant text of the conversation."""
    for message in reversed(messages):
        if message.role == "assistant" and message.content and message.content.strip():
            return message.content
    return None


def code_blocks(markdown: str) -> list[str]:
    """The bodies of the fenced code blocks, in order."""
    return [match.group("body").rstrip("\n") for match in _FENCE.finditer(markdown)]


def osc52_likely(env: Mapping[str, str]) -> bool:
    """Whether the terminal probably puts OSC 52 text on the clipboard."""
    if env.get("TMUX"):
        return False
    term = env.get("TERM", "")
    return env.get("TERM_PROGRAM", "") in OSC52_PROGRAMS or any(t in term for t in ("kitty", "alacritty", "foot"))


def _fence_for(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _fenced(text: str, info: str = "") -> str:
    fence = _fence_for(text)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _status_mark(message: ChatMessage) -> str | None:
    """How an export's heading says a step did not succeed."""
    if message.status is Status.OK:
        return None
    if message.status is Status.UNDONE:
        return "undone, not sent to the model"
    if message.role == "user" and message.status is Status.FAILED:
        return "failed before an answer"
    return message.status.value


def _demoted(markdown: str, levels: int = 2) -> str:
    """The message's own headings moved down ``levels`` (at most to ######), so a "## Plan" in an
    answer reads as part of it, under the export's "## Hermes"; code blocks are left as they are."""
    from markdown_it import MarkdownIt

    lines = markdown.splitlines()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "heading_open" and token.markup.startswith("#") and token.map:
            line = lines[token.map[0]].lstrip(" ")
            if line.startswith(token.markup):  # not one inside a quote or a list item
                lines[token.map[0]] = "#" * min(6, len(token.markup) + levels) + line[len(token.markup):]
    return "\n".join(lines)


def export_markdown(session_id: int, title: str, messages: list[ChatMessage]) -> str:
    """A session as Markdown: each message under its author and time; tool calls and results fenced.
    Messages taken back by /undo or /retry, and steps cancelled, denied or failed, say so in their heading."""
    out = [f"# Hermes session {session_id}: {title or 'untitled'}", ""]
    for message in messages:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(message.created))
        mark = _status_mark(message)
        suffix = f" ({mark})" if mark else ""
        if message.role in ROLE_TITLES:
            out += [f"## {ROLE_TITLES[message.role]} · {stamp}{suffix}", ""]
            if message.content:
                out += [_demoted(message.content.rstrip()), ""]
            for call in message.calls:
                out += [f"**Tool call** `{call.name}`", "", _fenced(call.raw, "json"), ""]
        elif message.role == "tool":
            out += [f"**Result** of `{message.name or 'tool'}`{suffix}", "", _fenced(message.content or ""), ""]
    return "\n".join(out).rstrip() + "\n"


def _money(cost: float | None) -> str:
    return "—" if cost is None else f"${cost:.4f}"


def cost_markdown(rows: list[ModelUsage], window: str | None = None) -> str:
    """The /cost card: one row per model, then the total; ``window`` says what the context window is."""
    if not rows:
        return "No model calls in this session yet." + (f"\n\n{window}" if window else "")
    lines = ["| model | calls | in | out | cached | cost |", "|---|--:|--:|--:|--:|--:|"]
    for row in [*rows, totals(rows)] if len(rows) > 1 else rows:
        name = "**total**" if row.model == "all" else f"`{row.model}`"
        mark = "~" if row.estimated else ""
        lines.append(f"| {name} | {row.calls:,} | {mark}{row.prompt_tokens:,} | {mark}{row.completion_tokens:,} | "
                     f"{row.cached_tokens:,} | {_money(row.cost_usd)} |")
    lines += ["", "Cost — means the model has no price in litellm's table."]
    if any(row.estimated for row in rows):
        lines += ["", "~ marks estimates: the server sent no token counts, so Hermes counted them "
                      "(tool schemas included) with litellm's tokenizer for the model."]
    if window:
        lines += ["", window]
    return "\n".join(lines)


def window_line(tokens: int, source: str, assumed: bool) -> str:
    """What /cost says of the context window."""
    if assumed:
        return (f"Context window: {tokens:,} tokens, assumed (the server does not say): set HERMES_CONTEXT_TOKENS "
                "to the window your server was started with.")
    return f"Context window: {tokens:,} tokens, from {source}."


def jobs_markdown(jobs: list[Job]) -> str:
    """/jobs: one line per job of the session, the running ones first."""
    lines = ["**Background jobs** (`/jobs N` shows one's latest output, `/jobs stop N` stops it)", ""]
    for job in sorted(jobs, key=lambda j: (not j.running, j.number)):
        lines.append(f"- {job.number} · {job.state()} · {_inline(job.command)}")
    return "\n".join(lines)


def hooks_markdown(lines: list[str]) -> str:
    """/hooks: what ``hermes-tui hooks list`` prints (the settings files' words, never raw)."""
    return ("**Hooks** (`hermes-tui hooks approve` allows a project's; see docs/hooks.md)\n\n"
            + _fenced(printable("\n".join(lines))))


def job_markdown(job: Job, recent: str) -> str:
    """/jobs N: the job and its latest output (the model's reading of it is not affected)."""
    head = f"**Job {job.number}** · {job.state()} · {_inline(job.command)}"
    return f"{head}\n\n{_fenced(printable(recent))}" if recent else f"{head}\n\nNo output yet."


def _inline(text: str) -> str:
    """A command as inline code on one line, whatever backticks it holds."""
    one_line = " ".join(printable(text).split())
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", one_line)), default=0) + 1)
    return f"{ticks} {one_line} {ticks}"
