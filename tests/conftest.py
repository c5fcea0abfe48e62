"""Shared fixtures. Every test gets its own HERMES_HOME and workspace; nothing touches ~/.hermes."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_tui.config import SETTINGS

pytest_plugins = ["tests.fakes.fixtures"]

_HERMES_VARS = tuple(s.name for s in SETTINGS)  # every declared setting (hermes_tui/config.py)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one worker more than the cores. Many tests spend much of
    their time waiting (a subprocess importing litellm, a paced stream, a browser), so a spare
    worker fills the gaps: on 2 cores the suite took 322 s with three workers, 355 s with two."""
    return len(os.sched_getaffinity(0)) + 1


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


@pytest.fixture(scope="module")
def runtime() -> Iterator[Path]:
    """A test module's runtime folder for the warm helper (tests set XDG_RUNTIME_DIR to it; short:
    a socket's path must fit in 107 bytes); the helper started there is stopped when the module ends."""
    from hermes_tui import warm

    base = Path(tempfile.mkdtemp(prefix="hr-", dir="/tmp"))
    yield base
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(base))
        warm.stop()
    shutil.rmtree(base, ignore_errors=True)
