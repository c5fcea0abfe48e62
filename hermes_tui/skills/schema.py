"""The ``Skill`` dataclass and its SKILL.md text form (agentskills.io layout).

A skill lives in ``skills_dir/<name>/SKILL.md``. The frontmatter holds the agentskills fields
``name`` and ``description``; Hermes' own fields sit under ``metadata`` as *strings*, because the
reference validator (``skills-ref validate``) allows only ``name``, ``description``, ``license``,
``compatibility``, ``allowed-tools`` and ``metadata`` at the top level and parses the frontmatter
with strictyaml, where every value is a string anyway::

    ---
    name: deploy-flask-to-railway
    description: Deploy a Flask app to Railway with gunicorn and a Procfile.
    metadata:
      triggers: deploy, railway, flask, gunicorn
      version: '2'
      use_count: '5'
      created: '2025-06-01T09:30:00.000000+00:00'
      updated: '2025-06-03T17:02:11.250000+00:00'
    ---

    1. ...

Reading is lenient (hand-written SKILL.md without Hermes metadata, older flat ``skills/*.md``
with top-level ``triggers``/``version``/``use_count``); writing is strict, so every file Hermes
writes passes the reference validator. Times are float epoch seconds in memory and ISO 8601 UTC
strings on disk.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
# Top-level keys the reference validator accepts besides name/description/metadata.
SPEC_FIELDS = ("license", "compatibility", "allowed-tools")
# Hermes' keys under ``metadata`` (older flat files may carry them at the top level).
HERMES_KEYS = ("triggers", "version", "use_count", "created", "updated")

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# The validator splits the file on the first two "---" anywhere, so no frontmatter value may
# contain one; runs of 3+ hyphens become "--".
_DASH_RUN = re.compile(r"-{3,}")
# Control characters and lone surrogates would make a file unreadable (NUL looks binary,
# surrogates cannot be encoded); newlines and tabs are kept in bodies only.
_BODY_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufeff\ufffe\uffff]")
_LINE_JUNK = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")


class SkillError(ValueError):
    """A skill name, field or file is unusable; the message says what and why."""


@dataclass
class Skill:
    """One skill. ``version`` counts refinements from 1; times are epoch seconds (UTC)."""

    name: str
    description: str
    triggers: list[str] = field(default_factory=list)
    body: str = ""
    version: int = 1
    use_count: int = 0
    created: float = 0.0
    updated: float = 0.0
    path: Path | None = None
    # Other agentskills top-level fields (license, compatibility, allowed-tools) and metadata
    # keys written by other tools: kept so that rewriting a hand-made file loses nothing.
    extra_fields: dict[str, str] = field(default_factory=dict)
    extra_metadata: dict[str, str] = field(default_factory=dict)


# -- cleaning: everything written goes through these, so output always validates ------------


def normalize_name(text: str) -> str:
    """Turn any title into an agentskills name: ``"Deploy Flask → Railway!"`` -> ``deploy-flask-railway``."""
    if not isinstance(text, str):
        raise SkillError(f"a skill name must be text, not {type(text).__name__}")
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    name = _NON_ALNUM.sub("-", ascii_text.lower()).strip("-")[:MAX_NAME_LENGTH].rstrip("-")
    if not name:
        raise SkillError(
            f"cannot make a skill name from {text[:80]!r}: use letters or digits "
            "(names are lowercase a-z, 0-9 and single hyphens)"
        )
    return name


def is_valid_name(name: str) -> bool:
    """True if ``name`` is already in canonical form (what a skill folder must be called)."""
    return len(name) <= MAX_NAME_LENGTH and _NAME_RE.fullmatch(name) is not None


def clean_line(text: str) -> str:
    """One safe YAML line: whitespace collapsed, control characters and '---' removed."""
    text = " ".join(_LINE_JUNK.sub(" ", text).split())
    return _DASH_RUN.sub("--", text)


def clean_description(text: str) -> str:
    """Trimmed single-line description capped at the spec's 1024 characters; empty is an error."""
    if not isinstance(text, str):
        raise SkillError(f"a skill description must be text, not {type(text).__name__}")
    description = clean_line(text)[:MAX_DESCRIPTION_LENGTH].rstrip()
    if not description:
        raise SkillError("a skill needs a description: one sentence saying what it does and when to use it")
    return description


def clean_triggers(items: str | Iterable[str]) -> list[str]:
    """Trigger phrases, stripped and de-duplicated; commas split (they are the on-disk separator)."""
    if isinstance(items, str):
        items = [items]
    triggers: list[str] = []
    seen: set[str] = set()
    for item in items:
        for part in clean_line(str(item)).split(","):
            part = part.strip()
            if part and part.lower() not in seen:
                seen.add(part.lower())
                triggers.append(part)
    return triggers


def clean_body(text: str) -> str:
    """Markdown body with '\\n' newlines, no control characters, no surrounding blank space."""
    if not isinstance(text, str):
        raise SkillError(f"a skill body must be text, not {type(text).__name__}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _BODY_JUNK.sub("", text).strip()


# -- Skill -> SKILL.md ----------------------------------------------------------------------------


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="microseconds")


def render_skill(skill: Skill) -> str:
    """SKILL.md text for ``skill``; always passes ``skills-ref validate`` in a folder named ``skill.name``."""
    if not is_valid_name(skill.name):
        raise SkillError(f"{skill.name!r} is not a valid skill name; pass it through normalize_name() first")
    meta: dict[str, Any] = {"name": skill.name, "description": clean_description(skill.description)}
    for key in SPEC_FIELDS:
        value = clean_line(skill.extra_fields.get(key, ""))
        if value:
            meta[key] = value[:MAX_COMPATIBILITY_LENGTH].rstrip() if key == "compatibility" else value
    hermes = {
        "triggers": ", ".join(clean_triggers(skill.triggers)),
        "version": str(int(skill.version)),
        "use_count": str(int(skill.use_count)),
        "created": format_time(skill.created),
        "updated": format_time(skill.updated),
    }
    extra = {clean_line(k): clean_line(v) for k, v in skill.extra_metadata.items() if k not in hermes}
    meta["metadata"] = {**hermes, **{k: v for k, v in extra.items() if k}}
    post = frontmatter.Post(clean_body(skill.body))
    post.metadata.update(meta)
    return frontmatter.dumps(post, sort_keys=False) + "\n"


# -- SKILL.md -> Skill ----------------------------------------------------------------------------


def parse_skill(text: str, path: Path | None = None) -> Skill:
    """Read a Hermes, hand-written or legacy flat skill file; raise ``SkillError`` if unusable.

    For ``<folder>/SKILL.md`` the folder name is the skill's name (that is what the spec and
    every lookup rely on); a different frontmatter ``name`` is logged and ignored. For any other
    file (legacy ``skills/*.md``) the name is the frontmatter ``name`` or else the file stem.
    """
    data, body = _split(text)
    raw_meta = data.get("metadata")
    hermes_meta = raw_meta if isinstance(raw_meta, dict) else {}
    fallback_time = _file_time(path)

    def pick(key: str) -> Any:
        return hermes_meta.get(key, data.get(key))

    skill = Skill(
        name=_pick_name(data.get("name"), path),
        description=clean_description(_required_text(data, "description")),
        triggers=_parse_triggers(pick("triggers")),
        body=clean_body(body),
        version=max(1, _as_int(pick("version"), 1)),
        use_count=max(0, _as_int(pick("use_count"), 0)),
        created=_as_epoch(pick("created"), fallback_time),
        updated=_as_epoch(pick("updated"), fallback_time),
        path=path,
    )
    for key, value in data.items():
        key = str(key)
        if key in SPEC_FIELDS:
            text_value = _as_text(value)
            if text_value:
                skill.extra_fields[key] = text_value
        elif key not in ("name", "description", "metadata", *HERMES_KEYS):
            _keep_extra(skill, key, value)
    for key, value in hermes_meta.items():
        if str(key) not in HERMES_KEYS:
            _keep_extra(skill, str(key), value)
    return skill


def _split(text: str) -> tuple[dict[Any, Any], str]:
    """Frontmatter mapping and body; a file without frontmatter is all body."""
    text = text.lstrip("\ufeff").strip()
    handler = YAMLHandler()
    if not handler.detect(text):
        return {}, text
    try:
        fm, body = handler.split(text)
    except ValueError:
        raise SkillError("the frontmatter is not closed with a '---' line") from None
    try:
        data = handler.load(fm)
    except (yaml.YAMLError, RecursionError) as exc:
        raise SkillError(f"the frontmatter is not valid YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise SkillError("the frontmatter must be a YAML mapping (key: value lines)")
    return data, body


def _pick_name(raw: Any, path: Path | None) -> str:
    given = raw if isinstance(raw, str) and raw.strip() else None
    if path is not None and path.name == SKILL_FILE:
        folder = path.parent.name
        if not is_valid_name(folder):
            raise SkillError(
                f"folder {folder!r} is not a valid skill name (lowercase a-z, 0-9, single hyphens); rename it"
            )
        if given != folder:
            log.warning(
                "skill %s: frontmatter name %r does not match its folder; using %r", path, given, folder
            )
        return folder
    if given is not None:
        return normalize_name(given)
    if path is not None:
        return normalize_name(path.stem)
    raise SkillError("the skill has no 'name' in its frontmatter")


def _required_text(data: dict[Any, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        raise SkillError(f"the frontmatter has no {key!r}")
    if not isinstance(value, str):
        raise SkillError(f"the frontmatter {key!r} must be text")
    return value


def _parse_triggers(value: Any) -> list[str]:
    if isinstance(value, str):
        return clean_triggers(value)
    if isinstance(value, list):
        return clean_triggers([str(v) for v in value if _is_scalar(v)])
    return []


def _as_int(value: Any, default: int) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def _as_epoch(value: Any, default: float) -> float:
    """ISO 8601 strings, YAML timestamps/dates, or epoch numbers; anything else -> default."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return default
    if isinstance(value, datetime):
        value = (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp()
    elif isinstance(value, date):
        value = datetime(value.year, value.month, value.day, tzinfo=timezone.utc).timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    try:
        format_time(float(value))  # must be representable, or writing it back would fail
    except (OverflowError, OSError, ValueError):
        return default
    return float(value)


def _file_time(path: Path | None) -> float:
    try:
        return path.stat().st_mtime if path is not None else time.time()
    except OSError:
        return time.time()


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, date))


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, list) and all(_is_scalar(v) for v in value):
        return ", ".join(_as_text(v) for v in value)
    if _is_scalar(value):
        return str(value)
    return ""


def _keep_extra(skill: Skill, key: str, value: Any) -> None:
    """Keep a foreign field as a metadata string; nested structures are dropped (not strings)."""
    text_value = _as_text(value)
    if isinstance(value, (dict, list)) and not text_value:
        log.debug("skill %s: dropping nested field %r (metadata values must be strings)", skill.name, key)
    else:
        skill.extra_metadata[key] = text_value


__all__ = [
    "HERMES_KEYS",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "clean_body",
    "clean_description",
    "clean_line",
    "clean_triggers",
    "format_time",
    "is_valid_name",
    "normalize_name",
    "parse_skill",
    "render_skill",
]
