"""The served hermes-web closes connections whose request head is unfinished (finding 10 of issue 18).

Real sockets against hermes-web started through its entry point; ``--header-timeout 1`` stands in
for the default 30 s, and every wait is for an event (the server closing a socket), never a sleep.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.server import FakeLLMServer
from tests.web_harness import Served, llm, serving, web_env

__all__ = ["llm", "web_env"]


@pytest.fixture
def served_quick(llm: FakeLLMServer, web_env: Path, workspace: Path, tmp_path: Path) -> Iterator[Served]:
    with serving(web_env, tmp_path, "--header-timeout", "1") as server:
        yield server


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
