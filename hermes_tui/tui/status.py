"""The header (provider:model, workspace, session) and the status line (mode, activity, tokens, cost)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from hermes_tui.clock import Clock
from hermes_tui.config import Config
from hermes_tui.tui.format import elapsed, short_path, spinner_frame, usage_text


class HeaderBar(Static):
    """One line: what Hermes talks to, where it works, which session it writes to."""

    def show(self, config: Config, session_id: int | None) -> None:
        session = f"session {session_id}" if session_id is not None else "new session"
        key = "" if config.has_api_key else "  · no API key"
        self.update(Content.assemble(
            ("Hermes", "bold $accent"), "  ",
            (f"{config.provider}:{config.model}", "bold"), "  ",
            (short_path(config.workspace), "$text-muted"), "  ",
            (session, "$text-muted"), (key, "$text-warning"),
        ))


class PaneBar(Static):
    """The pane names with their keys; the active one highlighted; a click switches.

    A single line of content rather than a ``Tabs`` widget: it costs a tenth of the start-up time.
    """

    def __init__(self, panes: dict[str, tuple[str, str]], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Textual's own keyword arguments, passed on
        self.panes = panes  # name -> (title, key)

    def show_active(self, active: str) -> None:
        parts: list[str | tuple[str, str]] = []
        for name, (title, key) in self.panes.items():
            style = "bold $text on $primary 40%" if name == active else "$text-muted"
            parts += [(f" {title} ", f"{style} @click=app.show_pane('{name}')"), (f" {key}   ", "dim")]
        self.update(Content.assemble(*parts))


class StatusLine(Horizontal):
    """What the agent is doing (with a spinner and, for tools, the elapsed time) and the usage."""

    def __init__(self, clock: Clock, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Textual's own keyword arguments, passed on
        self.clock = clock
        self.label: str | None = None
        self.since: float | None = None
        self.jobs = 0  # background jobs running

    def compose(self) -> ComposeResult:
        yield Static(id="mode")
        yield Static(id="activity")
        yield Static(id="usage")

    def set_mode(self, plan: bool) -> None:
        """The session's mode: plan mode is shown (read-only tools); the normal mode is not."""
        mode = self.query_one("#mode", Static)
        mode.update(Content.styled("plan mode · read-only", "bold $warning") if plan else "")
        mode.display = plan

    def on_mount(self) -> None:
        self._ticker = self.set_interval(0.1, self._render_activity, pause=True)
        self._render_activity()
        self.set_usage(0, 0, None)

    def set_activity(self, label: str | None, since: float | None = None) -> None:
        """``label`` None means idle; ``since`` adds an elapsed-time counter."""
        self.label, self.since = label, since
        if label is None:
            self._ticker.pause()
        else:
            self._ticker.resume()
        self._render_activity()

    def set_jobs(self, count: int) -> None:
        self.jobs = count
        self._render_activity()

    def set_usage(self, prompt_tokens: int, completion_tokens: int, cost_usd: float | None,
                  context: tuple[int, int] | None = None, *, estimated: bool = False, assumed: bool = False) -> None:
        self.query_one("#usage", Static).update(usage_text(prompt_tokens, completion_tokens, cost_usd, context,
                                                           estimated=estimated, assumed=assumed))

    def _render_activity(self) -> None:
        if self.label is None:
            content = Content.styled("ready", "$text-muted")
        else:
            now = self.clock()
            timing = "" if self.since is None else f" · {elapsed(now - self.since)}"
            content = Content.assemble((spinner_frame(now), "$accent"), f" {self.label}{timing}")
        if self.jobs:
            content = Content.assemble(content, (f" · {self.jobs} job{'s' if self.jobs > 1 else ''} running (/jobs)",
                                                 "$text-muted"))
        # layout=False: one line of fixed size; a re-layout of the screen 10x a second would cost
        # more than everything else while an answer streams.
        self.query_one("#activity", Static).update(content, layout=False)
