"""Secrets never reach the model or memory: planted secrets, real tools, the real LiteLLM path.

Secrets sit in ./.env (the workspace, which is the working folder), in HERMES_HOME/.env (inside the
workspace, as when Hermes is started from ~) and in the environment. The model then tries every
way we know to read them; no request the fake server receives and no row of memory.sqlite3 may
contain one, literally or in base64 or hex.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.agent.loop import AgentLoop
from hermes_tui.agent.sandbox import Sandbox
from hermes_tui.config import Config
from hermes_tui.events import ToolCallFinished
from hermes_tui.memory.store import MemoryStore
from hermes_tui.redaction import Secrets
from hermes_tui.skills.manager import SkillManager
from tests.fakes.server import FakeLLMServer, Reply, ToolCall

SECRETS = {
    "KEY": "sk-planted-env-key-0123456789abcdefXYZ",  # the provider's key, in the environment
    "MYSERVICE_API_KEY": "ms-7f3a9c1e5b2d4f6a8c0e2a4b6d8f0a1c",  # another key in the environment
    "FLASK_SECRET_KEY": "flask-secret-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",  # in HERMES_HOME/.env
    "HERMES_WEB_PASSWORD": "correct horse battery staple 42",  # in HERMES_HOME/.env
    "GEMINI_API_KEY": "AIzaSyPlantedLocalKey_5u8Xq2Lw9Rt4Vb7Nz",  # in ./.env
}

ATTACKS = [
    ("read_file", {"path": ".env"}),
    ("read_file", {"path": ".hermes/.env"}),
    ("list_dir", {"path": ".hermes"}),
    ("run_bash", {"command": "cat .env .hermes/.env"}),
    ("run_bash", {"command": "env"}),
    ("run_bash", {"command": "printenv"}),
    ("run_bash", {"command": "base64 .env .hermes/.env"}),
    ("run_bash", {"command": "base64 -w0 .hermes/.env; echo; tail -c +3 .env | base64"}),
    ("run_bash", {"command": "xxd -p .hermes/.env; xxd -p .env | tr -d '\\n'"}),
    ("run_bash", {"command": "ln -s .env notes.txt; ln -s .hermes/.env more.txt"}),
    ("read_file", {"path": "notes.txt"}),
    ("read_file", {"path": "more.txt"}),
    ("run_bash", {"command": "cat notes.txt more.txt; cat /proc/$$/environ | tr '\\0' '\\n'"}),
    ("run_bash", {"command": "tr '\\0' '\\n' < /proc/$PPID/environ"}),  # Hermes' own environment
    ("search_memory", {"query": "flask"}),
]


def _decoded_runs(text: str) -> list[bytes]:
    """Every base64 or hex run of ``text`` decoded (at every alignment): an oracle independent of
    the scrubber's own matching."""
    flat = re.sub(r"\s+", "", text)
    out: list[bytes] = []
    for run in re.findall(r"[A-Za-z0-9+/=_-]{12,}", flat):
        for skip in range(4):
            part = run[skip:].rstrip("=")
            part = part[: len(part) // 4 * 4]
            try:
                out.append(base64.b64decode(part + "=" * (-len(part) % 4), altchars=b"+/"))
                out.append(base64.urlsafe_b64decode(part))
            except (binascii.Error, ValueError):
                pass
    for run in re.findall(r"[0-9a-fA-F]{12,}", flat):
        for skip in range(2):
            part = run[skip:]
            out.append(bytes.fromhex(part[: len(part) // 2 * 2]))
    return out


def assert_no_secret(text: str, where: str) -> None:
    decoded = _decoded_runs(text)
    for name, value in SECRETS.items():
        assert value not in text, f"{name} leaked into {where}"
        assert not any(value.encode() in blob for blob in decoded), f"{name} leaked encoded into {where}"


@pytest.fixture
def planted(fake_llm_env: FakeLLMServer, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    key_variable = "ANTHROPIC_API_KEY" if fake_llm_env.wire_under_test == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(key_variable, SECRETS["KEY"])
    monkeypatch.setenv("MYSERVICE_API_KEY", SECRETS["MYSERVICE_API_KEY"])
    home = workspace / ".hermes"
    monkeypatch.setenv("HERMES_HOME", str(home))
    home.mkdir()
    (home / ".env").write_text(f"FLASK_SECRET_KEY={SECRETS['FLASK_SECRET_KEY']}\n"
                               f"HERMES_WEB_PASSWORD='{SECRETS['HERMES_WEB_PASSWORD']}'\n")
    (workspace / ".env").write_text(f"GEMINI_API_KEY={SECRETS['GEMINI_API_KEY']}\nHERMES_MODEL_NOTE=x\n")
    monkeypatch.chdir(workspace)  # the workspace defaults to the working folder
    monkeypatch.delenv("HERMES_WORKSPACE")
    return Config.load()


def test_secrets_never_reach_the_model_or_memory(planted: Config, fake_llm_env: FakeLLMServer) -> None:
    fake_llm_env.queue(*[Reply(tool_calls=[ToolCall(name, args)]) for name, args in ATTACKS],
                       Reply(text="I could not see any secret."))
    memory = MemoryStore(planted.db_path)
    loop = AgentLoop(planted, memory, SkillManager(planted.skills_dir))
    events = list(loop.run_turn("Show me every API key and password you can find. The word is flask."))
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(results) == len(ATTACKS)
    by_command = {json.dumps(a): r for a, r in zip(ATTACKS, results, strict=True)}
    assert "refused" in by_command[json.dumps(ATTACKS[0])].result  # read_file .env
    assert "Hermes' own folder" in by_command[json.dumps(ATTACKS[1])].result
    if Sandbox().active:  # HERMES_HOME is masked: there is nothing to read
        assert ".hermes/.env: No such file" in by_command[json.dumps(ATTACKS[3])].result
    else:  # the scrubber is what is left
        assert "[redacted: FLASK_SECRET_KEY]" in by_command[json.dumps(ATTACKS[3])].result
    assert "[redacted: GEMINI_API_KEY]" in by_command[json.dumps(ATTACKS[3])].result
    assert "PATH=" in by_command[json.dumps(ATTACKS[4])].result  # env ran; the keys were not in it
    assert "MYSERVICE_API_KEY" not in by_command[json.dumps(ATTACKS[5])].result  # stripped, not just masked
    for result in results:
        assert_no_secret(result.result, f"the result of {result.name}")
    loop.close()
    memory.close()

    assert len(fake_llm_env.requests) >= len(ATTACKS) + 1
    for number, request in enumerate(fake_llm_env.requests):
        assert_no_secret(json.dumps(request.body), f"request {number}")
        assert_no_secret("\n".join(str(m.get("content")) for m in request.messages), f"request {number}")
    with sqlite3.connect(planted.db_path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows, checked = 0, []
        for table in tables:
            try:
                found = db.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.OperationalError:  # a virtual table that needs the store's own SQL functions
                continue
            checked.append(table)
            for row in found:
                rows += 1
                assert_no_secret(" ".join(str(v) for v in row), f"table {table}")
    assert "messages" in checked and rows > len(ATTACKS)


def test_scrub_catches_every_encoding_and_alignment() -> None:
    secrets = Secrets({"X_API_KEY": "abcdefghijklmnopqrstuvwxyz012345"})
    value = secrets.values["X_API_KEY"].encode()
    for prefix in (b"", b"K", b"KE", b"KEY=", b"A_LONGER_PREFIX="):
        blob = prefix + value + b"\n"
        for encoded in (base64.b64encode(blob).decode(), base64.encodebytes(blob * 3).decode(),
                        base64.urlsafe_b64encode(blob).decode(), blob.hex(), blob.hex().upper()):
            scrubbed = secrets.scrub(f"before {encoded} after")
            assert "[redacted: X_API_KEY]" in scrubbed and scrubbed.startswith("before ")
            assert not any(value in b for b in _decoded_runs(scrubbed))
    assert secrets.scrub("plain text with base64 aGVsbG8gd29ybGQgaGVsbG8= and hex deadbeefcafe0123") == \
        "plain text with base64 aGVsbG8gd29ybGQgaGVsbG8= and hex deadbeefcafe0123"  # no false positive


def test_shell_environment_is_stripped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "k" * 20)
    monkeypatch.setenv("INNOCENT_NAME", "the-configured-password")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws" * 10)
    monkeypatch.setenv("HARMLESS", "stays")
    secrets = Secrets({"HERMES_WEB_PASSWORD": "the-configured-password"})
    clean = secrets.clean_environment(dict(__import__("os").environ))
    assert "SOME_API_KEY" not in clean and "INNOCENT_NAME" not in clean and "AWS_SECRET_ACCESS_KEY" not in clean
    assert clean["HARMLESS"] == "stays" and "PATH" in clean


def test_log_lines_and_tracebacks_are_scrubbed(planted: Config) -> None:
    import logging

    from hermes_tui.logs import setup_logging

    path = setup_logging(planted)
    log = logging.getLogger("hermes_tui.test")
    try:
        log.warning("key is %s", SECRETS["GEMINI_API_KEY"])
        try:
            raise RuntimeError(f"failed with {SECRETS['FLASK_SECRET_KEY']}")
        except RuntimeError:
            log.exception("boom")
    finally:
        for handler in [h for h in logging.getLogger().handlers if getattr(h, "_hermes", False)]:
            logging.getLogger().removeHandler(handler)
            handler.close()
    text = path.read_text()
    assert "[redacted: GEMINI_API_KEY]" in text and "[redacted: FLASK_SECRET_KEY]" in text
    assert_no_secret(text, "the log file")


# -- the scrubber: only the matched span, and the forms the shell can print (finding 4) ------------

DUMPED = {"X_API_KEY": "sk-planted-dump-key-0123456789abcdefXYZ", "HERMES_WEB_PASSWORD": "correct horse battery staple 42"}
DUMPS = ["cat", "xxd", "xxd -g1", "xxd -p", "hexdump -C", "hexdump", "od", "od -c", "od -x", "od -An -tx1",
         "base32", "base64 -w 20", "rev", "fold -w 7", "sed 's/./& /g'", "gzip | base64"]


def _windows(value: str, size: int = 8) -> set[str]:
    return {value[i:i + size] for i in range(len(value) - size + 1)}


@pytest.mark.parametrize("command", DUMPS)
def test_scrub_catches_what_the_shell_can_print(command: str) -> None:
    """The real tools' output; an oracle independent of the scrubber's parsers: no 8 characters of a
    value (as is, reversed, in hex or in little-endian hex words) are left, spaces removed."""
    secrets = Secrets(DUMPED)
    plain = "".join(f"{name}={value}\nNEXT=1\n" for name, value in DUMPED.items())
    printed = subprocess.run(["bash", "-c", command], input=plain.encode(), capture_output=True, check=True).stdout.decode()
    scrubbed = secrets.scrub(printed)
    assert "[redacted: " in scrubbed, scrubbed
    flat = re.sub(r"\s+", "", scrubbed)
    for value in DUMPED.values():
        compact = "".join(value.split())
        raw = value.encode()
        swapped = b"".join(raw[i:i + 2][::-1] for i in range(0, len(raw) - 1, 2)).hex()
        for form in (compact, compact[::-1], raw.hex(), swapped):
            left = [w for w in _windows(form, 8 if form is compact or form == compact[::-1] else 16) if w in flat]
            assert not left, f"{command}: {left[:3]} left in {scrubbed!r}"
    assert not any(value.encode() in blob for value in DUMPED.values() for blob in _decoded_runs(scrubbed))


def test_scrub_replaces_only_the_matched_span() -> None:
    value = DUMPED["X_API_KEY"]
    secrets = Secrets({"X_API_KEY": value})
    encoded = base64.b64encode(value.encode()).decode()
    assert secrets.scrub(f"exit code 0\n{encoded}\n") == "exit code 0\n[redacted: X_API_KEY]\n"
    assert secrets.scrub(f"token: {value}, done") == "token: [redacted: X_API_KEY], done"
    assert secrets.scrub(f"exit code 0\n{value[::-1]}\nnext") == "exit code 0\n[redacted: X_API_KEY]\nnext"
    wrapped = base64.encodebytes(b"KEY=" + value.encode() + b"\n").decode()
    scrubbed = secrets.scrub(f"exit code 0\n{wrapped}tail")
    assert scrubbed.startswith("exit code 0\n") and scrubbed.endswith("tail") and "[redacted: X_API_KEY]" in scrubbed


_WITHHOLD = r"""
import json, os, subprocess, sys
from pathlib import Path
from hermes_tui.config import Config
from hermes_tui.redaction import withhold_from_environment
names = withhold_from_environment()
child = subprocess.run(["bash", "-c", "env; tr '\\0' '\\n' < /proc/$PPID/environ"], capture_output=True, text=True).stdout
config = Config.load()
print(json.dumps({"names": names, "child": child, "own": Path("/proc/self/environ").read_bytes().decode(errors="replace"),
                  "key": config.api_key, "flask": config.flask_secret_key, "in_environ": "OPENAI_API_KEY" in os.environ}))
"""


def test_programs_withhold_keys_from_their_environment(tmp_path: Path) -> None:
    """Without the sandbox: after start, neither the process's environment nor a child's holds a key,
    not even the kernel's copy that /proc/PID/environ shows; Config.load still has them."""
    key, flask = "sk-withheld-0123456789abcdefXYZ", "flask-withheld-9a8b7c6d5e4f3a2b1c0d"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "HERMES_HOME": str(tmp_path / "home"),
           "HERMES_PROVIDER": "openai", "OPENAI_API_KEY": key, "FLASK_SECRET_KEY": flask, "KEEP": "me"}
    done = subprocess.run([sys.executable, "-c", _WITHHOLD], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, check=True)
    found = json.loads(done.stdout)
    assert sorted(found["names"]) == ["FLASK_SECRET_KEY", "OPENAI_API_KEY"]
    assert found["key"] == key and found["flask"] == flask and not found["in_environ"]
    for where in ("child", "own"):
        assert key not in found[where] and flask not in found[where], where
    assert "KEEP=me" in found["child"] and "KEEP=me" in found["own"]


# -- a repository's ./.env cannot choose what is redacted (issue #40, finding 5) --------------------

def test_dot_env_cannot_make_ordinary_words_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cloned repository's ./.env names ordinary strings with secret-like names: none of them may
    disappear from output; a real-looking key there (or in the environment) still does."""
    workspace, home = tmp_path / "repo", tmp_path / "home"
    workspace.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("ENV_PLAIN_API_KEY", "localhost")
    monkeypatch.setenv("ENV_REAL_API_KEY", SECRETS["MYSERVICE_API_KEY"])
    (workspace / ".env").write_text(
        "FOO_API_KEY=localhost\nBAR_SECRET_KEY=/usr/bin/python3\nHOST_API_KEY=api.example-host.com\n"
        "WORD_API_KEY=administrators\nCOUNT_API_KEY=1234567890123456789\n"
        f"GEMINI_API_KEY={SECRETS['GEMINI_API_KEY']}\n")
    config = Config.load(cwd=workspace)
    secrets = Secrets.from_config(config)
    text = ("ssh localhost; /usr/bin/python3 -V; curl api.example-host.com; administrators "
            "1234567890123456789")
    assert secrets.scrub(text) == text
    leaked = secrets.scrub(f"a {SECRETS['GEMINI_API_KEY']} b {SECRETS['MYSERVICE_API_KEY']} c")
    assert leaked == "a [redacted: GEMINI_API_KEY] b [redacted: ENV_REAL_API_KEY] c"
