"""The served hermes-web closes connections whose request head is unfinished (finding 10 of issue 18).

Real sockets against hermes-web started through its entry point; ``--header-timeout 1`` stands in
for the default 30 s, and every wait is for an event (the server closing a socket), never a sleep.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.server import FakeLLMServer
from tests.web_harness import Served, free_port, llm, web_env

__all__ = ["llm", "web_env"]


@pytest.fixture
def served_quick(llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    home = tmp_path / "served-home"
    env = {**{k: v for k, v in os.environ.items() if k.startswith(("HERMES_", "OPENAI_", "FLASK_"))},
           "PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(Path(__file__).parents[1])}
    with open(tmp_path / "served.err", "wb") as stderr:
        process = subprocess.Popen([str(Path(sys.executable).with_name("hermes-web")), "--port", str(port),
                                    "--header-timeout", "1"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                   stderr=stderr)
        server = Served(process, port, web_env, home / ".local" / "state" / "hermes" / "log")
        try:
            deadline = time.monotonic() + 90
            while True:
                assert process.poll() is None, (tmp_path / "served.err").read_text()
                try:
                    if server.request("GET", "/login", timeout=2).status == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "hermes-web did not answer within 90 s"
                time.sleep(0.1)
            yield server
        finally:
            process.kill()
            process.wait()


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a generous bound, not a measure)."""
    sock.settimeout(60)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_unfinished_request_heads_are_closed_and_finished_ones_served(served_quick: Served) -> None:
    half = socket.create_connection(("127.0.0.1", served_quick.port))
    half.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Ag")
    silent = socket.create_connection(("127.0.0.1", served_quick.port))
    body_later = socket.create_connection(("127.0.0.1", served_quick.port))
    body_later.sendall(b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                       b"Content-Length: 13\r\n\r\n")  # a whole head: the head deadline no longer applies
    try:
        assert _until_closed(half).startswith(b"HTTP/1.1 408")
        assert _until_closed(silent).startswith(b"HTTP/1.1 408")
        body_later.sendall(b"password=nope")  # sent after the others were closed
        body_later.settimeout(60)
        answer = body_later.recv(4096)
        assert answer.startswith(b"HTTP/1.1 403")  # served by the app (no CSRF token), not cut off
        page = served_quick.request("GET", "/login", timeout=30)
        assert page.status == 200
    finally:
        for sock in (half, silent, body_later):
            sock.close()
