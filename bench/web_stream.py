"""Streaming through the web dashboard vs the headless mode, for the same scripted answer.

    python bench/web_stream.py [--tokens 2000] [--runs 5]

Both surfaces talk to the project's fake LLM server (OpenAI wire) in this process, which streams
an answer of N one-token chunks with no delay, so the figures are Hermes' own overhead:

* web: ``hermes-web`` served by **gunicorn** (its asyncio worker and the bridge, as deployed) in a subprocess, logged in once;
  per run a ``POST /api/chat``, timing the first NDJSON byte, the first ``text_delta``, and the
  token rate between the first and last ``text_delta`` lines.
* headless: ``hermes-tui -p`` per run (a new process each time, as a user runs it), timing the
  first stdout byte (= the first token) from spawn, and the token rate between first and last byte.

Prints medians and the web/headless ratios; never asserts a time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.fixtures import wire_env  # noqa: E402 - after the sys.path line above
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply  # noqa: E402 - the same

PASSWORD = "bench-password"
TOKEN_CHARS = 5  # "0a3f " : one token per SSE chunk. Tokens differ because LiteLLM aborts a stream
# that repeats the same chunk 100 times (its guard against looping models).


@dataclass
class Run:
    first_byte: float  # seconds from request (web) or spawn (headless) to the first byte
    first_token: float  # ... to the first token
    tokens_per_s: float  # between the first and the last token


def scripted_text(tokens: int) -> str:
    return "".join(f"{i % 65536:04x} " for i in range(tokens))


def count_tokens(text: str) -> int:
    return len(text.split())


def answer(tokens: int) -> Callable[[RecordedRequest], Reply]:
    text = scripted_text(tokens)

    def respond(request: RecordedRequest) -> Reply:
        if not request.body.get("stream"):
            return Reply(text="summary")  # the session summary headless mode writes before exit
        return Reply(text=text, chunk_size=TOKEN_CHARS)

    return respond


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- web


class WebClient:
    """A logged-in browser session over one keep-alive connection."""

    def __init__(self, port: int, expected: int) -> None:
        self.expected = expected
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookie = ""
        page = self._request("GET", "/login").decode()
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({"csrf_token": token, "password": PASSWORD})
        self._request("POST", "/login", body, {"Content-Type": "application/x-www-form-urlencoded"})
        page = self._request("GET", "/").decode()
        self.csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)

    def _send(self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None) -> None:
        headers = dict(headers or {})
        if self.cookie:
            headers["Cookie"] = self.cookie
        self.conn.request(method, path, body=body, headers=headers)

    def _remember_cookie(self, response: http.client.HTTPResponse) -> None:
        for name, value in response.getheaders():  # login also sets the device cookie (path /login)
            if name.lower() == "set-cookie" and value.startswith("hermes_session="):
                self.cookie = value.split(";", 1)[0]

    def _request(self, method: str, path: str, body: str | None = None,
                 headers: dict[str, str] | None = None) -> bytes:
        self._send(method, path, body, headers)
        response = self.conn.getresponse()
        data = response.read()
        self._remember_cookie(response)
        return data

    def chat(self, text: str) -> Run:
        body = json.dumps({"message": text})
        start = time.perf_counter()
        self._send("POST", "/api/chat", body, {"Content-Type": "application/json", "X-CSRF-Token": self.csrf})
        response = self.conn.getresponse()
        assert response.status == 200, response.status
        first_byte = first_token = last_token = None
        text = []
        while line := response.readline():
            now = time.perf_counter()
            first_byte = first_byte or now
            if b'"text_delta"' in line:
                first_token = first_token or now
                last_token = now
                text.append(json.loads(line)["text"])
        self._remember_cookie(response)
        count = count_tokens("".join(text))
        assert count == self.expected, f"the web streamed {count} tokens, expected {self.expected}"
        return Run(first_byte - start, first_token - start, count / max(last_token - first_token, 1e-9))


def bench_web(env: dict[str, str], tokens: int, runs: int) -> tuple[float, list[Run]]:
    """The cold start (spawn -> first token of the first chat, logging in on the way), then warm runs."""
    port = free_port()
    spawned = time.perf_counter()
    server = subprocess.Popen([str(Path(sys.executable).with_name("hermes-web")), "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client = WebClient(port, tokens)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("hermes-web did not start") from None
                time.sleep(0.1)
        asked = time.perf_counter()
        cold = asked - spawned + client.chat("first").first_token
        return cold, [client.chat(f"answer {i}") for i in range(runs)]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)


# --------------------------------------------------------------------------- headless


def bench_headless(env: dict[str, str], tokens: int, runs: int) -> list[Run]:
    command = [str(Path(sys.executable).with_name("hermes-tui")), "-p"]
    results = []
    for i in range(runs):
        start = time.perf_counter()
        process = subprocess.Popen([*command, f"answer {i}"], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        first = last = None
        received = b""
        fd = process.stdout.fileno()
        while chunk := os.read(fd, 65536):
            now = time.perf_counter()
            first = first or now
            last = now  # the answer is all headless writes to stdout (the summary runs silently after it)
            received += chunk
        process.wait()
        count = count_tokens(received.decode())
        assert count == tokens, f"headless printed {count} tokens, expected {tokens}"
        results.append(Run(first - start, first - start, count / max((last or first) - first, 1e-9)))
    return results


# --------------------------------------------------------------------------- report


def median(runs: list[Run], attribute: str) -> float:
    return statistics.median(getattr(r, attribute) for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=2000, help="tokens in the scripted answer (default 2000)")
    parser.add_argument("--runs", type=int, default=5, help="measured runs per surface (default 5)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as llm:
        llm.responder = answer(args.tokens)
        home = Path(tmp) / "home"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "PYTHONPATH": str(ROOT),
            "HERMES_HOME": str(home), "HERMES_WORKSPACE": tmp, "XDG_RUNTIME_DIR": tmp,  # its own warm helper
            "FLASK_SECRET_KEY": "bench-secret-key-0123456789abcdefghij", "HERMES_WEB_PASSWORD": PASSWORD,
            **wire_env(llm, "openai"),
        }
        web_cold, web = bench_web(env, args.tokens, args.runs)
        headless = bench_headless(env, args.tokens, args.runs)

    print(f"{args.tokens} tokens, {args.runs} runs each, medians (web: gunicorn asgi worker + bridge, warm server; "
          "headless: a new hermes-tui -p process per run)")
    print(f"{'':28}{'web':>12}{'headless':>12}{'web/headless':>14}")
    rows = [("first byte (ms)", "first_byte", 1000), ("first token (ms)", "first_token", 1000),
            ("tokens/s", "tokens_per_s", 1)]
    for label, attribute, scale in rows:
        w, h = median(web, attribute) * scale, median(headless, attribute) * scale
        print(f"{label:28}{w:12.1f}{h:12.1f}{w / h:14.2f}")
    print(f"web cold start, spawn -> first token of the first chat (1 sample): {web_cold * 1000:.0f} ms "
          "(comparable to headless first token)")


if __name__ == "__main__":
    main()
