"""``/mcp``: every declared MCP server with its status, tool count and schema tokens; the selected
one can be enabled or disabled, approved (a workspace server, after seeing what it runs) or
restarted. The list is read again twice a second, so a server that starts or fails shows it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.agent.mcp import report
from hermes_tui.agent.mcp.manager import McpManager, ServerStatus
from hermes_tui.textsafe import printable
from hermes_tui.tui import actions

REFRESH = 0.5  # seconds between readings of the servers' statuses


class McpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    McpScreen {
        align: center middle;
    }
    McpScreen > #mcp-dialog {
        width: 96;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $accent 60%;
        background: $surface;
    }
    McpScreen #mcp-servers {
        height: auto;
        max-height: 20;
    }
    McpScreen #mcp-detail {
        margin-top: 1;
        color: $text-muted;
    }
    """

    BINDINGS = actions.bindings("mcp")

    def __init__(self, manager: McpManager) -> None:
        super().__init__()
        self.manager = manager
        self._shown: list[ServerStatus] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-dialog"):
            yield Static("MCP servers", id="mcp-title")
            yield OptionList(id="mcp-servers", markup=False)
            yield Static("", id="mcp-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_servers()
        self.set_interval(REFRESH, self.refresh_servers)
        self.query_one(OptionList).focus()

    @property
    def selected(self) -> ServerStatus | None:
        index = self.query_one(OptionList).highlighted
        return self._shown[index] if index is not None and index < len(self._shown) else None

    def refresh_servers(self) -> None:
        statuses = self.manager.statuses()
        listing = self.query_one(OptionList)
        if statuses != self._shown:
            index = listing.highlighted
            self._shown = statuses
            listing.clear_options()
            listing.add_options([Option(Content(printable(report.summary(s))), id=s.name) for s in statuses])
            if statuses:
                listing.highlighted = min(index or 0, len(statuses) - 1)
        self._show_detail()

    def _show_detail(self) -> None:
        status = self.selected
        if status is None:
            home = self.manager.home / "mcp.json"
            problems = "\n".join(self.manager.problems)
            text = f"No MCP servers declared: add them to {home} or the workspace's .mcp.json.\n{problems}"
        else:
            text = report.entry(status.spec)
        self.query_one("#mcp-detail", Static).update(Content(printable(text.strip())))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_detail()

    def action_toggle(self) -> None:
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

    def action_close(self) -> None:
        self.dismiss(None)
