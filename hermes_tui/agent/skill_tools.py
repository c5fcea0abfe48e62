"""The skill tools the model calls: list_skills, use_skill, read_skill_file and create_skill.

Progressive disclosure: the system prompt carries a short index, ``list_skills`` pages through
the rest (a page stays under ~2,000 tokens), ``use_skill`` returns a skill's instructions (capped
at ~8k tokens) with its folder and bundled files, and ``read_skill_file`` reads those files —
read-only and confined to that skill's folder. Scripts run through ``run_bash`` (so they stay
under approval) with ``SKILL_DIR`` set to the folder, as ``use_skill`` spells out.

Each tool is a declared ``Tool`` record (``toolkit.py``); ``tools.py`` gathers ``SKILL_TOOLS``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from hermes_tui.agent.paths import check_not_secret
from hermes_tui.agent.toolkit import INT, STR, STR_LIST, Tool, ToolContext, ToolResult, schema
from hermes_tui.skills import guard
from hermes_tui.skills.manager import SkillError, SkillGuardError, SkillManager
from hermes_tui.skills.schema import (
    SKILL_FILE,
    Skill,
    clean_body,
    clean_description,
    clean_triggers,
)

BODY_CAP = 30_000  # characters of a body use_skill returns (~8k tokens)
READ_CAP = 32_000  # characters read_skill_file returns per call
PAGE_CHARS = 6_000  # a list_skills page (under ~2,000 tokens)
PAGE_DEFAULT = 20
PAGE_MAX = 40
DESCRIPTION_CHARS = 150
FILES_SHOWN = 60
SKIP_BUNDLED = frozenset({"versions", "__pycache__", "node_modules"})


def list_skills(ctx: ToolContext, query: str = "", limit: int = PAGE_DEFAULT, offset: int = 0) -> ToolResult:
    return ToolResult(*page(ctx.skills, query, limit, offset))


def use_skill(ctx: ToolContext, name: str) -> ToolResult:
    return ToolResult(*load(ctx.skills, name, ctx.message_id))


def read_skill_file(ctx: ToolContext, name: str, path: str, offset: int = 0) -> ToolResult:
    return ToolResult(*read_bundled(ctx.skills, name, path, offset))


def create_skill(ctx: ToolContext, name: str, description: str, body: str,
                 triggers: list[str] | None = None) -> ToolResult:
    return ToolResult(*create(ctx.skills, name, description, body, triggers or []))


SKILL_TOOLS: tuple[Tool, ...] = (
    Tool(
        "list_skills",
        "Page through your skills (name, version, uses, description), or those matching a query, best first.",
        schema({"query": STR, "limit": INT | {"description": f"at most {PAGE_MAX}"}, "offset": INT}, []),
        list_skills, summary_arg="query",
    ),
    Tool(
        "use_skill",
        "Load a skill's instructions by name (counts as a use), with its folder and bundled files.",
        schema({"name": STR}, ["name"]), use_skill, summary_arg="name",
    ),
    Tool(
        "read_skill_file",
        "Read a file bundled with a skill (path relative to the skill's folder, e.g. references/api.md, "
        "or SKILL.md with an offset for a long body). Read-only.",
        schema({"name": STR, "path": STR, "offset": INT | {"description": "character offset"}}, ["name", "path"]),
        read_skill_file, summary_arg="path",
    ),
    Tool(
        "create_skill",
        "Save a reusable procedure as a skill: a kebab-case name, a one-line description, trigger "
        "phrases a user would type (synonyms, abbreviations) and a markdown body of steps.",
        schema({"name": STR, "description": STR, "triggers": STR_LIST, "body": STR},
               ["name", "description", "body"]),
        create_skill, summary_arg="name", keeps=True,
    ),
)


def page(skills: SkillManager, query: str, limit: int, offset: int) -> tuple[bool, str]:
    limit = max(1, min(int(limit), PAGE_MAX))
    offset = max(0, int(offset))
    if query.strip():
        found, total = skills.search(query, limit, offset), skills.count_matches(query)
    else:
        found, total = skills.list(limit, offset), skills.count()
    if not found:
        if offset and total:
            return True, f"No more skills: there are {total}."
        return True, f"No skill matches {query!r}." if query.strip() else "No skills saved yet."
    lines: list[str] = []
    size = 0
    for skill in found:
        line = f"- {skill.name} (v{skill.version}, used {skill.use_count}x): {_shorten(skill.description)}"
        if lines and size + len(line) > PAGE_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    end = offset + len(lines)
    header = f"Skills {offset + 1}-{end} of {total}" + (f" matching {query!r}" if query.strip() else "")
    footer = f"\nMore: list_skills(offset={end})" if end < total else ""
    return True, header + ":\n" + "\n".join(lines) + footer


def load(skills: SkillManager, name: str, turn: int | None = None) -> tuple[bool, str]:
    try:
        skill = skills.use(name, turn)
    except SkillGuardError:
        return False, refused(skills, name)
    except SkillError:
        return False, f"use_skill: no skill named {name!r}; call list_skills to see the names"
    body = skill.body
    if len(body) > BODY_CAP:
        offset = _body_offset(skill) + BODY_CAP
        body = (body[:BODY_CAP] + f"\n\n[The instructions are {len(skill.body):,} characters; only the first "
                f"{BODY_CAP:,} are shown. Read the rest with read_skill_file(name={skill.name!r}, "
                f"path='{SKILL_FILE}', offset={offset}).]")
    return True, "\n".join([
        f"# {skill.name} (v{skill.version})", skill.description, "", *_folder_lines(skill), "", body,
    ])


def refused(skills: SkillManager, name: str) -> str:
    """Why a quarantined skill is refused, by the guard's rule categories only: the flagged line
    itself would reach the model (hostile text in the prompt), so it is never quoted."""
    skill = skills.get(name)
    why = guard.kinds(skill.quarantine) if skill is not None and skill.quarantine else []
    shown = skill.name if skill is not None else name
    reason = f" ({'; '.join(why)})" if why else ""
    return (f"use_skill: refused: skill {shown!r} is quarantined by the skill guard{reason}; "
            "the user can review and approve it in the Skills pane")


def read_bundled(skills: SkillManager, name: str, path: str, offset: int = 0) -> tuple[bool, str]:
    skill = skills.get(name)
    if skill is None:
        return False, f"read_skill_file: no skill named {name!r}; call list_skills to see the names"
    if skill.quarantine:
        return False, f"read_skill_file: skill {skill.name!r} is quarantined by the skill guard"
    folder = _folder(skill)
    if folder is None:
        return False, f"read_skill_file: skill {skill.name!r} is a single file with no bundled files"
    real = os.path.realpath(os.path.join(folder, path.strip() or SKILL_FILE))
    if real != folder and not real.startswith(folder + os.sep):
        return False, f"read_skill_file: {path!r} is outside the folder of skill {skill.name!r}"
    refused = check_not_secret(real, shown=path)  # the file tools' secret rules (HERMES_HOME aside)
    if refused:
        return False, f"read_skill_file: {refused}"
    if not os.path.isfile(real):
        return False, f"read_skill_file: skill {skill.name!r} has no file {path!r}; use_skill lists its files"
    with open(real, "rb") as handle:
        data = handle.read(4 * 1024 * 1024)
    if b"\x00" in data[:8192]:
        return False, f"read_skill_file: {path!r} is a binary file ({len(data):,} bytes)"
    text = data.decode("utf-8", errors="replace")
    offset = max(0, int(offset))
    chunk = text[offset:offset + READ_CAP]
    if offset + READ_CAP < len(text):
        chunk += (f"\n[... {len(text) - offset - READ_CAP:,} more characters; continue with "
                  f"read_skill_file(name={skill.name!r}, path={path!r}, offset={offset + READ_CAP})]")
    return True, chunk


def create(skills: SkillManager, name: str, description: str, body: str, triggers: list[str]) -> tuple[bool, str]:
    try:
        skill = skills.create(name, description, triggers, body)
    except SkillError as exc:
        return False, f"create_skill: {exc}"
    notes = _changes(name, description, body, triggers, skill)
    text = f"saved skill {skill.name} (v{skill.version})"
    return True, text + (". Note: " + "; ".join(notes) + "." if notes else "")


# -- helpers -------------------------------------------------------------------------------------


def _changes(name: str, description: str, body: str, triggers: list[str], skill: Skill) -> list[str]:
    """Everything create_skill changed in what it was given, so the model is never misled."""
    notes: list[str] = []
    if name != skill.name:
        notes.append(f"the name {name!r} was normalized to {skill.name!r}")
    cleaned = clean_description(description)
    if len(" ".join(description.split())) > len(cleaned):
        notes.append(f"the description was cut to {len(cleaned)} characters")
    elif cleaned != description.strip():
        notes.append("the description was made one line")
    if clean_triggers(triggers) != [t for t in (t.strip() for t in triggers) if t]:
        notes.append(f"the triggers were cleaned to {', '.join(skill.triggers) or 'none'}")
    if clean_body(body) != body.strip():
        notes.append("control characters were removed from the body")
    return notes


def _folder(skill: Skill) -> str | None:
    if skill.path is None or skill.path.name != SKILL_FILE:
        return None
    return os.path.realpath(skill.path.parent)


def _folder_lines(skill: Skill) -> list[str]:
    folder = _folder(skill)
    if folder is None:
        return []
    files = _bundled(Path(folder))
    lines = [f"Skill folder: {folder}"]
    if files:
        shown = ", ".join(files[:FILES_SHOWN])
        more = f" (+{len(files) - FILES_SHOWN} more)" if len(files) > FILES_SHOWN else ""
        lines += [
            f"Bundled files ({len(files)}): {shown}{more}",
            f"Read them with read_skill_file(name={skill.name!r}, path=...). Run its scripts with run_bash, "
            f"setting SKILL_DIR first: export SKILL_DIR={shlex.quote(folder)}; bash \"$SKILL_DIR/scripts/<script>\"",
        ]
    return lines


def _bundled(folder: Path) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_BUNDLED)
        rel = os.path.relpath(root, folder)
        for file in sorted(files):
            if file.startswith(".") or (rel == "." and file == SKILL_FILE):
                continue
            found.append(file if rel == "." else f"{rel}/{file}")
            if len(found) > 500:
                return found
    return found


def _body_offset(skill: Skill) -> int:
    """Where the body starts in SKILL.md, so the offset given for the rest is exact."""
    if skill.path is None:
        return 0
    try:
        text = skill.path.read_text(encoding="utf-8")
    except OSError:
        return 0
    at = text.find(skill.body[:200])
    return max(at, 0)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1].rstrip() + "…"
