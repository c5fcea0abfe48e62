"""Config: environment + .env files, validation with messages that name the variable."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hermes_tui.config import DEFAULT_MODELS, PROVIDERS, Config, ConfigError, MissingKeyError


def test_defaults(hermes_home: Path, tmp_path: Path) -> None:
    config = Config.load()
    assert config.provider == "anthropic"
    assert config.model == DEFAULT_MODELS["anthropic"]
    assert config.workspace == tmp_path.resolve()  # cwd
    assert config.approval == "ask"
    assert not config.web_enable_shell and not config.web_enable_write
    assert config.home == hermes_home.resolve()


def test_home_created_private(hermes_home: Path) -> None:
    assert not hermes_home.exists()
    Config.load()
    assert hermes_home.is_dir()
    assert stat.S_IMODE(hermes_home.stat().st_mode) == 0o700


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_has_a_default_model(provider: str, monkeypatch: pytest.MonkeyPatch,
                                            hermes_home: Path) -> None:
    monkeypatch.setenv("HERMES_PROVIDER", provider)
    monkeypatch.setenv("HERMES_API_BASE", "http://127.0.0.1:9/v1")
    assert Config.load().model == DEFAULT_MODELS[provider]


def test_env_file_precedence(tmp_path: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hermes_home.mkdir()
    (hermes_home / ".env").write_text("HERMES_PROVIDER=openai\nHERMES_MODEL=from-home\nOPENAI_API_KEY=sk-home\n")
    (tmp_path / ".env").write_text("HERMES_MODEL=from-cwd\n")
    config = Config.load()
    assert config.provider == "openai"  # only the home file sets it
    assert config.model == "from-cwd"  # cwd .env beats home .env
    assert config.api_key == "sk-home"
    monkeypatch.setenv("HERMES_MODEL", "from-env")
    assert Config.load().model == "from-env"  # the real environment beats both


def test_cwd_env_can_point_at_home(tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    (tmp_path / ".env").write_text(f"HERMES_HOME={home}\n")
    home.mkdir()
    (home / ".env").write_text("HERMES_PROVIDER=ollama\n")
    assert Config.load().provider == "ollama"


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("HERMES_PROVIDER", "gemeni", "HERMES_PROVIDER"),
        ("HERMES_WORKSPACE", "/definitely/not/here", "HERMES_WORKSPACE"),
        ("HERMES_APPROVAL", "sometimes", "HERMES_APPROVAL"),
        ("HERMES_WEB_ENABLE_SHELL", "maybe", "HERMES_WEB_ENABLE_SHELL"),
        ("HERMES_WEB_TRUSTED_PROXIES", "-1", "HERMES_WEB_TRUSTED_PROXIES"),
    ],
)
def test_invalid_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, hermes_home: Path,
                                          variable: str, value: str, named: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as info:
        Config.load()
    assert named in str(info.value)
    assert "\n" not in str(info.value)


def test_openai_compatible_needs_a_base(monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    monkeypatch.setenv("HERMES_PROVIDER", "openai-compatible")
    with pytest.raises(ConfigError, match="HERMES_API_BASE"):
        Config.load()


def test_workspace_resolved_to_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    real = tmp_path / "real-ws"
    real.mkdir()
    (tmp_path / "ws-link").symlink_to(real)
    monkeypatch.setenv("HERMES_WORKSPACE", "ws-link")
    assert Config.load().workspace == real.resolve()


def test_missing_key_is_separate_and_clear(monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    config = Config.load()  # loading never requires a key
    with pytest.raises(MissingKeyError) as info:
        config.require_api_key()
    assert "ANTHROPIC_API_KEY" in str(info.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    keyed = Config.load()
    keyed.require_api_key()
    assert "sk-ant-secret-value" not in repr(keyed)


def test_ollama_needs_no_key(monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    monkeypatch.setenv("HERMES_PROVIDER", "ollama")
    Config.load().require_api_key()


def test_overrides_switch_provider_and_key(monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    config = Config.load().with_overrides(provider="openai")
    assert config.model == DEFAULT_MODELS["openai"] and config.api_key == "sk-openai"
    assert config.with_overrides(model="gpt-x").model == "gpt-x"
    with pytest.raises(ConfigError, match="HERMES_PROVIDER"):
        config.with_overrides(provider="nope")
