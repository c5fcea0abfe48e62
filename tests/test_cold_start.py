"""The cold path's process hygiene (issue 39): what ``import litellm`` may not do to Hermes."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui import bytecode
from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply
from tests.helpers import cli

PLANTED = {
    "OPENAI_API_BASE": "http://127.0.0.1:9/v1",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "OPENAI_API_KEY": "sk-planted-by-the-workspace",
}

# A one-shot turn in a ``python -c`` process started in the workspace (the case where litellm's DEV
# mode loads the current folder's .env), then the planted names as the process sees them.
_TURN = (
    "import json, os, sys\n"
    "from hermes_tui.cli import tui_main\n"
    "try:\n"
    "    code = tui_main(['-p', 'hello'])\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('ENV=' + json.dumps({k: os.environ.get(k) for k in %r}) + '\\n')\n"
    "sys.exit(code or 0)\n"
)


@on_wire("openai")
def test_a_workspace_env_file_reaches_neither_the_environment_nor_a_request(
        fake_llm_env: FakeLLMServer, workspace: Path, hermes_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / ".env").write_text("".join(f"{name}={value}\n" for name, value in PLANTED.items()))
    for name in PLANTED:
        if name != "OPENAI_API_KEY":  # the real key comes from the test's environment
            monkeypatch.delenv(name, raising=False)
    fake_llm_env.queue(Reply(text="hi there"))
    root = str(Path(__file__).resolve().parents[1])
    result = subprocess.run([sys.executable, "-c", _TURN % (sorted(PLANTED),)], check=False, cwd=workspace,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": root})
    assert result.returncode == 0, result.stderr
    assert "hi there" in result.stdout
    seen = json.loads(result.stderr.rsplit("ENV=", 1)[1].splitlines()[0])
    assert seen["OPENAI_API_KEY"] == "sk-test"  # the test's own key, not the planted one
    assert all(seen[name] is None for name in PLANTED if name != "OPENAI_API_KEY"), seen
    requests = fake_llm_env.requests
    assert requests and all(r.headers.get("authorization") == "Bearer sk-test" for r in requests)


def _package(root: Path, name: str, modules: int) -> Path:
    folder = root / name
    (folder / "sub").mkdir(parents=True)
    (folder / "__init__.py").write_text("X = 1\n")
    for index in range(modules - 1):
        (folder / "sub" / f"m{index}.py").write_text(f"Y = {index}\n")
    return folder


def test_doctor_names_a_package_without_bytecode_and_how_to_compile_it(
        tmp_path: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _package(tmp_path / "site", "uncompiled_pkg", 4)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    # The one list doctor reads; the checks themselves run on real files compiled by Python.
    monkeypatch.setattr(bytecode, "PACKAGES", ("uncompiled_pkg",))
    result = cli("doctor")
    assert "uncompiled_pkg: 4 of 4 modules have no up-to-date compiled bytecode" in result.stdout
    assert f"-m compileall -q {folder}" in result.stdout
    assert "uncompiled_pkg" not in sys.modules  # checked without importing it

    # Compiled as the line says, then one source edited: that module alone is stale.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True)
    assert bytecode.uncompiled(("uncompiled_pkg",)) == []
    edited = folder / "sub" / "m0.py"
    edited.write_text("Y = 'a longer body than before'\n")
    (stale,) = bytecode.uncompiled(("uncompiled_pkg",))
    assert (stale.missing, stale.total) == (1, 4)
    assert "uncompiled_pkg: 1 of 4 modules" in cli("doctor").stdout
    py_compile.compile(str(edited))
    assert cli("doctor").stdout.startswith("compiled bytecode: up to date for uncompiled_pkg")
