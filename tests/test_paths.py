"""Secret paths and race-free confinement of the file tools, on a real file system."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from hermes_tui.agent.paths import check_not_secret
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.logs import log_folder
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager

SECRET_FILES = [
    ".env", ".env.local", ".env.production", "sub/.env", ".ENV", ".netrc", "_netrc", ".git-credentials",
    ".pgpass", ".npmrc", ".pypirc", "id_rsa", "id_ed25519", ".ssh/config", ".ssh/known_hosts", "server.pem",
    "tls.key", "cert.p12", ".aws/credentials", ".docker/config.json", ".kube/config", ".gnupg/pubring.kbx",
    ".config/gh/hosts.yml",
]
ORDINARY_FILES = ["notes.txt", "id_rsa.pub", "environment.md", "env.py", "config", ".aws/config", "keys.txt",
                  "docker/config.json", "src/identity.py", "README.md"]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ToolRegistry, Path]:
    ws = tmp_path / "ws"
    home = ws / ".hermes"  # started from ~: HERMES_HOME sits inside the workspace
    for name in [*SECRET_FILES, *ORDINARY_FILES, ".hermes/.env", ".hermes/skills/x/SKILL.md"]:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("SECRET-CONTENT" if name in SECRET_FILES or ".hermes" in name else "plain")
    registry = ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "skills"), home=home)
    return registry, ws


@pytest.mark.parametrize("name", SECRET_FILES)
def test_secret_files_are_refused_with_one_line(setup: tuple[ToolRegistry, Path], name: str) -> None:
    registry, ws = setup
    result = registry.execute("read_file", {"path": name})
    assert not result.ok and "SECRET-CONTENT" not in result.output
    assert "refused" in result.output and "\n" not in result.output
    written = registry.execute("write_file", {"path": name, "content": "HERMES_WEB_ENABLE_SHELL=true"})
    assert not written.ok and "refused" in written.output
    edited = registry.execute("edit_file", {"path": name, "old": "SECRET", "new": "x"})
    assert not edited.ok and "refused" in edited.output and "SECRET-CONTENT" not in edited.output
    for search in ("grep", "glob"):  # named outright or found by a search: never shown
        assert "SECRET-CONTENT" not in registry.execute("grep", {"pattern": "SECRET", "path": name}).output
        shown = registry.execute(search, {"pattern": "*" if search == "glob" else "SECRET"}).output.splitlines()
        assert name not in shown and "SECRET-CONTENT" not in str(shown)
    assert (ws / name).read_text() == "SECRET-CONTENT"


@pytest.mark.parametrize("name", ORDINARY_FILES)
def test_ordinary_files_are_not_secret(setup: tuple[ToolRegistry, Path], name: str) -> None:
    registry, _ = setup
    assert registry.execute("read_file", {"path": name}).output == "    1\tplain"


@pytest.mark.parametrize("name", [".hermes", ".hermes/.env", ".hermes/skills/x/SKILL.md", ".hermes/memory.sqlite3"])
def test_hermes_home_is_refused(setup: tuple[ToolRegistry, Path], name: str) -> None:
    registry, ws = setup
    for tool, args in [("read_file", {"path": name}), ("list_dir", {"path": name}),
                       ("write_file", {"path": name, "content": "x"})]:
        result = registry.execute(tool, args)
        assert not result.ok and "Hermes' own folder" in result.output, (tool, result.output)
    assert not (ws / ".hermes" / "memory.sqlite3").exists()


def test_links_to_secrets_are_refused(setup: tuple[ToolRegistry, Path]) -> None:
    registry, ws = setup
    (ws / "innocent.txt").symlink_to(ws / ".env")
    (ws / "home_link").symlink_to(ws / ".hermes")
    for path in ["innocent.txt", "home_link/.env", "home_link"]:
        result = registry.execute("read_file", {"path": path})
        assert not result.ok and "SECRET-CONTENT" not in result.output


def test_new_env_files_cannot_be_written(setup: tuple[ToolRegistry, Path]) -> None:
    registry, ws = setup
    for name in ["fresh/.env", ".env.new"]:
        assert not registry.execute("write_file", {"path": name, "content": "HERMES_API_BASE=http://evil"}).ok
        assert not (ws / name).exists()


def test_check_not_secret_is_usable_alone(tmp_path: Path) -> None:
    assert check_not_secret(tmp_path / "skills" / "x" / "scripts" / "run.sh") is None
    assert "environment file" in (check_not_secret(tmp_path / "skills" / "x" / ".env") or "")
    assert check_not_secret(tmp_path / "h" / "skills", home=tmp_path / "h") is not None


def test_fifo_and_devices_are_refused(setup: tuple[ToolRegistry, Path]) -> None:
    registry, ws = setup
    os.mkfifo(ws / "pipe")
    (ws / "null").symlink_to("/dev/null")  # outside anyway; a device inside is refused by kind
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(registry.execute("read_file", {"path": "pipe"}).output))
    worker.start()
    worker.join(10)
    assert done and "not a regular file" in done[0]  # returned at once instead of blocking forever
    assert "not a regular file" in registry.execute("write_file", {"path": "pipe", "content": "x"}).output \
        or "FIFO" in registry.execute("write_file", {"path": "pipe", "content": "x"}).output
    assert not registry.execute("read_file", {"path": "null"}).ok


def test_swap_race_never_leaves_the_workspace(tmp_path: Path) -> None:
    """A thread keeps swapping a folder and a symlink between inside and outside targets while the
    tools read and write through them: every read is inside content or a refusal, nothing lands outside."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    for folder, text in [(ws / "inside", "inside"), (outside, "OUTSIDE-SECRET")]:
        folder.mkdir(parents=True)
        (folder / "secret.txt").write_text(text)
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside")
    (ws / "link").symlink_to(ws / "inside")
    registry = ToolRegistry(ws, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "s"))
    stop = threading.Event()

    errors: list[BaseException] = []

    def swap() -> None:
        d, link, tmp = ws / "d", ws / "link", ws / "tmp"
        try:
            while not stop.is_set():
                tmp.symlink_to(outside)
                tmp.replace(link)  # link now points outside
                d.rename(ws / "d.real")
                tmp.symlink_to(outside)
                tmp.replace(d)  # d is now a symlink to outside
                tmp.symlink_to(ws / "inside")
                tmp.replace(link)
                d.unlink()
                (ws / "d.real").rename(d)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    swapper = threading.Thread(target=swap)
    swapper.start()
    ok = 0
    try:
        for i in range(1500):
            for path in ("d/secret.txt", "link/secret.txt"):
                result = registry.execute("read_file", {"path": path})
                assert "OUTSIDE" not in result.output
                ok += result.ok
            registry.execute("write_file", {"path": f"link/w{i}.txt", "content": "x"})
    finally:
        stop.set()
        swapper.join()
    assert not errors
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert ok > 0  # the race was really run: some reads went through


def test_log_folder_is_refused_when_started_from_home(tmp_path: Path) -> None:
    userhome = Path(os.environ["HOME"])  # conftest points HOME at a throw-away folder
    log = log_folder() / "hermes.log"
    log.parent.mkdir(parents=True)
    log.write_text("tool output quoted in a log line")
    registry = ToolRegistry(userhome, MemoryStore(tmp_path / "m.sqlite3"), SkillManager(tmp_path / "s"),
                            home=userhome / ".hermes")
    result = registry.execute("read_file", {"path": str(log.relative_to(userhome))})
    assert not result.ok and "Hermes' own folder" in result.output and "quoted" not in result.output


def test_sockets_are_refused(setup: tuple[ToolRegistry, Path]) -> None:
    registry, ws = setup
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(ws / "sock"))
        result = registry.execute("read_file", {"path": "sock"})
        assert not result.ok and "FIFO or device" in result.output
    finally:
        server.close()
