"""The hook events Hermes runs, declared once: what fires them, what a matcher is tested against,
and what the hook's exit code 2 and stdout do (Claude Code's meaning, so its hooks work unchanged).

Adding an event is one entry here plus the one call in the core that fires it (``Hooks.fire``);
docs/hooks.md's table is generated from this table (``docs_tables.hook_events``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HookEvent:
    """One hook event as Claude Code names it: what fires it, what its matcher reads, what a
    block does (the docs table is generated from these)."""

    name: str
    when: str  # what fires it, for the docs
    matched: str  # the input field ``matcher`` is tested against ("" when the event has no matcher)
    blocks: str  # what exit code 2 (or ``"decision": "block"``) does
    context: bool = False  # stdout on exit 0 (or ``additionalContext``) is added to the model's context


SESSION_START = "SessionStart"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
PRE_TOOL_USE = "PreToolUse"
POST_TOOL_USE = "PostToolUse"
STOP = "Stop"
PRE_COMPACT = "PreCompact"
SESSION_END = "SessionEnd"

STOP_LIMIT = 3  # Stop hooks may send the model back this many times a turn: a hook that always blocks cannot loop

EVENTS: tuple[HookEvent, ...] = (
    HookEvent(SESSION_START, "a session's first turn, before its prompt is sent (source: startup or resume)",
              "source", "nothing; stderr is shown to the user", context=True),
    HookEvent(USER_PROMPT_SUBMIT, "the user sent a prompt, before the model sees it", "",
              "the prompt is not sent; the user sees stderr and gets the prompt back to edit", context=True),
    HookEvent(PRE_TOOL_USE, "the model asked for a tool call, before approval and before it runs", "tool_name",
              "the call does not run; stderr is the call's result for the model"),
    HookEvent(POST_TOOL_USE, "a tool call ran (not one denied or cancelled), with its result", "tool_name",
              "stderr is added to the call's result for the model"),
    HookEvent(STOP, "the model answered without a tool call (the turn would end)", "",
              "the model is asked to go on, with stderr as the reason (at most "
              f"{STOP_LIMIT} times a turn)"),
    HookEvent(PRE_COMPACT, "before the conversation is compacted (trigger: manual or auto)", "trigger",
              "nothing; stderr is shown to the user"),
    HookEvent(SESSION_END, "the session ends (its summary is written)", "reason",
              "nothing (the session is over)"),
)
BY_NAME = {event.name: event for event in EVENTS}
SUBAGENT_EVENTS = frozenset({PRE_TOOL_USE, POST_TOOL_USE})
"""What a sub-agent's (``delegate``) hooks fire for, as Claude Code's Task's: its task is no prompt of
the user's and its end not the turn's (a Stop hook would send every sub-agent back "to run the tests")."""

CLAUDE_TOOL_NAMES = {
    "run_bash": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit", "glob": "Glob",
    "grep": "Grep", "web_fetch": "WebFetch", "list_dir": "LS", "delegate": "Task",
}
"""Hermes' tools under the names Claude Code gives its own: a matcher may use either
(MCP tools are ``mcp__<server>__<tool>`` in both)."""
