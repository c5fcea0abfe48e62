"""The cold path's process hygiene (issue 39): what ``import litellm`` may not do to Hermes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fixtures import on_wire
from tests.fakes.server import FakeLLMServer, Reply

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
    result = subprocess.run([sys.executable, "-c", _TURN % (sorted(PLANTED),)], cwd=workspace,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": root})
    assert result.returncode == 0, result.stderr
    assert "hi there" in result.stdout
    seen = json.loads(result.stderr.rsplit("ENV=", 1)[1].splitlines()[0])
    assert seen["OPENAI_API_KEY"] == "sk-test"  # the test's own key, not the planted one
    assert all(seen[name] is None for name in PLANTED if name != "OPENAI_API_KEY"), seen
    requests = fake_llm_env.requests
    assert requests and all(r.headers.get("authorization") == "Bearer sk-test" for r in requests)
