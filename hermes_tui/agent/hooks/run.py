"""Run one hook: its command in a shell in the workspace, the event's JSON on stdin, and what it
answered read as Claude Code reads it.

The hook runs outside the shell tool's sandbox (it is the user's own program, or one the user
approved), but never with a secret in its environment: the caller passes an environment with the
secret-named variables and every known secret value taken out. Its process group is killed at its
timeout or when the turn is cancelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from hermes_tui.agent.hooks.config import HookSpec

OUTPUT_CAP = 10_000  # characters of a hook's stdout or stderr kept (what reaches the model is capped by it)
POLL = 0.1  # seconds between looks at the cancel flag while a hook runs
_DECISIONS = {"block": "block", "deny": "block", "approve": "allow", "allow": "allow", "ask": "ask"}


@dataclass(frozen=True)
class Outcome:
    """What one hook answered. ``decision``: "" (go on), "stop" (``continue: false``), "block",
    "allow" or "ask"; ``reason``:
    why (stderr of exit 2, or the JSON's reason); ``context``: text for the model's context
    (stdout on exit 0) and ``additional`` (``additionalContext``); ``warning``: one line for the user."""

    spec: HookSpec
    code: int | None  # None: it did not finish (timeout, cancel, could not start)
    decision: str = ""
    reason: str = ""
    context: str = ""  # plain stdout on exit 0 (the model sees it for the events that say so)
    additional: str = ""  # the JSON's additionalContext (the model sees it)
    warning: str = ""
    message: str = ""  # the JSON's systemMessage: shown to the user


def shell() -> str:
    """Claude Code runs hook commands with bash; sh where there is none."""
    return shutil.which("bash") or "/bin/sh"


def run(spec: HookSpec, payload: Mapping[str, Any], *, cwd: Path, environment: Mapping[str, str],
        cancel: threading.Event | None = None) -> Outcome:
    """Run ``spec`` with ``payload`` as JSON on stdin; never raises for what the hook does."""
    name = _name(spec)
    try:
        process = subprocess.Popen([shell(), "-c", spec.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=cwd, env=dict(environment), start_new_session=True)
    except OSError as exc:
        return Outcome(spec, None, warning=f"{name} could not start: {exc.strerror or exc}")
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    # A lone surrogate (JSON's "\ud800" from the model) is written as that escape, as JSON.stringify does.
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")
    threads = [threading.Thread(target=_send, args=(process.stdin, data), daemon=True),
               threading.Thread(target=_keep, args=(process.stdout, out), daemon=True),
               threading.Thread(target=_keep, args=(process.stderr, err), daemon=True)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + spec.timeout
    while True:  # until the hook exited and its pipes closed (a child it left running may hold them)
        wait = min(POLL, max(0.0, deadline - time.monotonic()))
        try:
            process.wait(timeout=wait)
            reading = next((thread for thread in threads[1:] if thread.is_alive()), None)
            if reading is None:
                return read(spec, process.returncode, _text(out), _text(err))
            reading.join(wait)
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            _kill(process)
            return Outcome(spec, None, warning=f"{name} was stopped: the turn was cancelled")
        if time.monotonic() >= deadline:
            exited = process.returncode  # the hook ended, but a process it started holds its output
            _kill(process)
            if exited is None:
                return Outcome(spec, None, warning=f"{name} timed out after {spec.timeout:g} s and was stopped; "
                                                   "Hermes went on without it")
            for thread in threads[1:]:  # what it wrote before it ended is in the pipes
                thread.join(POLL)
            answered = read(spec, exited, _text(out), _text(err))
            left = f"{name} left a process running that held its output; it was stopped at the timeout"
            return replace(answered, warning="; ".join(filter(None, (answered.warning, left))))


def read(spec: HookSpec, code: int, stdout: str, stderr: str) -> Outcome:
    """An exit code and output read as Claude Code reads them: 0 goes on (JSON on stdout may
    decide), 2 blocks with stderr as the reason, anything else is a warning and goes on."""
    name = _name(spec)
    if code == 2:
        return Outcome(spec, code, "block", stderr.strip() or f"{name} blocked it (exit 2, no reason on stderr)")
    if code != 0:
        first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
        return Outcome(spec, code, warning=f"{name} failed with exit code {code}" + (f": {first[:200]}" if first else ""))
    answer = _json(stdout)
    if answer is None:
        return Outcome(spec, code, context=stdout.strip())
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = _DECISIONS.get(str(specific.get("permissionDecision") or answer.get("decision") or ""), "")
    reason = str(specific.get("permissionDecisionReason") or answer.get("reason") or "")
    if answer.get("continue") is False:  # Claude Code: takes precedence over any decision
        decision, reason = "stop", str(answer.get("stopReason") or reason or f"{name} said not to continue")
    message = answer.get("systemMessage")
    return Outcome(spec, code, decision, reason, additional=str(specific.get("additionalContext") or ""),
                   message=message if isinstance(message, str) else "")


def _json(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _send(pipe: IO[bytes], data: bytes) -> None:
    """The event's JSON on the hook's stdin; a hook that does not read it is no error."""
    try:
        pipe.write(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


def _keep(pipe: IO[bytes], kept: bytearray) -> None:
    """Read a pipe to its end, keeping its first ``OUTPUT_CAP * 4`` bytes (a hook that prints
    without end costs no memory)."""
    with pipe:
        while chunk := pipe.read(1 << 16):
            if len(kept) < OUTPUT_CAP * 4:
                kept += chunk[:OUTPUT_CAP * 4 - len(kept)]


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")[:OUTPUT_CAP]


def _kill(process: subprocess.Popen[bytes]) -> None:
    """End the hook's whole process group (its pipes close with it; the readers end)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _name(spec: HookSpec) -> str:
    command = " ".join(spec.command.split())
    return f"{spec.event} hook `{command[:60]}{'…' if len(command) > 60 else ''}` ({spec.source})"
