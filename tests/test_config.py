"""Config: every setting declared once, read from the environment and .env files, validated with
messages that name the variable; the documents generated from the declaration do not drift."""

from __future__ import annotations

import http.client
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import warm
from hermes_tui.config import (
    DEFAULT_MODELS,
    PRIVILEGED,
    PROVIDERS,
    SETTINGS,
    Config,
    ConfigError,
    MissingKeyError,
    env_example,
    settings_table,
)
from hermes_tui.providers import PROVIDER_TABLE
from hermes_tui.web.context import EXTENSION
from tests.fakes.fixtures import wire_env
from tests.fakes.server import FakeLLMServer, Reply, ToolCall
from tests.helpers import cli, run_cli, wait_until
from tests.mcp_harness import declare
from tests.web_harness import free_port, login

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {".env.example": env_example, "docs/settings.md": settings_table}


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
    (tmp_path / ".env").write_text("HERMES_CONTEXT_TOKENS=9000\n")
    (hermes_home / ".env").write_text("HERMES_PROVIDER=openai\nHERMES_MODEL=from-home\nOPENAI_API_KEY=sk-home\n"
                                      "HERMES_CONTEXT_TOKENS=8000\n")
    config = Config.load()
    assert config.provider == "openai"  # only the home file sets it
    assert config.context_tokens == 9000  # cwd .env beats home .env for ordinary settings
    assert config.model == "from-home" and config.api_key == "sk-home"
    monkeypatch.setenv("HERMES_MODEL", "from-env")
    assert Config.load().model == "from-env"  # the real environment beats both


PRIVILEGED_LINES = {
    "HERMES_PROVIDER": "openrouter", "HERMES_MODEL": "someone-elses-model", "OPENROUTER_API_KEY": "sk-or-theirs",
    "OPENAI_API_KEY": "sk-theirs", "ANTHROPIC_API_KEY": "sk-ant-theirs",
    "HERMES_WEB_ENABLE_SHELL": "true", "HERMES_WEB_ENABLE_WRITE": "true", "HERMES_WEB_ALLOW_NO_AUTH": "true",
    "HERMES_WEB_TRUSTED_PROXIES": "3", "HERMES_API_BASE": "http://evil.example/v1", "HERMES_APPROVAL": "always",
    "HERMES_WEB_PASSWORD": "written-by-the-agent", "FLASK_SECRET_KEY": "k" * 40,
    "HERMES_WEB_ALLOWED_HOSTS": "evil.example", "RAILWAY_PUBLIC_DOMAIN": "evil.example",
    "HERMES_SANDBOX": "off", "HERMES_SANDBOX_NETWORK": "on", "HERMES_WEB_ENABLE_MCP": "true",
    "HERMES_FETCH_ALLOW_PRIVATE": "true",
}


def test_privileged_settings_are_never_read_from_cwd_env(tmp_path: Path, hermes_home: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lines = {**PRIVILEGED_LINES, "HERMES_HOME": str(elsewhere), "HERMES_WORKSPACE": str(elsewhere),
             "HERMES_COMPACT_AT": "0.5"}
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    config = Config.load()
    assert config.compact_at == 0.5  # ordinary settings still come from ./.env
    assert not (config.web_enable_shell or config.web_enable_write or config.web_allow_no_auth or config.web_enable_mcp)
    assert config.web_trusted_proxies == 0 and config.api_base is None and config.approval == "ask"
    assert config.web_password is None and config.flask_secret_key is None
    assert config.web_allowed_hosts == () and config.railway_public_domain is None
    assert config.sandbox and not config.sandbox_network and not config.fetch_allow_private
    assert config.home == hermes_home.resolve() and config.workspace == tmp_path.resolve()
    assert set(PRIVILEGED) <= set(lines)  # every declared privileged variable was tried
    assert config.provider == "anthropic" and config.model == DEFAULT_MODELS["anthropic"] and config.api_keys == {}
    [warning] = config.warnings
    assert "HERMES_WEB_ENABLE_SHELL" in warning and "HERMES_API_BASE" in warning and "\n" not in warning


def test_a_cloned_env_cannot_move_the_conversation_to_another_account(tmp_path: Path, hermes_home: Path) -> None:
    """Finding 3: a repository's .env set the provider, model and key, silently overriding HERMES_HOME/.env."""
    hermes_home.mkdir()
    (hermes_home / ".env").write_text("HERMES_PROVIDER=openai\nHERMES_MODEL=gpt-mine\nOPENAI_API_KEY=sk-mine\n")
    (tmp_path / ".env").write_text("HERMES_PROVIDER=openrouter\nHERMES_MODEL=their/model\n"
                                   "OPENROUTER_API_KEY=sk-or-theirs\nOPENAI_API_KEY=sk-theirs\n")
    config = Config.load()
    assert (config.provider, config.model, config.api_key) == ("openai", "gpt-mine", "sk-mine")
    assert "sk-or-theirs" not in config.api_keys.values() and "sk-theirs" not in config.api_keys.values()
    assert config.warnings == [("Ignored HERMES_MODEL, HERMES_PROVIDER, OPENAI_API_KEY, OPENROUTER_API_KEY in ./.env: "
                                "the provider, model, API keys and settings that widen what Hermes may do are read "
                                "only from the environment or HERMES_HOME/.env.")]


def test_privileged_settings_come_from_home_env_and_environment(hermes_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    hermes_home.mkdir()
    (hermes_home / ".env").write_text("".join(f"{k}={v}\n" for k, v in PRIVILEGED_LINES.items()))
    config = Config.load()
    assert config.web_enable_shell and config.web_enable_write and config.web_allow_no_auth and config.web_enable_mcp
    assert config.api_base == "http://evil.example/v1" and config.approval == "always"
    assert config.web_trusted_proxies == 3 and config.web_password == "written-by-the-agent"
    assert config.web_allowed_hosts == ("evil.example",) and config.railway_public_domain == "evil.example"
    assert not config.sandbox and config.sandbox_network
    assert config.warnings == []
    monkeypatch.setenv("HERMES_APPROVAL", "ask")
    assert Config.load().approval == "ask"  # the environment still wins


def test_started_inside_home_reads_its_env_as_home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hermes_home.mkdir()
    (hermes_home / ".env").write_text("HERMES_WEB_ENABLE_SHELL=true\n")
    monkeypatch.chdir(hermes_home)
    config = Config.load()
    assert config.web_enable_shell and config.warnings == []


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("HERMES_PROVIDER", "gemeni", "HERMES_PROVIDER"),
        ("HERMES_WORKSPACE", "/definitely/not/here", "HERMES_WORKSPACE"),
        ("HERMES_APPROVAL", "sometimes", "HERMES_APPROVAL"),
        ("HERMES_WEB_ENABLE_SHELL", "maybe", "HERMES_WEB_ENABLE_SHELL"),
        ("HERMES_WEB_TRUSTED_PROXIES", "-1", "HERMES_WEB_TRUSTED_PROXIES"),
        ("HERMES_API_BASE", "127.0.0.1:8765/v1", "http://127.0.0.1:8765/v1"),
        ("HERMES_API_BASE", "localhost:8765/v1", "HERMES_API_BASE"),
        ("HERMES_API_BASE", "ftp://localhost:8765/v1", "HERMES_API_BASE"),
        ("HERMES_API_BASE", "http://localhost:99999/v1", "HERMES_API_BASE"),
        ("HERMES_API_BASE", "http:///v1", "HERMES_API_BASE"),
        ("HERMES_HELPER", "sometimes", "HERMES_HELPER"),
        ("HERMES_HELPER_IDLE", "0", "HERMES_HELPER_IDLE"),
        ("HERMES_HELPER_IDLE", "ten minutes", "HERMES_HELPER_IDLE"),
        ("HERMES_MCP_WAIT", "-1", "HERMES_MCP_WAIT"),
        ("HERMES_DELEGATES", "0", "HERMES_DELEGATES"),
        ("PORT", "http", "PORT"),
        ("PORT", "70000", "PORT"),
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


# -- every declared setting works from HERMES_HOME/.env --------------------------------------------

# For each setting: the text written to HERMES_HOME/.env, where Config shows it, and the value expected
# there (never the default, which the test checks first: a line that did nothing would fail).
SAMPLES: dict[str, tuple[str, Callable[[Config], Any], Any]] = {
    "HERMES_PROVIDER": ("openai", lambda c: c.provider, "openai"),
    "HERMES_MODEL": ("my-model", lambda c: c.model, "my-model"),
    "HERMES_API_BASE": ("http://127.0.0.1:9/v1", lambda c: c.api_base, "http://127.0.0.1:9/v1"),
    "HERMES_CONTEXT_TOKENS": ("32000", lambda c: c.context_tokens, 32000),
    "HERMES_COMPACT_AT": ("50%", lambda c: c.compact_at, 0.5),
    "ANTHROPIC_API_KEY": ("sk-ant-sample", lambda c: c.api_keys.get("ANTHROPIC_API_KEY"), "sk-ant-sample"),
    "OPENAI_API_KEY": ("sk-sample", lambda c: c.api_keys.get("OPENAI_API_KEY"), "sk-sample"),
    "OPENROUTER_API_KEY": ("sk-or-sample", lambda c: c.api_keys.get("OPENROUTER_API_KEY"), "sk-or-sample"),
    "HERMES_HOME": ("{tmp}/other-home", lambda c: c.home.name, "other-home"),
    "HERMES_WORKSPACE": ("{tmp}/other-workspace", lambda c: c.workspace.name, "other-workspace"),
    "HERMES_APPROVAL": ("always", lambda c: c.approval, "always"),
    "HERMES_LEARN": ("review", lambda c: c.learn, "review"),
    "HERMES_SANDBOX": ("off", lambda c: c.sandbox, False),
    "HERMES_SANDBOX_NETWORK": ("on", lambda c: c.sandbox_network, True),
    "HERMES_FETCH_ALLOW_PRIVATE": ("1", lambda c: c.fetch_allow_private, True),
    "HERMES_SKILL_STALE_DAYS": ("7", lambda c: c.skill_stale_days, 7),
    "HERMES_SKILL_ARCHIVE_DAYS": ("14", lambda c: c.skill_archive_days, 14),
    "HERMES_MCP_WAIT": ("2.5", lambda c: c.mcp_wait, 2.5),
    "HERMES_DELEGATES": ("5", lambda c: c.delegates, 5),
    "HERMES_HELPER": ("off", lambda c: c.helper, False),
    "HERMES_HELPER_IDLE": ("42", lambda c: c.helper_idle, 42.0),
    "FLASK_SECRET_KEY": ("k" * 40, lambda c: c.flask_secret_key, "k" * 40),
    "HERMES_WEB_PASSWORD": ("a sample password", lambda c: c.web_password, "a sample password"),
    "HERMES_WEB_ALLOW_NO_AUTH": ("true", lambda c: c.web_allow_no_auth, True),
    "HERMES_WEB_ALLOWED_HOSTS": ("a.example, .b.example", lambda c: c.web_allowed_hosts, ("a.example", ".b.example")),
    "HERMES_WEB_ENABLE_SHELL": ("yes", lambda c: c.web_enable_shell, True),
    "HERMES_WEB_ENABLE_WRITE": ("1", lambda c: c.web_enable_write, True),
    "HERMES_WEB_ENABLE_MCP": ("true", lambda c: c.web_enable_mcp, True),
    "HERMES_WEB_TRUSTED_PROXIES": ("2", lambda c: c.web_trusted_proxies, 2),
    "RAILWAY_PUBLIC_DOMAIN": ("Hermes.Example", lambda c: c.railway_public_domain, "hermes.example"),
    "PORT": ("9123", lambda c: c.port, 9123),
}


def test_every_declared_setting_has_a_sample() -> None:
    assert set(SAMPLES) == {s.name for s in SETTINGS}


@pytest.mark.parametrize("name", [s.name for s in SETTINGS])
def test_every_setting_takes_effect_from_home_env(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug: HERMES_HELPER, HERMES_HELPER_IDLE and HERMES_MCP_WAIT were read from os.environ only,
    so the lines .env.example offers did nothing in HERMES_HOME/.env."""
    text, shown, expected = SAMPLES[name]
    monkeypatch.delenv(name, raising=False)  # conftest sets HERMES_HELPER=off in the environment
    (tmp_path / "other-home").mkdir()
    (tmp_path / "other-workspace").mkdir()
    if name == "HERMES_HOME":  # its .env is the default home's: the one a HERMES_HOME would name is inside it
        home = Path.home() / ".hermes"
    else:
        home = tmp_path / "hermes-home"
        monkeypatch.setenv("HERMES_HOME", str(home))
    assert shown(Config.load()) != expected  # the default: the line below must be what changes it
    (home / ".env").write_text(f"{name}={text.format(tmp=tmp_path)}\n")
    assert shown(Config.load()) == expected


def test_secrets_from_home_env_never_show_in_repr(hermes_home: Path) -> None:
    secret = {s.name for s in SETTINGS if s.kind.secret}
    assert {"FLASK_SECRET_KEY", "HERMES_WEB_PASSWORD", "OPENAI_API_KEY"} <= secret <= PRIVILEGED
    hermes_home.mkdir()
    (hermes_home / ".env").write_text("".join(f"{name}={SAMPLES[name][0]}\n" for name in sorted(secret)))
    config = Config.load()
    assert not [name for name in secret if SAMPLES[name][0] in repr(config)]
    assert set(config.secrets) == secret  # and they are all scrubbed from tool output


# -- documents generated from the declaration ------------------------------------------------------


def generated_part(path: str) -> str:
    """What lies between a file's cog markers."""
    text = (ROOT / path).read_text(encoding="utf-8")
    return text.split("]]]", 1)[1].split("\n", 1)[1].rsplit("[[[end]]]", 1)[0].rsplit("\n", 1)[0] + "\n"


@pytest.mark.parametrize("path", list(GENERATED))
def test_generated_documents_match_the_declaration(path: str) -> None:
    assert generated_part(path) == GENERATED[path](), f"{path} drifted: run `cog -r .env.example docs/settings.md`"


def test_cog_check_passes_and_catches_drift(tmp_path: Path) -> None:
    """The command CI runs, from the repository: ``cog --check .env.example docs/settings.md`` (exit 5: drifted)."""
    def check(*paths: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(Path(sys.executable).with_name("cog")), "--check", *paths], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              check=False)

    assert check(".env.example", "docs/settings.md").returncode == 0
    drifted = tmp_path / "example"
    drifted.write_text((ROOT / ".env.example").read_text().replace("HERMES_MCP_WAIT=10", "HERMES_MCP_WAIT=5"))
    result = check(str(drifted))
    assert result.returncode == 5 and "Check failed" in result.stdout + result.stderr


def test_env_example_offers_exactly_the_declared_settings() -> None:
    offered = re.findall(r"^# ([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.MULTILINE)
    assert offered == [s.name for s in SETTINGS]
    tabled = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", (ROOT / "docs" / "settings.md").read_text(), re.MULTILINE)
    assert tabled == offered
    privileged = re.findall(r"^# \[privileged\]\n# ([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE)
    assert set(privileged) == PRIVILEGED


def test_env_example_names_the_real_context_window_defaults() -> None:
    """.env.example once said 32000 where the app and the README use the provider table (32,768)."""
    text = (ROOT / ".env.example").read_text()
    comment = text[: text.index("# HERMES_CONTEXT_TOKENS=")].split("# HERMES_API_BASE=")[-1].replace("\n# ", " ")
    numbers = {int(n) for n in re.findall(r"\b\d{4,}\b", comment)}
    windows = {p.name: p.context_window for p in PROVIDER_TABLE.values()}
    assert numbers and numbers <= set(windows.values()), numbers
    assert f"{windows['openai-compatible']} for openai-compatible" in comment


def test_the_isolation_list_is_the_declaration() -> None:
    from tests.conftest import _HERMES_VARS

    assert set(_HERMES_VARS) == {s.name for s in SETTINGS}


# -- end to end: each setting family from HERMES_HOME/.env, through the real code path ------------


def home_env(home: Path, server: FakeLLMServer, *lines: str) -> None:
    """HERMES_HOME/.env pointing at ``server`` (the model family), plus ``lines``."""
    home.mkdir(exist_ok=True)
    model = [f"{k}={v}" for k, v in wire_env(server, "openai").items()]
    (home / ".env").write_text("\n".join([*model, *lines]) + "\n")


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A private runtime folder for the warm helper (short: a socket path fits in 107 bytes); any
    helper started in it is stopped afterwards."""
    base = Path(tempfile.mkdtemp(prefix="hc-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the runs' log file
    monkeypatch.delenv("HERMES_HELPER")  # conftest's "off": only HERMES_HOME/.env decides here
    yield base / "hermes"
    warm.stop()
    shutil.rmtree(base, ignore_errors=True)


def log_text(tmp_path: Path) -> str:
    path = tmp_path / "state" / "hermes" / "log" / "hermes.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.mark.timeout(600)
def test_helper_off_in_home_env_keeps_the_helper_from_starting(fake_llm: FakeLLMServer, hermes_home: Path,
                                                                workspace: Path, runtime: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``hermes-tui -p`` as a user runs it, every setting in HERMES_HOME/.env: the model family
    reaches the fake server, and HERMES_HELPER=off means no helper (litellm imported in the run)."""
    home_env(hermes_home, fake_llm, "HERMES_HELPER=off")
    fake_llm.queue(Reply(text="From the home .env."))
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    run = run_cli("-p", "hello", timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "From the home .env.\n"
    assert any("litellm" in line for line in run.stderr.splitlines() if line.startswith("import time:"))
    assert not (runtime / "socket").exists() and warm.status() is None
    assert "warm helper" not in log_text(workspace.parent)


@pytest.mark.timeout(900)
def test_helper_idle_in_home_env_reaches_the_helper(fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                     runtime: Path, tmp_path: Path) -> None:
    home_env(hermes_home, fake_llm, "HERMES_HELPER=on", "HERMES_HELPER_IDLE=4242")
    fake_llm.queue(Reply(text="Served."))
    run = run_cli("-p", "hello", timeout=600)
    assert run.returncode == 0 and run.stdout == "Served.\n", run.stderr
    assert wait_until(lambda: "idle exit after 4242 s" in log_text(tmp_path), 600), log_text(tmp_path)[-2000:]
    assert warm.status() is not None


def test_mcp_wait_in_home_env_bounds_the_wait(fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path) -> None:
    home_env(hermes_home, fake_llm, "HERMES_MCP_WAIT=0")
    # A server that never answers its handshake: "not ready" whatever the machine's speed.
    declare(hermes_home / "mcp.json", {"slow": {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}})
    fake_llm.queue(Reply(text="Fine."))
    result = cli("-p", "hello")
    assert result.returncode == 0, result.stderr
    assert "MCP server slow is not ready after 0 s: this turn runs without its tools." in result.stderr


def test_approval_and_workspace_in_home_env_reach_the_tools(fake_llm: FakeLLMServer, hermes_home: Path,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Privileged settings from HERMES_HOME/.env: without --yes, HERMES_APPROVAL=always runs the command,
    and it runs in the HERMES_WORKSPACE named there (not the current folder)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home_env(hermes_home, fake_llm, "HERMES_APPROVAL=always", f"HERMES_WORKSPACE={elsewhere}")
    fake_llm.queue(Reply(tool_calls=[ToolCall("run_bash", {"command": "touch made-it"})]), Reply(text="Made."))
    result = cli("-p", "make a file")
    assert result.returncode == 0, result.stderr
    assert "rerun with --yes" not in result.stderr
    assert (elsewhere / "made-it").exists() and not (tmp_path / "made-it").exists()


def test_web_settings_in_home_env_open_the_dashboard(fake_llm: FakeLLMServer, hermes_home: Path,
                                                     workspace: Path) -> None:
    from hermes_tui.web import create_app

    home_env(hermes_home, fake_llm, "FLASK_SECRET_KEY=" + secrets.token_hex(32), "HERMES_WEB_PASSWORD=home env password 7")
    app = create_app(Config.load())
    app.config["TESTING"] = True
    try:
        login(app.test_client(), "home env password 7")
    finally:
        app.extensions[EXTENSION].state.close()


@pytest.mark.timeout(300)
def test_port_in_home_env_is_where_hermes_web_listens(fake_llm: FakeLLMServer, hermes_home: Path, workspace: Path,
                                                      tmp_path: Path) -> None:
    """``hermes-web`` without --port, as on Railway, every setting in HERMES_HOME/.env (PORT too)."""
    port = free_port()
    home_env(hermes_home, fake_llm, "FLASK_SECRET_KEY=" + secrets.token_hex(32),
             "HERMES_WEB_PASSWORD=home env password 7", f"PORT={port}")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "userhome"), "PYTHONPATH": str(ROOT),
           "HERMES_HOME": str(hermes_home), "HERMES_WORKSPACE": str(workspace),
           "HERMES_HELPER": "off"}  # no helper in the user's runtime folder (tests/test_web_warm.py has it on)
    with open(tmp_path / "served.err", "wb") as stderr:
        process = subprocess.Popen([str(Path(sys.executable).with_name("hermes-web"))], env=env, cwd=tmp_path,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        def answers() -> bool:
            assert process.poll() is None, (tmp_path / "served.err").read_text()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/login")
                return connection.getresponse().status == 200
            except OSError:
                return False

        assert wait_until(answers, 240), (tmp_path / "served.err").read_text()
    finally:
        process.kill()
        process.wait()
