"""/login latency while slow clients hold connections: hermes-web as deployed vs gunicorn gthread.

    python bench/web_slow_clients.py [--slow 64] [--requests 50]

Both servers run the same app from ``wsgi.py`` on 127.0.0.1, one worker, 8 threads:

* hermes-web: ``hermes-web`` (gunicorn's asyncio worker + the request-buffering bridge);
* baseline: ``gunicorn -k gthread --threads 8 wsgi:app`` (the previous deployment).

For each, ``--requests`` sequential ``GET /login`` are timed with no other client, then again while
``--slow`` connections hold half a request head or trickle a request body. A request that gets no
answer within 5 s counts as timed out (3 in a row end that series). Prints p50/p90/p99/max and the
ratios of the p50s; never asserts a time.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, summary_ms

from tests.helpers import hold_slow_clients

SECRET = "bench-slow-clients-secret-0123456789abcdef"
PASSWORD = "bench slow clients passphrase"
TIMEOUT = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_up(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            if get_login(port) is not None:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not come up within 60 s")


def get_login(port: int) -> float | None:
    """Seconds for one GET /login on a new connection, or None when it timed out."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection.request("GET", "/login")
        response = connection.getresponse()
        response.read()
        return time.perf_counter() - start if response.status == 200 else None
    except TimeoutError:
        return None
    finally:
        connection.close()


def measure(port: int, requests: int) -> tuple[list[float], int]:
    """Answered times and the number of timeouts; gives up after 3 timeouts in a row (a stalled server)."""
    answered: list[float] = []
    timed_out = in_a_row = 0
    for _ in range(requests):
        elapsed = get_login(port)
        if elapsed is None:
            timed_out += 1
            in_a_row += 1
            if in_a_row == 3:
                break
        else:
            answered.append(elapsed)
            in_a_row = 0
    return answered, timed_out


def report(label: str, answered: list[float], timed_out: int) -> float | None:
    figures = summary_ms(answered) if answered else "no answer at all"
    print(f"  {label:<22} {figures}  timed out: {timed_out}")
    return sorted(answered)[len(answered) // 2] if answered else None


def run(name: str, command: list[str], env: dict[str, str], port: int, slow: int, requests: int) -> dict[str, float | None]:
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(port, process)
        print(name)
        idle = report("no other client", *measure(port, requests))
        held = hold_slow_clients(port, slow)
        try:
            time.sleep(0.5)
            busy = report(f"{slow} slow clients", *measure(port, requests))
        finally:
            for sock in held:
                sock.close()
        return {"idle": idle, "busy": busy}
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=64)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "HERMES_HOME": str(Path(tmp) / "home"),
               "XDG_RUNTIME_DIR": tmp,  # its own warm helper, gone with the folder
               "HERMES_WORKSPACE": tmp, "PYTHONPATH": str(ROOT), "FLASK_SECRET_KEY": SECRET,
               "HERMES_WEB_PASSWORD": PASSWORD, "HERMES_PROVIDER": "openai", "OPENAI_API_KEY": "sk-bench"}
        bin_dir = Path(sys.executable).parent
        port = free_port()
        ours = run("hermes-web (asyncio worker + bridge)", [str(bin_dir / "hermes-web"), "--port", str(port)],
                   env, port, args.slow, args.requests)
        port = free_port()
        base = run("baseline (gunicorn gthread, 8 threads)",
                   [str(bin_dir / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "8", "--no-control-socket",
                    "-b", f"127.0.0.1:{port}", "wsgi:app"], env, port, args.slow, args.requests)
    if ours["idle"] and base["idle"]:
        print(f"p50 with no other client, hermes-web/baseline: {ours['idle'] / base['idle']:.2f}")
    if ours["busy"] and base["busy"]:
        print(f"p50 with slow clients, hermes-web/baseline: {ours['busy'] / base['busy']:.2f}")
    else:
        print("p50 with slow clients, hermes-web/baseline: n/a (one side never answered)")


if __name__ == "__main__":
    main()
