"""Session state is the core's, so every surface resumes, undoes and forgets the same (issue 35):
one session with an undone turn, resumed by the TUI, ``-c -p``, ``--session N``, the web and an
editor over ACP (``session/load``), sends the model the same messages; the web's DELETE removes
what /forget removes; /export and /copy write through the one ``write_private``."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from textual.pilot import Pilot

from hermes_tui.conversation import Status
from hermes_tui.memory.store import MemoryStore
from hermes_tui.tui.app import HermesApp
from tests.acp_harness import Editor, acp_agent
from tests.acp_harness import run as acp_run
from tests.fakes.server import FakeLLMServer, RecordedRequest, Reply
from tests.helpers import cli
from tests.tui_harness import notices, run, send, send_and_wait, server, wait_for
from tests.web_harness import chat, login, make_app, ndjson, web_env

__all__ = ["make_app", "server", "web_env"]
NEXT = "charlie: what do we have so far?"


def _scripted_session(server: FakeLLMServer) -> int:
    """In the TUI: two turns, the second taken back with /undo; the session's id."""
    server.queue(Reply(text="Alpha noted."), Reply(text="Bravo noted, regrettably."))
    found: list[int] = []

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "alpha: remember apples")
        await send_and_wait(app, pilot, "bravo: a turn to regret")
        found.append(app.session.session_id)
        await send(app, pilot, "/undo")
        await wait_for(pilot, lambda: any("Undid the last turn" in n for n in notices(app)))

    run(scenario)
    return found[0]


def _copy_home(source: Path, target: Path) -> Path:
    """A home holding a copy of ``source``'s memory (each surface continues its own copy)."""
    target.mkdir(parents=True)
    with sqlite3.connect(source / "memory.sqlite3") as old, sqlite3.connect(target / "memory.sqlite3") as new:
        old.backup(new)
    old.close()
    new.close()
    return target


def _sent(server: FakeLLMServer) -> list[tuple[str, str]]:
    """The conversation the turn that asked ``NEXT`` sent (role, text), without the system prompt,
    which says which surface is asking."""
    turns: list[RecordedRequest] = [r for r in server.requests
                                    if r.messages and str(r.messages[-1].get("content", "")).startswith(NEXT)]
    assert len(turns) == 1, [r.messages[-1] for r in server.requests]
    return [(m["role"], str(m.get("content"))) for m in turns[0].messages if m["role"] != "system"]


def test_every_surface_resumes_a_session_with_an_undone_turn_the_same(
        server: FakeLLMServer, hermes_home: Path, workspace: Path, tmp_path: Path,
        make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """/undo's marks lived in a TUI table: only the TUI's own /resume read them, so ``-c -p``,
    ``--session N`` and the web's Resume sent the undone turn to the model again."""
    session_id = _scripted_session(server)
    sent: dict[str, list[tuple[str, str]]] = {}

    def fresh_home(surface: str) -> None:
        server.reset()
        server.queue(Reply(text="So far: apples."))
        monkeypatch.setenv("HERMES_HOME", str(_copy_home(hermes_home, tmp_path / f"home-{surface}")))

    fresh_home("tui")

    async def resumed(app: HermesApp, pilot: Pilot) -> None:
        await send(app, pilot, f"/resume {session_id}")
        await wait_for(pilot, lambda: any("Resumed session" in n for n in notices(app)))
        await send_and_wait(app, pilot, NEXT)

    run(resumed)
    sent["tui"] = _sent(server)

    for surface, args in (("continue", ["-c", "-p", NEXT]), ("session", ["-p", NEXT, "--session", str(session_id)])):
        fresh_home(surface)
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        sent[surface] = _sent(server)

    fresh_home("web")
    client = make_app().test_client()
    token = login(client)
    assert client.post(f"/api/sessions/{session_id}/resume", headers={"X-CSRF-Token": token}).status_code == 200
    assert ndjson(chat(client, token, NEXT))[-1]["type"] == "turn_finished"
    sent["web"] = _sent(server)

    fresh_home("acp")
    editor = Editor()

    async def loaded() -> None:  # an editor loads the session over the Agent Client Protocol
        async with acp_agent(editor, tmp_path / "acp-stderr.log") as (conn, _hello):
            await conn.load_session(cwd=str(workspace), session_id=str(session_id))
            await conn.prompt(session_id=str(session_id), prompt=[text_block(NEXT)])

    acp_run(loaded())
    sent["acp"] = _sent(server)

    assert sent["tui"][0] == ("user", "alpha: remember apples") and sent["tui"][-1][1].startswith(NEXT)
    assert not any("bravo" in text.lower() for text in map(str, sent.values()))
    assert "bravo" not in str(editor.updates).lower()  # nor replayed to the editor
    assert all(sent[surface] == sent["tui"] for surface in ("continue", "session", "web", "acp"))


# -- one write_private ----------------------------------------------------------------------------


def test_export_and_copy_replace_their_target_whole_and_never_follow_a_symlink(
        server: FakeLLMServer, hermes_home: Path, workspace: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """/export and /copy had a write_private of their own: in place (a reader could see half a
    file), no fsync, and through a symlink planted at the target, onto the file it points at."""
    monkeypatch.delenv("TERM_PROGRAM", raising=False)
    monkeypatch.setenv("TERM", "xterm")  # OSC 52 not trusted: /copy writes clipboard.txt
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "clipboard.txt").symlink_to(victim)
    (workspace / "notes").mkdir()
    export = workspace / "notes" / "session.md"
    export.write_text("an earlier export\n")
    os.link(export, tmp_path / "witness")  # the old file's inode: a rename leaves it as it was
    server.queue(Reply(text="The secret answer."))

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "answer me")
        await send(app, pilot, "/copy")
        await send(app, pilot, "/export notes/session.md")
        await wait_for(pilot, lambda: any("Exported session" in n for n in notices(app)))

    run(scenario)
    assert victim.read_text() == "the user's own file\n"  # not written through the link
    clipboard = hermes_home / "clipboard.txt"
    assert not clipboard.is_symlink() and clipboard.read_text() == "The secret answer."
    assert (tmp_path / "witness").read_text() == "an earlier export\n"  # replaced, not rewritten in place
    assert "The secret answer." in export.read_text()
    for path in (clipboard, export):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in export.parent.iterdir()] == ["session.md"]  # no temporary file left


# -- one forget -----------------------------------------------------------------------------------


def test_the_webs_delete_forgets_a_session_as_forget_does_exported_files_included(
        server: FakeLLMServer, hermes_home: Path, workspace: Path, make_app: Any) -> None:
    """The web's DELETE removed the rows but left the files /export and /copy wrote of the session,
    and its prompts in the TUI's prompt history."""
    server.queue(Reply(text="Kept."))  # later requests (the first session's summary, the answer) get "ok"
    found: list[int] = []
    history = hermes_home / "tui_history.jsonl"

    async def scenario(app: HermesApp, pilot: Pilot) -> None:
        await send_and_wait(app, pilot, "other matter: keep this one")
        await send(app, pilot, "/new")
        await send_and_wait(app, pilot, "the vault code?")
        found.append(app.session.session_id)
        await send(app, pilot, "/export")
        await wait_for(pilot, lambda: any("Exported session" in n for n in notices(app)))

    run(scenario)
    (session_id,) = found
    exported = hermes_home / "exports" / f"session-{session_id}.md"
    assert "vault code" in exported.read_text() and "vault" in history.read_text()
    client = make_app().test_client()
    token = login(client)
    response = client.delete(f"/api/sessions/{session_id}", headers={"X-CSRF-Token": token})
    assert response.status_code == 200
    assert not exported.exists()
    assert "vault" not in history.read_text() and "keep this one" in history.read_text()  # the TUI's ↑ list
    assert response.get_json() == {"deleted": session_id, "messages": 2, "files": 1}
    with sqlite3.connect(hermes_home / "memory.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM session_files").fetchone() == (0,)
    conn.close()


def test_forget_session_removes_every_trace_the_store_holds(tmp_path: Path) -> None:
    from hermes_tui.background import Background
    from hermes_tui.learning import pending
    from hermes_tui.memory import exports
    from hermes_tui.memory.forget import forget_session
    from hermes_tui.memory.usage import UsageLedger

    path = tmp_path / "memory.sqlite3"
    with MemoryStore(path) as memory:
        gone, kept = memory.new_session(), memory.new_session()
        for session, word in ((gone, "kumquat"), (kept, "papaya")):
            ids = [memory.add_message(session, "user", f"question {session}"),
                   memory.add_message(session, "assistant", f"answer {word}")]
            memory.mark_undone(ids[1:])
            memory.add_compaction(session, ids[0], "summary")
            pending.mark(memory, session, told=False)
            UsageLedger(path, Background()).add(session, "m", 10, 5, 0, 0.01).join()
            exports.write(path, session, tmp_path / f"export-{session}.md", f"session {session}")
        forgotten = forget_session(memory, gone)
        assert (forgotten.messages, forgotten.prompts) == (2, frozenset({f"question {gone}"}))
        assert forgotten.files == (tmp_path / f"export-{gone}.md",) and not forgotten.files[0].exists()
        assert memory.get_session(gone) is None and memory.search("kumquat") == []
        assert [m.status for m in memory.get_messages(kept)] == [Status.OK, Status.UNDONE]
        with pytest.raises(KeyError):
            forget_session(memory, gone)
    with sqlite3.connect(path) as conn:
        for table in ("messages", "compactions", "pending_summaries", "session_usage", "session_files"):
            (left,) = conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = ?", (gone,)).fetchone()
            assert left == 0, table
            (others,) = conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = ?", (kept,)).fetchone()
            assert others > 0, table
    conn.close()
    assert (tmp_path / f"export-{kept}.md").exists()
