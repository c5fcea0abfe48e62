"""The ``memory`` tool: the model saves, corrects or removes a fact about the user or the project.

A save succeeds only when the fact is on disk (``memory/facts.py``); only then does the result carry
a receipt, which the surfaces show as "remembered: …". A turn whose answer only *says* it will
remember gets no receipt, so the user is never told a fact was kept when it was not.
"""

from __future__ import annotations

from hermes_tui.agent.toolkit import STR, Tool, ToolContext, ToolResult, schema
from hermes_tui.memory.facts import MAX_CHARS, FactError


def memory(ctx: ToolContext, action: str, text: str = "", scope: str = "user", id: str = "") -> ToolResult:
    facts = ctx.facts
    if facts is None:
        return ToolResult(False, "memory: curated memory is not available here")
    try:
        if action == "save":
            saved = facts.save(scope, text, session_id=ctx.session_id, message_id=ctx.message_id)  # type: ignore[arg-type]  # save() refuses a scope that is not one, in one line
        elif action == "replace":
            saved = facts.replace(id, text, session_id=ctx.session_id, message_id=ctx.message_id)
        elif action == "remove":
            gone = facts.remove(id)
            return ToolResult(True, f"removed ({gone.scope}): {gone.text}", receipt=f"forgot ({gone.scope}): {gone.text}")
        else:
            return ToolResult(False, "memory: action must be save, replace or remove")
    except FactError as exc:
        return ToolResult(False, f"memory: not saved: {exc}")
    except OSError as exc:
        return ToolResult(False, f"memory: not saved: the memory file could not be written ({exc.strerror})")
    if saved.action == "pending":  # a user-scope fact reaches every workspace: the user decides
        return ToolResult(True, f"waiting for the user's approval ({saved.fact.scope}, id {saved.fact.id}): "
                                f"{saved.fact.text} — not remembered until they approve it",
                          receipt=saved.receipt)
    return ToolResult(True, f"{saved.action} ({saved.fact.scope}, id {saved.fact.id}): {saved.fact.text}",
                      receipt=saved.receipt)


MEMORY_TOOLS: tuple[Tool, ...] = (
    Tool(
        "memory",
        "Keep a short fact for future sessions: a preference, a correction, an environment fact or a "
        "decision the user stated. scope 'user' (the person, every workspace; kept once the user "
        f"approves it) or 'project' (this workspace). One fact per call, at most {MAX_CHARS} characters; "
        "never secrets. Use replace "
        "with the fact's id when the user corrects it, remove when it no longer holds. Say you will "
        "remember something only after this tool succeeded.",
        schema({"action": STR | {"enum": ["save", "replace", "remove"]},
                "text": STR | {"description": "the fact, in one sentence (save, replace)"},
                "scope": STR | {"enum": ["user", "project"]},
                "id": STR | {"description": "the fact's id from the memory section (replace, remove)"}},
               ["action"]),
        memory, summary_arg="text", keeps=True,
    ),
)
