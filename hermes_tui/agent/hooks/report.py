"""Hooks as ``hermes-tui hooks list`` and ``/hooks`` show them: each settings file, where it is,
whether its hooks run, and each hook's event, matcher, timeout and command."""

from __future__ import annotations

from hermes_tui.agent.hooks.config import Declared, SettingsFile


def state(file: SettingsFile) -> str:
    if not file.project:
        return "yours: runs"
    if file.approved:
        return "approved: runs"
    if not file.hooks:
        return "no hooks"
    return "changed since you approved it: waits" if file.changed else "not approved: waits"


def file_lines(file: SettingsFile) -> list[str]:
    lines = [f"{file.label} ({file.path}): {len(file.hooks)} hook(s), {state(file)}"]
    for hook in file.hooks:
        matcher = f" [{hook.matcher}]" if hook.matcher else ""
        lines.append(f"  {hook.event}{matcher} {hook.timeout:g} s: {hook.command}")
    lines += [f"  problem: {line}" for line in file.problems]
    lines += [f"  ignored: {line}" for line in file.ignored]
    return lines


def lines(found: Declared) -> list[str]:
    """Every file's lines; a closing line says how to approve the ones that wait."""
    if not found.files:
        return ["No hooks: declare them in HERMES_HOME/settings.json, or the workspace's "
                ".hermes/settings.json or .claude/settings.json (Claude Code's format)."]
    out = [line for file in found.files for line in file_lines(file)]
    if found.waiting:
        out.append("Project hooks run outside the shell sandbox with your rights: read them, then "
                   "'hermes-tui hooks approve' allows them.")
    return out
