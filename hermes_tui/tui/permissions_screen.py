"""``/permissions``: every "allow" rule in force, this session's and this workspace's lasting ones,
each revocable with one key (``x``). Revoking only makes Hermes ask again, so it asks nothing first.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_tui.agent.permissions import Rule
from hermes_tui.tui import actions
from hermes_tui.tui.approval import ApprovalBridge
from hermes_tui.tui.format import short_path
from hermes_tui.tui.list_dialog import ListDialog


@dataclass(frozen=True)
class Entry:
    """One rule as listed: ``where`` is "session" or "always here"; ``rule`` is what revoking removes."""

    where: str
    text: str
    rule: str | tuple[str, str] | Rule  # a tool allowed for the session; a (tool, call) pair; a lasting rule


def entries(bridge: ApprovalBridge) -> list[Entry]:
    """The rules in force, session ones first, each group in a stable order."""
    from hermes_tui.agent.tools import approval_spec

    policy = bridge.policy
    found = [Entry("session", f"every {name} call", name) for name in sorted(policy.allowed)]
    found += [Entry("session", f"{approval_spec(tool).noun or tool}: {key}", (tool, key))
              for tool, key in sorted(policy.allowed_calls)]
    if bridge.lasting is not None:
        found += [Entry("always here", rule.label, rule) for rule in bridge.lasting.rules()]
    return found


class PermissionsScreen(ListDialog):
    DEFAULT_CSS = """
    PermissionsScreen #permissions-warning {
        color: $text-warning;
    }
    """

    HEADING = "Permissions: what runs without asking"
    NOTES = ("permissions-warning", "permissions-detail")
    BINDINGS = actions.bindings("permissions")

    def __init__(self, bridge: ApprovalBridge) -> None:
        super().__init__()
        self.bridge = bridge
        self._shown: list[Entry] = []

    def on_mount(self) -> None:  # ListDialog's own on_mount focuses the list after this
        self.refresh_rules()

    def refresh_rules(self) -> None:
        self._shown = entries(self.bridge)
        self.show_options([f"{e.where:<12} {e.text}" for e in self._shown])
        lasting = self.bridge.lasting
        warning = lasting.warning() if lasting is not None else None
        self.note("permissions-warning", warning or "")
        self.query_one("#permissions-warning").display = bool(warning)
        kept = f"Lasting rules are kept in {short_path(lasting.path)}, never in the workspace. " if lasting else ""
        self.note("permissions-detail",
                  ("No rules: every shell command, write and MCP call asks first. " if not self._shown else
                   "x revokes the selected rule (Hermes asks again next time). ")
                  + kept + "The approval dialog adds them: c and a for the session, w and p always here.")

    def action_revoke(self) -> None:
        index = self.highlighted
        if index is None or index >= len(self._shown):
            return
        rule = self._shown[index].rule
        if isinstance(rule, (str, tuple)):
            self.bridge.policy.forget(rule)
        elif self.bridge.lasting is not None:
            try:
                self.bridge.lasting.revoke(rule)
            except OSError as exc:
                self.notify(f"Could not revoke it: {exc}", severity="error", markup=False)
        self.refresh_rules()
