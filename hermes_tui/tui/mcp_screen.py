"""``/mcp``: every declared MCP server with its status, tool count and schema tokens; the selected
one can be enabled or disabled, approved (a workspace server, after seeing what it runs) or
restarted. The list is read again twice a second, so a server that starts or fails shows it.
"""

from __future__ import annotations

from hermes_tui.agent.mcp import report
from hermes_tui.agent.mcp.manager import McpManager, ServerStatus
from hermes_tui.textsafe import printable
from hermes_tui.tui import actions
from hermes_tui.tui.list_dialog import ListDialog

REFRESH = 0.5  # seconds between readings of the servers' statuses


class McpScreen(ListDialog):
    HEADING = "MCP servers"
    NOTES = ("mcp-detail",)
    BINDINGS = actions.bindings("mcp")

    def __init__(self, manager: McpManager) -> None:
        super().__init__()
        self.manager = manager
        self._shown: list[ServerStatus] = []

    def on_mount(self) -> None:  # ListDialog's own on_mount focuses the list after this
        self.refresh_servers()
        self.set_interval(REFRESH, self.refresh_servers)

    @property
    def selected(self) -> ServerStatus | None:
        index = self.highlighted
        return self._shown[index] if index is not None and index < len(self._shown) else None

    def refresh_servers(self) -> None:
        statuses = self.manager.statuses()
        if statuses != self._shown:
            self._shown = statuses
            self.show_options([report.summary(s) for s in statuses], [s.name for s in statuses])
        self._show_detail()

    def _show_detail(self) -> None:
        status = self.selected
        if status is None:
            home = self.manager.home / "mcp.json"
            problems = "\n".join(self.manager.problems)
            text = f"No MCP servers declared: add them to {home} or the workspace's .mcp.json.\n{problems}"
        else:
            text = report.entry(status.spec)
        self.note("mcp-detail", text.strip())

    def on_option_list_option_highlighted(self) -> None:
        self._show_detail()

    def action_toggle_server(self) -> None:
        status = self.selected
        if status is not None:
            self.manager.set_enabled(status.name, status.state == "disabled")
            self.refresh_servers()

    def action_approve(self) -> None:
        status = self.selected
        if status is None or status.state != "unapproved":
            self.notify("Only a workspace server that needs approval can be approved.", markup=False)
            return
        from hermes_tui.tui.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self.manager.approve(status.name)
                self.refresh_servers()

        question = f"Approve this server of the workspace's .mcp.json? {report.entry(status.spec)} " \
                   "It runs with your rights, outside the shell sandbox."
        self.app.push_screen(ConfirmScreen(printable(question), confirm_label="Approve"), answered)

    def action_reconnect(self) -> None:
        status = self.selected
        if status is not None:
            self.manager.reconnect(status.name)
            self.refresh_servers()
