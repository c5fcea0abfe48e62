"""Images attached to a message (``agent/attachments.py``): they reach the fake server as image content
in both wire formats, fitted to the provider's limits, are sent again when the session is resumed,
and go when it is forgotten; a file that is no image is refused before anything is sent."""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from hermes_tui import warm
from hermes_tui.memory import attachments as kept
from hermes_tui.memory.forget import forget_session
from hermes_tui.memory.store import MemoryStore
from hermes_tui.providers import provider
from tests.fakes.fixtures import on_wire
from tests.fakes.server import TEXT_ONLY_REFUSAL, FakeLLMServer, Reply
from tests.helpers import cli, run_cli, wait_until
from tests.tui_harness import server
from tests.web_harness import llm, make_app, web_env

__all__ = ["llm", "make_app", "server", "web_env"]


def picture(path: Path, size: tuple[int, int] = (40, 30), kind: str = "PNG", color: str = "red") -> Path:
    Image.new("RGB", size, color).save(path, kind)
    return path


def dimensions(data: bytes) -> tuple[str, tuple[int, int]]:
    with Image.open(io.BytesIO(data)) as image:
        return str(image.format), image.size


@pytest.fixture
def env(fake_llm_env: FakeLLMServer, hermes_home: Path, workspace: Path) -> FakeLLMServer:
    return fake_llm_env


def test_an_image_reaches_the_server_as_image_content(env: FakeLLMServer, tmp_path: Path) -> None:
    shot = picture(tmp_path / "shot.png")
    photo = picture(tmp_path / "photo.bin", (20, 10), "JPEG", "blue")  # sniffed by content, not by name
    env.queue(Reply(text="A red square."))
    result = cli("-p", "What is in these?", "--image", str(shot), "--image", str(photo))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "A red square.\n"
    (request,) = env.requests
    assert request.images == [("user", "image/png", shot.read_bytes()), ("user", "image/jpeg", photo.read_bytes())]
    assert "What is in these?" in request.messages[-1]["content"]


def test_a_large_image_arrives_scaled_to_the_providers_limit(env: FakeLLMServer, tmp_path: Path) -> None:
    big = picture(tmp_path / "wide.png", (4000, 1000))
    result = cli("-p", "Describe it", "--image", str(big))
    assert result.returncode == 0, result.stderr
    ((_role, mime, data),) = env.requests[0].images
    side = provider(os.environ["HERMES_PROVIDER"]).image_side  # 1568 for Anthropic, 2048 for OpenAI
    assert mime == "image/png"
    assert dimensions(data) == ("PNG", (side, side // 4))


def test_a_file_that_is_no_image_is_refused_before_anything_is_sent(env: FakeLLMServer, tmp_path: Path,
                                                                    hermes_home: Path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("not a picture at all\n")
    result = cli("-p", "Look", "--image", str(notes))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"hermes: {notes} is not an image Hermes can send (PNG, JPEG, GIF or WebP)."]
    missing = cli("-p", "Look", "--image", str(tmp_path / "gone.png"))
    assert missing.stderr.splitlines() == [f"hermes: {tmp_path / 'gone.png'}: no such file."]
    huge = tmp_path / "huge.png"
    huge.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * (6 * 1024 * 1024))
    too_big = cli("-p", "Look", "--image", str(huge))
    assert too_big.stderr.splitlines() == [f"hermes: {huge} is 6.0 MB: an image may be at most 5.0 MB."]
    assert env.requests == []
    assert not (hermes_home / "memory.sqlite3").exists() or not MemoryStore(
        hermes_home / "memory.sqlite3").list_sessions()


def test_an_image_that_cannot_be_kept_is_one_line_and_nothing_is_sent(env: FakeLLMServer, tmp_path: Path,
                                                                       hermes_home: Path) -> None:
    """Keeping the bytes fails (here HERMES_HOME/attachments is a file; a full disk fails the same
    way): one readable line before anything is sent, not a traceback."""
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "attachments").write_text("in the way\n")
    shot = picture(tmp_path / "shot.png")

    result = cli("-p", "Look", "--image", str(shot))

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"hermes: {shot} could not be kept in {hermes_home / 'attachments'} (Not a directory)."]
    assert env.requests == []


def test_a_text_only_model_says_so_in_one_line_and_the_message_is_kept(env: FakeLLMServer, tmp_path: Path,
                                                                       hermes_home: Path) -> None:
    env.text_only = True
    result = cli("-p", "What does the chart show?", "--image", str(picture(tmp_path / "chart.png")))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("hermes: ")]
    (line,) = errors
    assert TEXT_ONLY_REFUSAL[env.wire_under_test or "openai"] in line and "/model" in line
    assert "Traceback" not in result.stderr
    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        (session,) = memory.list_sessions()
        (message,) = memory.get_messages(session.id)
        assert message.content == "What does the chart show?" and message.images[0].path.endswith("chart.png")


@on_wire("anthropic")
def test_a_resumed_session_sends_its_images_again_and_forgetting_removes_them(
        env: FakeLLMServer, tmp_path: Path, hermes_home: Path) -> None:
    shot = picture(tmp_path / "shot.png")
    assert cli("-p", "Remember this picture", "--image", str(shot)).returncode == 0
    again = cli("-c", "-p", "What colour was it?")
    assert again.returncode == 0, again.stderr
    (turn,) = [r for r in env.requests if r.messages[-1]["content"].startswith("What colour was it?")]
    assert turn.images == [("user", "image/png", shot.read_bytes())]  # with the first message, as before
    assert [m["content"].split("\n")[0] for m in turn.messages if m["role"] == "user"] == [
        "Remember this picture", "What colour was it?"]

    with MemoryStore(hermes_home / "memory.sqlite3") as memory:
        (session,) = memory.list_sessions()
        (ref,) = [i for m in memory.get_messages(session.id) for i in m.images]
        assert ref.path == str(shot) and ref.mime == "image/png"
        stored = kept.path_of(hermes_home, ref.sha256)
        assert stored.read_bytes() == shot.read_bytes()
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
        other = memory.new_session()
        memory.add_message(other, "user", "the same picture", images=[ref])
        forget_session(memory, session.id)
        assert stored.exists()  # another session refers to the same bytes
        forget_session(memory, other)
        assert not stored.exists()


# -- the default configuration: the warm helper carries the request ---------------------------


@pytest.fixture
def helper_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    runtime = Path(tempfile.mkdtemp(prefix="hi-", dir="/tmp"))  # a socket's path must fit in 107 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("HERMES_HELPER", raising=False)  # conftest turns it off for ordinary tests
    yield
    warm.stop()
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.timeout(900)  # the helper's first start imports litellm: a minute loaded
@on_wire("openai")
def test_the_warm_helper_carries_images(env: FakeLLMServer, helper_on: None, tmp_path: Path) -> None:
    shot = picture(tmp_path / "shot.webp", (30, 30), "WEBP", "green")
    big = picture(tmp_path / "big.jpg", (3000, 2000), "JPEG")
    runs: list[subprocess.CompletedProcess[str]] = []
    for _ in range(2):  # the first answers in its own process and leaves the helper; the second uses it
        runs.append(run_cli("-p", "What are these?", "--image", str(shot), "--image", str(big), timeout=600))
        assert runs[-1].returncode == 0, runs[-1].stderr
        assert wait_until(lambda: warm.status() is not None)
    for request in env.requests[-2:]:
        (_, webp, webp_data), (_, jpeg, jpeg_data) = request.images
        assert (webp, webp_data) == ("image/webp", shot.read_bytes())
        assert jpeg == "image/jpeg" and dimensions(jpeg_data) == ("JPEG", (2048, 1365))


# -- the terminal app: /image, a pasted path, resume ------------------------------------------


def test_tui_attaches_by_command_and_by_pasted_path_and_resume_sends_again(server: FakeLLMServer,
                                                                          tmp_path: Path) -> None:
    from textual import events

    from tests.tui_harness import notices, run, send, send_and_wait, wait_for

    shot = picture(tmp_path / "shot one.png")
    dropped = picture(tmp_path / "dropped.gif", (16, 16), "GIF", "blue")
    text = tmp_path / "notes.txt"
    text.write_text("plain text\n")

    def said(app: Any) -> list[str]:
        return [line.split(" ", 1)[1] for line in notices(app)]  # without the icon

    async def scenario(app: Any, pilot: Any) -> None:
        await send(app, pilot, f"/image {text}")
        await wait_for(pilot, lambda: any(n.startswith("Not attached") for n in said(app)))
        assert said(app)[-1] == f"Not attached: {text} is not an image Hermes can send (PNG, JPEG, GIF or WebP)."
        await send(app, pilot, f"/image {shot}")
        await wait_for(pilot, lambda: said(app)[-1].startswith("Attached"))
        assert said(app)[-1].startswith(f"Attached {shot} (PNG, 40×30): it goes with your next message")
        app.chat.prompt.post_message(events.Paste(f"file://{dropped}"))  # a file dropped on the terminal
        await wait_for(pilot, lambda: said(app)[-1].startswith("Attached the pasted path"))
        assert app.chat.prompt.text == ""  # the path attached, not typed
        await send_and_wait(app, pilot, "What are these?")
        assert said(app)[-2:] == [f"with the image {shot} (PNG, 40×30)",
                                  f"with the image file://{dropped} (GIF, 16×16)"]
        assert server.requests[-1].images == [("user", "image/png", shot.read_bytes()),
                                              ("user", "image/gif", dropped.read_bytes())]
        await send(app, pilot, "/image")
        assert said(app)[-1].startswith("No image is attached")  # they went with that message
        session = app.session.session_id
        await send(app, pilot, "/new")
        await wait_for(pilot, lambda: app.session.session_id != session)
        await send(app, pilot, f"/resume {session}")
        await wait_for(pilot, lambda: app.session.session_id == session)
        assert f"with the image {shot} (PNG, 40×30)" in said(app)  # the resumed view names them
        await send_and_wait(app, pilot, "And now?")
        assert [mime for _, mime, _ in server.requests[-1].images] == ["image/png", "image/gif"]
        await send(app, pilot, f"/image {shot}")
        await wait_for(pilot, lambda: said(app)[-1].startswith("Attached"))
        await send_and_wait(app, pilot, "A third look")
        await send_and_wait(app, pilot, "/retry")  # the retried message's image goes with it again
        assert [mime for _, mime, _ in server.requests[-1].images] == ["image/png", "image/gif", "image/png"]
        users = [m["content"].split("\n")[0] for m in server.requests[-1].messages if m["role"] == "user"]
        assert users == ["What are these?", "And now?", "A third look"]
        await send_and_wait(app, pilot, "/undo")
        assert app.chat.prompt.text == "A third look"
        await send(app, pilot, "/image")  # back in the prompt, with its image attached again
        assert said(app)[-1] == f"Attached to your next message: {shot} (PNG, 40×30) (/image clear drops them)."

    run(scenario)


# -- the web dashboard: the upload button's endpoint ------------------------------------------


def test_web_upload_attaches_to_the_next_message_behind_login_and_csrf(make_app: Any, llm: FakeLLMServer,
                                                                      tmp_path: Path) -> None:
    from tests.web_harness import chat, login, ndjson

    app = make_app()
    client = app.test_client()
    shot = tmp_path / "screen.png"  # noise: a PNG of ~3.7 MB, far over the app's 256 KB body cap
    Image.frombytes("RGB", (2500, 500), os.urandom(2500 * 500 * 3)).save(shot, "PNG")
    assert 1024 * 1024 < shot.stat().st_size < 5 * 1024 * 1024

    def upload(data: bytes, name: str, token: str | None) -> Any:
        headers = {"X-CSRF-Token": token} if token else {}
        return client.post("/api/images", data={"image": (io.BytesIO(data), name)}, headers=headers,
                           content_type="multipart/form-data")

    assert upload(shot.read_bytes(), "screen.png", None).status_code == 401  # not logged in
    token = login(client)
    assert upload(shot.read_bytes(), "screen.png", None).status_code == 403  # no CSRF token
    refused = upload(b"%PDF-1.7 not an image", "report.png", token)
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "report.png is not an image Hermes can send (PNG, JPEG, GIF or WebP)."
    too_big = upload(b"\x89PNG\r\n\x1a\n" + b"\0" * (6 * 1024 * 1024), "huge.png", token)
    assert too_big.status_code == 413

    done = upload(shot.read_bytes(), "screen.png", token)
    assert done.status_code == 200, done.get_data(as_text=True)
    assert done.get_json()["attached"] == "screen.png (PNG, 2048×410)"  # fitted to OpenAI's 2048 px
    events = ndjson(chat(client, token, "What does my screen show?"))
    assert events[-1]["type"] == "turn_finished"
    ((role, mime, data),) = llm.requests[0].images
    assert (role, mime, dimensions(data)) == ("user", "image/png", ("PNG", (2048, 410)))
    session = client.get("/api/sessions").get_json()["current"]
    (first, *_rest) = client.get(f"/api/sessions/{session}").get_json()["messages"]
    assert first["images"] == ["screen.png (PNG, 2048×410)"]
    headers = {"X-CSRF-Token": token}
    assert client.post("/api/sessions", headers=headers).status_code == 201
    assert client.post(f"/api/sessions/{session}/resume", headers=headers).status_code == 200
    ndjson(chat(client, token, "And the colours?"))  # the web's Resume sends the image again
    (again,) = [r for r in llm.requests if r.messages[-1]["content"].startswith("And the colours?")]
    assert [dimensions(data) for _, _, data in again.images] == [("PNG", (2048, 410))]


# -- the context window: images count as a fixed estimate, compaction goes through -------------


SUMMARY = ("## Goals and constraints\nLook at pictures.\n## Facts to remember\n- pictures were red\n## Tasks\n"
           "- [done] describe\n## Files touched\nnone\n## Decisions\nnone\n## Errors met\nnone\n"
           "## Current state\nDescribing pictures.\n")


def test_images_count_as_a_fixed_estimate_and_compaction_goes_through(env: FakeLLMServer, tmp_path: Path) -> None:
    from dataclasses import replace

    from hermes_tui.agent.attachments import IMAGE_TOKENS
    from hermes_tui.agent.context import ContextWindow
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.config import Config
    from hermes_tui.skills.manager import SkillManager

    env.strict = True  # what the real APIs refuse, refused
    env.responder = lambda request: Reply(
        text=SUMMARY if "Conversation to summarize:" in request.messages[-1]["content"] else "Red.")
    config = Config.load()
    with MemoryStore(config.db_path) as memory:
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
        for n in range(3):
            loop.attach_image(str(picture(tmp_path / f"p{n}.png", color=("red", "green", "blue")[n])))
            assert list(loop.run_turn(f"Picture {n}: what is it?"))[-1].stopped_reason == "done"
        plain = [replace(message, images=()) for message in loop.history]
        assert loop.context.tokens(loop.history, 0) - ContextWindow(loop.llm, config).tokens(plain, 0) == (
            3 * IMAGE_TOKENS)
        assert [len(r.images) for r in env.requests] == [1, 2, 3]  # each request sends every image so far
        events = list(loop.compact())
        assert events[0].message.startswith("Compacted"), events
        assert list(loop.run_turn("And the last one?"))[-1].stopped_reason == "done"
        assert env.violations == []
        (last,) = env.requests[-1].images  # the older pictures are in the summary; the last turn's stays
        assert last[2] == (tmp_path / "p2.png").read_bytes()


@on_wire("anthropic")
def test_after_a_refusal_the_images_stay_attached_to_the_message_sent_again(env: FakeLLMServer,
                                                                            tmp_path: Path) -> None:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.config import Config
    from hermes_tui.events import Error, Notice, Unsent
    from hermes_tui.skills.manager import SkillManager

    env.text_only = True
    shot = picture(tmp_path / "shot.png")
    config = Config.load()
    with MemoryStore(config.db_path) as memory:
        loop = AgentLoop(config, memory, SkillManager(config.skills_dir))
        ref = loop.attach_image(str(shot))
        events = list(loop.run_turn("What is this?"))
        (error,) = [e for e in events if isinstance(e, Error)]
        assert TEXT_ONLY_REFUSAL["anthropic"] in error.message and "\n" not in error.message
        assert [e.text for e in events if isinstance(e, Unsent)] == ["What is this?"]
        assert f"The image {ref.describe()} is still attached" in str([e for e in events if isinstance(e, Notice)])
        assert loop.attached == [ref]
        env.text_only = False  # another model, say
        assert list(loop.run_turn("What is this?"))[-1].stopped_reason == "done"
        assert env.requests[-1].images == [("user", "image/png", shot.read_bytes())]
        assert loop.attached == []


# -- the checks themselves ---------------------------------------------------------------------


def test_a_pasted_text_is_an_image_path_only_when_it_is_exactly_one(tmp_path: Path) -> None:
    from hermes_tui.agent.attachments import pasted_path

    shot = picture(tmp_path / "my shot.png")
    (tmp_path / "fake.png").write_text("text")
    for pasted in (f"'{shot}'", f'"{shot}"', str(shot).replace(" ", "\\ "), f"file://{str(shot).replace(' ', '%20')}",
                   f"  {shot}\n"):
        assert pasted_path(pasted) is not None, pasted
        assert Path(pasted_path(pasted) or "").name in ("my shot.png", "my%20shot.png")
    for pasted in (f"look at {shot}", f"{shot}\n{shot}", str(tmp_path / "fake.png"), str(tmp_path), "", "hello"):
        assert pasted_path(pasted) is None, pasted


def test_each_format_is_fitted_to_the_limits_and_the_bytes_kept_otherwise(tmp_path: Path) -> None:
    from hermes_tui.agent.attachments import fit

    anthropic = provider("anthropic")
    small = picture(tmp_path / "small.webp", (300, 200), "WEBP").read_bytes()
    assert fit(small, "small.webp", anthropic).data == small  # within the limits: byte for byte
    for kind, sent in (("PNG", "PNG"), ("JPEG", "JPEG"), ("WEBP", "WEBP"), ("GIF", "PNG")):
        source = io.BytesIO()
        Image.new("RGB", (1000, 3000), "red").save(source, kind)
        fitted = fit(source.getvalue(), f"tall.{kind.lower()}", anthropic)
        assert dimensions(fitted.data) == (sent, (523, 1568)), kind
        assert fitted.mime == f"image/{sent.lower()}" and (fitted.width, fitted.height) == (523, 1568)
    noise = io.BytesIO()
    Image.frombytes("RGB", (1500, 1500), os.urandom(1500 * 1500 * 3)).save(noise, "PNG")  # ~6.7 MB: over the byte limit
    fitted = fit(noise.getvalue(), "noise.png", anthropic)
    assert len(fitted.data) <= anthropic.image_bytes and max(fitted.width, fitted.height) < 1500


def test_an_image_with_too_many_pixels_is_refused_in_one_line(tmp_path: Path) -> None:
    from hermes_tui.agent.attachments import AttachmentError, fit

    huge = io.BytesIO()
    Image.new("1", (10_000, 6_000)).save(huge, "PNG")  # 60 million pixels in a few kilobytes
    with pytest.raises(AttachmentError, match=r"^blank\.png is 10000×6000 pixels: an image may have at most 50 million\.$"):
        fit(huge.getvalue(), "blank.png", provider("openai"))
