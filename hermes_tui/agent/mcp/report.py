"""The words about MCP servers that ``/mcp`` and ``hermes-tui mcp`` show (one place for both)."""

from __future__ import annotations

from hermes_tui.agent.mcp.config import ServerSpec
from hermes_tui.agent.mcp.manager import ServerStatus

STATE_WORDS = {
    "starting": "starting…",
    "ready": "ready",
    "failed": "failed",
    "disabled": "disabled",
    "unapproved": "needs approval",
}


def summary(status: ServerStatus) -> str:
    """``github: ready · http · 12 tools · ≈3,100 tokens · asks first``"""
    spec = status.spec
    parts = [STATE_WORDS[status.state], spec.transport]
    if status.tools:
        parts += [f"{len(status.tools)} tool{'s' if len(status.tools) != 1 else ''}", f"≈{status.tokens:,} tokens"]
    parts.append("trusted: runs without asking" if spec.trust else "asks first")
    if spec.origin == "workspace":
        parts.append("from .mcp.json")
    line = f"{status.name}: {' · '.join(parts)}"
    return f"{line}\n    {status.detail}" if status.detail else line


def entry(spec: ServerSpec) -> str:
    """What approving a workspace server allows: what it runs (or where it connects) and which
    of the user's variables it receives."""
    where = f"connects to {spec.url}" if spec.transport == "http" else f"runs `{spec.target}` in the workspace"
    variables = ", ".join(f"${{{name}}}" for name in spec.references)
    given = f"; it receives {variables}" if variables else ""
    trust = "; its tools run without asking (trust: true)" if spec.trust else "; each tool call asks first"
    return f"{spec.name} {where}{given}{trust}."
