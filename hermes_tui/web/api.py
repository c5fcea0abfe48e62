"""The JSON API under /api (login required, see auth.py; CSRF on POST, see security.py).

Everything that came from the model, a skill file or a stored message is either plain text (the
page inserts it with ``textContent``) or, in fields named ``html``, markup that went through
``render.py``. Nothing else is ever inserted as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, abort, jsonify, request
from werkzeug.exceptions import ServiceUnavailable

from hermes_tui.agent.attachments import MAX_FILE_BYTES, AttachmentError
from hermes_tui.agent.checkpoints import CheckpointStore
from hermes_tui.agent.tools import summary_argument
from hermes_tui.conversation import ChatMessage
from hermes_tui.memory.forget import forget_session
from hermes_tui.memory.prompts import HISTORY_FILE
from hermes_tui.memory.store import SessionInfo
from hermes_tui.skills.manager import SkillError, SkillManager, SkillNotFoundError
from hermes_tui.skills.schema import Skill
from hermes_tui.slash import as_message
from hermes_tui.web.approvals import DECISIONS
from hermes_tui.web.chat import TurnStream
from hermes_tui.web.commands import unknown_command
from hermes_tui.web.context import session_key, web
from hermes_tui.web.render import markdown_html, snippet_html
from hermes_tui.web.state import Busy, InUse, Saturated

bp = Blueprint("api", __name__, url_prefix="/api")

MAX_MESSAGE_CHARS = 32_000
MAX_QUERY_CHARS = 500
SESSION_LIST_LIMIT = 100
SEARCH_LIMIT = 20


def _session(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id, "source": info.source, "title": info.title, "summary": info.summary,
        "first_user_line": info.first_user_line, "started": info.started,
        "last_activity": info.last_activity, "message_count": info.message_count,
        "parent_id": info.parent_id,  # a sub-agent's session (delegate): listed right after its parent's
    }


def _message(message: ChatMessage) -> dict[str, Any] | None:
    """A stored message for the page; ``id`` lets a memory hit open the transcript at it."""
    if message.role == "user":
        shown: dict[str, Any] = {"id": message.id, "role": "user", "text": message.content or ""}
        if message.images:  # what was attached, named (the page shows the names, not the bytes)
            shown["images"] = [ref.describe() for ref in message.images]
        return shown
    if message.role == "assistant":
        calls = [{"id": c.id, "name": c.name, "arguments": c.raw,
                  "summary": summary_argument(c.name, c.arguments)} for c in message.calls]
        return {"id": message.id, "role": "assistant", "html": markdown_html(message.content), "tool_calls": calls}
    if message.role == "tool":
        return {"id": message.id, "role": "tool", "name": message.name, "tool_call_id": message.tool_call_id,
                "text": message.content or "", "status": message.status.value}
    return None  # system messages are the agent's own business


def _skill(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name, "description": skill.description, "triggers": list(skill.triggers),
        "version": skill.version, "use_count": skill.use_count, "updated": skill.updated,
    }


@bp.get("/sessions")
def list_sessions() -> Response:
    state = web().state
    sessions = [_session(s) for s in state.memory.list_sessions(limit=SESSION_LIST_LIMIT)]
    return jsonify(sessions=sessions, current=state.current_session(session_key()))


@bp.get("/sessions/<int:session_id>")
def get_session(session_id: int) -> Response:
    memory = web().state.memory
    info = memory.get_session(session_id)
    if info is None:
        abort(404, f"there is no session {session_id}")
    stored = memory.get_messages(session_id)
    messages = [m for m in (_message(x) for x in stored) if m is not None]
    return jsonify(session=_session(info), messages=messages, checkpoints=_checkpoints(session_id, stored))


def _checkpoints(session_id: int, stored: list[ChatMessage]) -> list[dict[str, Any]]:
    """The files each turn of the session changed; ``turn`` counts the user messages from 0."""
    config = web().config
    store = CheckpointStore(config.home, config.workspace)
    if not store.available:
        return []
    turns = {m.id: n for n, m in enumerate(m for m in stored if m.role == "user")}
    return [{"number": c.number, "turn": turns[c.message_id],
             "files": [{"path": f.path, "status": f.status} for f in c.files]}
            for c in store.list() if c.session_id == session_id and c.message_id in turns]


@bp.delete("/sessions/<int:session_id>")
def delete_session(session_id: int) -> Response:
    """Forget a session for good, as /forget does (``memory.forget.forget_session``)."""
    state = web().state
    if state.current_session(session_key()) == session_id:
        abort(409, "this is your open conversation; start a new session first")
    try:
        gone = forget_session(state.memory, session_id, web().config.home / HISTORY_FILE)
    except KeyError:
        abort(404, f"there is no session {session_id}")
    return jsonify(deleted=session_id, messages=gone.messages, files=len(gone.files))


@bp.delete("/messages/<int:message_id>")
def purge_message(message_id: int) -> Response:
    """Forget one message for good (an API key pasted by mistake, a private matter)."""
    if not web().state.memory.purge_message(message_id):
        abort(404, f"there is no message {message_id}")
    return jsonify(purged=message_id)


@bp.post("/sessions")
def new_session() -> tuple[Response, int]:
    try:
        session_id = web().state.new_session(session_key())
    except Busy:
        abort(409, "a turn is running in this session; stop it first")
    return jsonify(id=session_id), 201


@bp.post("/sessions/<int:session_id>/resume")
def resume_session(session_id: int) -> Response:
    """Make a stored session this browser's conversation (the previous one is retired)."""
    try:
        web().state.resume(session_key(), session_id)
    except Busy:
        abort(409, "a turn is running in this session; stop it first")
    except InUse:
        abort(409, f"session {session_id} is open in another browser; start a new session there first")
    except KeyError:
        abort(404, f"there is no session {session_id}")
    return jsonify(id=session_id)


@bp.post("/chat")
def chat() -> Response:
    body = request.get_json(silent=True)
    text = body.get("message") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text.strip():
        abort(400, 'send JSON {"message": "..."} with some text')
    if len(text) > MAX_MESSAGE_CHARS:
        abort(413, f"the message is longer than {MAX_MESSAGE_CHARS:,} characters")
    plan = body.get("plan") if isinstance(body, dict) else None  # plan mode for this turn and the session's next ones; absent: unchanged
    if plan is not None and not isinstance(plan, bool):
        abort(400, '"plan" must be true or false')
    refusal = unknown_command(text)
    if refusal:  # a slash word is never sent to the model
        abort(400, refusal)
    text = as_message(text)
    ctx = web()
    try:
        turn = ctx.state.start_turn(session_key())
    except Busy:
        abort(409, "a turn is already running in this session; wait for it or stop it")
    except Saturated:
        raise ServiceUnavailable("too many chat streams are open; try again shortly", retry_after=5) from None
    if plan is not None:
        turn.loop.plan = plan
    response = Response(TurnStream(turn, text, ctx.keepalive_seconds, ctx.state.mcp.follow),
                        mimetype="application/x-ndjson")
    response.headers["X-Accel-Buffering"] = "no"  # proxies must pass lines through as they come
    return response


UPLOAD_FIELD = "image"
MAX_UPLOAD_BYTES = MAX_FILE_BYTES + 64 * 1024  # the image, its multipart framing and the CSRF field
BODY_LIMITS = {"api.attach_image": MAX_UPLOAD_BYTES}
"""Endpoints that take a larger body than the app's ``MAX_CONTENT_LENGTH``, by endpoint name."""


def body_limit() -> None:
    """``before_request``, ahead of anything that reads the body (the CSRF check reads a form):
    an upload may be as large as an image may be, every other request stays small."""
    if (limit := BODY_LIMITS.get(request.endpoint or "")) is not None:
        request.max_content_length = limit


@bp.post("/images")
def attach_image() -> Response:
    """Attach an uploaded image (multipart field ``image``) to this browser's next message, as
    ``/image`` does (``AgentLoop.attach_image``: sniffed, at most 5 MB, fitted, kept)."""
    upload = request.files.get(UPLOAD_FIELD)
    if upload is None:
        abort(400, f"send the image as the multipart field {UPLOAD_FIELD!r}")
    data = upload.stream.read(MAX_FILE_BYTES + 1)
    name = (upload.filename or "upload")[:200]
    try:
        turn = web().state.start_turn(session_key())  # this browser's conversation, not while a turn runs
    except Busy:
        abort(409, "a turn is running in this session; attach the image when it has finished")
    except Saturated:
        raise ServiceUnavailable("too many chat streams are open; try again shortly", retry_after=5) from None
    try:
        ref = turn.loop.attach_image(name, data=data)
        attached = [r.describe() for r in turn.loop.attached]
    except AttachmentError as exc:
        abort(400, str(exc))
    finally:
        turn.release()
    return jsonify(attached=ref.describe(), mime=ref.mime, width=ref.width, height=ref.height, waiting=attached)


@bp.post("/chat/compact")
def compact() -> Response:
    """Compact this browser's conversation now (``{"focus": "..."}`` optional), like ``/compact``."""
    body = request.get_json(silent=True)
    focus = body.get("focus") if isinstance(body, dict) else None
    if focus is not None and (not isinstance(focus, str) or len(focus) > MAX_QUERY_CHARS):
        abort(400, f"focus must be text of at most {MAX_QUERY_CHARS} characters")
    try:
        turn = web().state.start_turn(session_key())
    except Busy:
        abort(409, "a turn is running in this session; wait for it or stop it")
    except Saturated:
        raise ServiceUnavailable("too many chat streams are open; try again shortly", retry_after=5) from None
    try:
        events = [e.to_dict() for e in turn.loop.compact(focus or None)]
    finally:
        turn.release()
    usage: dict[str, Any] = next((e for e in reversed(events) if e["type"] == "usage"), {})
    return jsonify(notices=[e["message"] for e in events if e["type"] in ("notice", "error")],
                   context_tokens=usage.get("context_tokens"), context_limit=usage.get("context_limit"))


@bp.get("/context")
def context() -> Response:
    """The fixed prompt of this browser's conversation (or of a new one), part by part, like ``/context``."""
    from hermes_tui.agent.runtime import context_report

    state = web().state
    report = context_report(state.config, state.memory, state.skills, state.surface,
                            state.loop_of(session_key()))
    return jsonify(report.to_dict())


@bp.get("/mcp")
def mcp_servers() -> Response:
    """The MCP servers: state, tools, schema tokens, and whether the web offers their tools (and
    why not). Read-only: approving and enabling servers stay with ``hermes-tui mcp``."""
    state = web().state
    return jsonify(state.mcp.view(state.surface, state.config))


@bp.get("/facts")
def list_facts() -> Response:
    """What Hermes remembers about the user and this workspace (curated memory), and where it is kept."""
    from hermes_tui.memory import facts

    store = facts.for_config(web().state.config)
    return jsonify(facts=[{"id": f.id, "scope": f.scope, "text": f.text, "session_id": f.session_id,
                           "saved": f.saved, "by": f.by, "pending": f.pending}
                          for f in store.facts() + store.pending()],
                   files={scope: str(store.path(scope)) for scope in facts.SCOPES})


@bp.post("/facts/<fact_id>/approve")
def approve_fact(fact_id: str) -> Response:
    """Let a fact the model proposed for every workspace into the prompts (it waits until then)."""
    from hermes_tui.memory import facts

    if not re.fullmatch(r"[0-9a-f]{6}", fact_id):
        abort(404, f"there is no fact {fact_id[:20]!r}")
    try:
        kept = facts.for_config(web().state.config).approve(fact_id)
    except facts.FactError:
        abort(404, f"there is no fact {fact_id} waiting for approval")
    return jsonify(approved=kept.id)


@bp.delete("/facts/<fact_id>")
def delete_fact(fact_id: str) -> Response:
    from hermes_tui.memory import facts

    if not re.fullmatch(r"[0-9a-f]{6}", fact_id):
        abort(404, f"there is no fact {fact_id[:20]!r}")
    try:
        gone = facts.for_config(web().state.config).remove(fact_id)
    except facts.FactError:
        abort(404, f"there is no fact {fact_id}")
    return jsonify(deleted=gone.id)


@bp.post("/approve")
def approve() -> Response:
    """Answer the approval question of a waiting call: ``{"id": "...", "decision": "once" |
    "session" | "deny"}`` (what each allows: ``agent/approvals.py``)."""
    body = request.get_json(silent=True)
    call_id = body.get("id") if isinstance(body, dict) else None
    decision = body.get("decision") if isinstance(body, dict) else None
    if not isinstance(call_id, str) or decision not in DECISIONS:
        abort(400, 'send JSON {"id": "<the call id>", "decision": "once" | "session" | "deny"}')
    if not web().state.answer(session_key(), call_id, decision):
        abort(404, f"no call {call_id[:80]!r} is waiting for approval here (answered, or its turn ended)")
    return jsonify(id=call_id, decision=decision)


@bp.post("/chat/cancel")
def cancel() -> Response:
    return jsonify(cancelled=web().state.cancel(session_key()))


@bp.get("/skills")
def list_skills() -> Response:
    """Usable skills, and those held back (quarantined by the guard, or skipped) with the reason."""
    skills = web().state.skills
    held = [{"name": h.name, "path": h.path, "reason": h.reason, "quarantined": h.quarantined}
            for h in skills.held_back()]
    return jsonify(skills=[_skill(s) for s in skills.list()], held_back=held)


@bp.get("/skills/<path:name>")
def get_skill(name: str) -> Response:
    skill = web().state.skills.get(name)
    if skill is None:
        abort(404, "there is no skill by that name")
    return jsonify(**_skill(skill), quarantine=skill.quarantine, notice=skill.notice,
                   html=markdown_html(skill.body))


@bp.get("/skills/<path:name>/versions")
def skill_versions(name: str) -> Response:
    """The versions, and the diff of the newest pending proposal (else of the last change)."""
    skills = web().state.skills
    try:
        versions = skills.versions(name)
    except SkillNotFoundError:
        abort(404, "there is no skill by that name")
    pending = [v.label for v in versions if v.kind == "pending"]
    archived = [v.label for v in versions if v.kind == "archived"]
    pair = ("current", pending[-1]) if pending else (archived[-1], "current") if archived else None
    if pending:  # what accepting writes: the proposal merged into the file on disk
        diff = skills.accept_diff(name, pending[-1])
    else:
        diff = skills.diff(name, *pair) if pair else ""
    return jsonify(versions=[{"label": v.label, "kind": v.kind, "number": v.number, "time": v.time}
                             for v in versions], diff_of=pair, diff=diff)


@bp.post("/skills/<path:name>/approve")
def approve_skill(name: str) -> Response:
    """Release a quarantined skill (this exact content; an edit is checked again)."""
    return _skill_change(lambda skills: skills.approve(name))


@bp.post("/skills/<path:name>/accept")
def accept_skill(name: str) -> Response:
    data = request.get_json(silent=True)
    label = data.get("label") if isinstance(data, dict) else None
    if not isinstance(label, str):
        abort(400, 'send JSON {"label": "pending-..."}')
    return _skill_change(lambda skills: skills.accept(name, label).skill)


@bp.delete("/skills/<path:name>")
def delete_skill(name: str) -> Response:
    skills = web().state.skills
    try:
        skills.delete(name)
    except SkillNotFoundError:
        abort(404, "there is no skill by that name")
    return jsonify(deleted=name)


def _skill_change(change: Callable[[SkillManager], Skill]) -> Response:
    try:
        skill = change(web().state.skills)
    except SkillNotFoundError:
        abort(404, "there is no skill or version by that name")
    except SkillError as exc:
        abort(409, str(exc))
    return jsonify(**_skill(skill))


@bp.get("/memory/search")
def search_memory() -> Response:
    query = request.args.get("q", "")
    if len(query) > MAX_QUERY_CHARS:
        abort(400, f"the query is longer than {MAX_QUERY_CHARS} characters")
    hits = web().state.memory.recall(query, limit=SEARCH_LIMIT) if query.strip() else []
    return jsonify(query=query, hits=[
        {"session_id": h.session_id, "message_id": h.message_id, "role": h.role,
         "html": snippet_html(h.snippet), "created": h.created}
        for h in hits
    ])
