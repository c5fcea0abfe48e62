"""Shared fixtures. Every test gets its own HERMES_HOME and workspace; nothing touches ~/.hermes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.fakes.fixtures"]

_HERMES_VARS = (
    "HERMES_PROVIDER", "HERMES_MODEL", "HERMES_API_BASE", "HERMES_HOME", "HERMES_WORKSPACE",
    "HERMES_APPROVAL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
    "FLASK_SECRET_KEY", "HERMES_WEB_PASSWORD", "HERMES_WEB_ALLOW_NO_AUTH",
    "HERMES_WEB_ENABLE_SHELL", "HERMES_WEB_ENABLE_WRITE", "HERMES_WEB_ENABLE_MCP", "HERMES_WEB_TRUSTED_PROXIES",
    "HERMES_WEB_ALLOWED_HOSTS", "RAILWAY_PUBLIC_DOMAIN",
    "HERMES_CONTEXT_TOKENS", "HERMES_COMPACT_AT", "HERMES_SANDBOX", "HERMES_SANDBOX_NETWORK",
    "HERMES_SKILL_STALE_DAYS", "HERMES_SKILL_ARCHIVE_DAYS",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Isolate every test from the developer's own configuration and home."""
    for name in _HERMES_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    (tmp_path / "userhome").mkdir()
    # No per-user warm helper (hermes_tui/warm.py) unless a test asks for one (tests/test_warm.py).
    monkeypatch.setenv("HERMES_HELPER", "off")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    monkeypatch.setenv("HERMES_WORKSPACE", str(ws))
    return ws
