"""First-run setup: choose a provider, paste its key (masked), optionally a model and endpoint.

Saved to HERMES_HOME/.env (mode 0600, other lines kept), then the configuration is reloaded.
The key is never logged or shown.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import replace
from urllib.parse import urlsplit

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.config import Config, ConfigError
from hermes_tui.providers import PROVIDER_TABLE, PROVIDERS
from hermes_tui.redaction import process_environment
from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce
from hermes_tui.tui.envfile import update_env_file
from hermes_tui.tui.format import short_path

log = logging.getLogger(__name__)


def endpoint_problem(url: str) -> str | None:
    """Why an endpoint cannot be right (one line), or None: it needs http(s)://host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"The endpoint needs a scheme and a host, like http://localhost:8000/v1 (got {url!r})."
    try:
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        return f"The endpoint's port is not a number: {url!r}."
    return None


def connection_problem(url: str, timeout: float = 3.0) -> str | None:
    """Whether the endpoint's host answers on its port (a TCP connect; no key is sent), or why not."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except OSError as exc:
        return f"Cannot reach {parts.hostname}:{port}: {exc.strerror or exc}."


def reload_config(config: Config, provider: str, model: str | None) -> Config:
    """The configuration as saved, for the same home and workspace, with the chosen provider/model
    (a provider set in the real environment would otherwise win over the .env just written)."""
    env = {**process_environment(), "HERMES_HOME": str(config.home), "HERMES_WORKSPACE": str(config.workspace)}
    return Config.load(env).with_overrides(provider=provider, model=model)


class SetupScreen(DismissOnce, ModalScreen[Config | None]):
    """Dismisses with the new Config once saved, or None for "later" (Esc)."""

    # Here rather than in hermes.tcss: parsed when first shown, not at start-up.
    DEFAULT_CSS = """
    SetupScreen {
        align: center middle;
        background: $background 60%;
    }
    #setup-dialog {
        width: 84;
        max-width: 95%;
        height: auto;
        max-height: 95%;
        padding: 1 2;
        border: thick $primary 70%;
        background: $surface;
    }
    #setup-intro {
        margin: 1 0;
        color: $text-muted;
    }
    .setup-row {
        height: auto;
        margin-bottom: 1;
    }
    .setup-label {
        width: 20;
        color: $text;
    }
    .setup-row Input, .setup-row OptionList {
        width: 1fr;
    }
    #setup-error {
        height: auto;
    }
    #setup-buttons {
        height: auto;
        margin-top: 1;
        align-horizontal: right;
    }
    #setup-buttons Button {
        margin-left: 1;
    }
    """

    BINDINGS = actions.bindings("setup")  # declared once, in actions.ACTIONS

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self._filled: dict[str, str] = {}  # what _show_provider put in a field (not the user's typing)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="setup-dialog"):
            yield Static(Content.styled("Set up Hermes", "bold $accent"), id="setup-title")
            yield Static(
                f"Choose a model provider and paste its key; it is saved to {short_path(self.config.env_file)}, "
                "readable only by you. Skills, Memory and Sessions work without one.",
                markup=False, id="setup-intro",
            )
            with Horizontal(classes="setup-row"):
                yield Label("Provider", classes="setup-label")
                yield OptionList(
                    *(Option(Content.assemble((p, "bold"), (f"  {info.note}", "$text-muted")), id=p)
                      for p, info in PROVIDER_TABLE.items()),
                    id="setup-provider", compact=True,
                )
            with Horizontal(classes="setup-row"):
                yield Label("", id="setup-key-label", classes="setup-label")
                yield Input(password=True, placeholder="paste the key here", id="setup-key", compact=True)
            with Horizontal(classes="setup-row"):
                yield Label("Model (optional)", classes="setup-label")
                yield Input(id="setup-model", compact=True)
            with Horizontal(classes="setup-row"):
                yield Label("Endpoint (optional)", classes="setup-label")
                needs_base = ", ".join(p.name for p in PROVIDER_TABLE.values() if p.requires_base)
                yield Input(placeholder=f"needed for {needs_base}: http://host:port/v1",
                            id="setup-base", compact=True)
            yield Static("", id="setup-error")
            with Horizontal(id="setup-buttons"):
                yield Button("Save", variant="primary", id="setup-save", compact=True)
                yield Button(f"Later ({actions.main_key('setup', 'later')})", id="setup-later", compact=True)
        yield Footer()  # the dialog's keys, not those of the screen underneath

    def on_mount(self) -> None:
        providers = self.query_one("#setup-provider", OptionList)
        providers.highlighted = PROVIDERS.index(self.config.provider)
        self._show_provider(self.config.provider)
        providers.focus()

    @property
    def provider(self) -> str:
        option = self.query_one("#setup-provider", OptionList).highlighted_option
        return option.id if option is not None and option.id else self.config.provider

    def _show_provider(self, provider: str) -> None:
        info = PROVIDER_TABLE[provider]
        variable = info.key_env_var
        label = variable or "API key"
        if variable and not info.needs_key:
            label += " (optional)"
        self.query_one("#setup-key-label", Label).update(label)
        key = self.query_one("#setup-key", Input)
        key.disabled = variable is None
        key.placeholder = "paste the key here" if variable else "not needed for this provider"
        self.query_one("#setup-model", Input).placeholder = info.default_model
        # The current provider's model and endpoint are shown as they are; another provider starts
        # from its own defaults (its endpoint is never the current one's, see action_save).
        current = provider == self.config.provider
        for field_id, value in (("setup-model", self.config.model), ("setup-base", self.config.api_base or "")):
            field = self.query_one(f"#{field_id}", Input)
            if field.value == self._filled.get(field_id, ""):
                field.value = value if current else ""
                self._filled[field_id] = field.value

    @on(OptionList.OptionHighlighted, "#setup-provider")
    def _provider_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_provider(event.option.id or self.config.provider)
        self.query_one("#setup-error", Static).update("")

    @on(OptionList.OptionSelected, "#setup-provider")
    def _provider_selected(self) -> None:
        self.focus_next()

    @on(Input.Submitted)
    def _input_submitted(self) -> None:
        self.action_save()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "setup-save":
            self.action_save()
        else:
            self.action_later()

    def action_later(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        provider = self.provider
        info = PROVIDER_TABLE[provider]
        variable = info.key_env_var
        key = self.query_one("#setup-key", Input).value.strip()
        model = self.query_one("#setup-model", Input).value.strip() or None
        base = self.query_one("#setup-base", Input).value.strip() or None
        keys = dict(self.config.api_keys) | ({variable: key} if variable and key else {})
        candidate = replace(self.config, provider=provider, api_keys=keys)
        if not candidate.has_api_key:
            self._error(f"Paste the {variable} for {provider} (or press {actions.main_key('setup', 'later')} to set it "
                        "up later).")
            return
        if base and (problem := endpoint_problem(base)):
            self._error(problem)
            return
        if info.requires_base and not base:
            self._error(f"{provider} needs the server's endpoint, e.g. http://localhost:8000/v1.")
            return
        values: dict[str, str | None] = {"HERMES_PROVIDER": provider}
        if variable and key:
            values[variable] = key
        # A field still showing what is in use stays where it came from (the environment or .env);
        # one the user changed is written, and so is a new provider's (None: nothing of the old one's).
        new_provider = provider != self.config.provider
        for name, field_id, value in (("HERMES_MODEL", "setup-model", model), ("HERMES_API_BASE", "setup-base", base)):
            if new_provider or (value or "") != self._filled.get(field_id, ""):
                values[name] = value
        try:
            update_env_file(self.config.env_file, values)
            config = reload_config(self.config, provider, model)
        except (OSError, ValueError, ConfigError) as exc:
            self._error(f"Not saved: {exc}")
            return
        log.info("setup: provider %s saved to %s", provider, self.config.env_file)
        self.dismiss(config)

    def _error(self, message: str) -> None:
        self.query_one("#setup-error", Static).update(Content.styled(message, "$text-error"))
