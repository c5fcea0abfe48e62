"""The ``Skill`` dataclass and the SKILL.md text form (agentskills.io layout).

A skill lives in ``<folder>/SKILL.md``: YAML frontmatter, then a markdown body. Hermes owns only a
few keys — ``name`` and ``description`` at the top, and ``triggers``, ``version``, ``created`` and
``updated`` under ``metadata`` as strings (the reference validator ``skills-ref validate`` parses
with strictyaml, where every value is a string)::

    ---
    name: deploy-flask-to-railway
    description: Deploy a Flask app to Railway with gunicorn and a Procfile.
    metadata:
      triggers: deploy, railway, ship to prod, gunicorn
      version: '2'
      created: '2025-06-01T09:30:00.000000+00:00'
      updated: '2025-06-03T17:02:11.250000+00:00'
    ---

Reading is lenient, because most skills were written by other tools: a missing description falls
back to ``summary`` and then to the body's first paragraph; ``tags`` (top level, ``metadata`` or
hermes-agent's ``metadata.hermes``) feed search; ``platforms`` is kept so the library can honour it.
Writing a *new* file is strict (it passes the validator); changing an existing file is a textual
patch of Hermes' keys (``patch.py``), never a re-dump, so nothing else in it moves. The file is cut
at its fences here (byte-exact, so the patch knows where each part starts) and the frontmatter is
read by python-frontmatter's YAML handler (a safe loader).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontmatter.default_handlers import YAMLHandler

SKILL_FILE = "SKILL.md"
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
# Hermes' keys under ``metadata``; ``use_count`` is only read, to migrate it into the database.
HERMES_META_KEYS = ("triggers", "version", "created", "updated")

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# The validator splits the file on the first two "---" anywhere, so no value Hermes writes may
# contain one; runs of 3+ hyphens become "--".
_DASH_RUN = re.compile(r"-{3,}")
_BODY_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufeff\ufffe\uffff]")
_LINE_JUNK = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
_FENCE = re.compile(r"^---[ \t]*\r?\n", re.M)


@functools.cache
def _yaml() -> YAMLHandler:
    """python-frontmatter's YAML handler, imported when a skill is first read or written: a run
    whose skills index is current reads none (PyYAML's import: ~10 ms of every start)."""
    from frontmatter.default_handlers import YAMLHandler

    return YAMLHandler()


class SkillError(ValueError):
    """A skill name, field or file is unusable; the message says what and why."""


@dataclass
class Skill:
    """One skill as the library sees it. Times are epoch seconds (UTC).

    ``name`` is the lookup key: the folder name, or ``<source>/<name>`` when two folders share a
    name. ``use_count``/``last_used`` come from the database, never from the file. ``quarantine``
    is the guard's reason when the skill is held back (empty when it is usable).
    """

    name: str
    description: str
    triggers: list[str] = field(default_factory=list)
    body: str = ""
    version: int = 1
    use_count: int = 0
    created: float = 0.0
    updated: float = 0.0
    path: Path | None = None
    last_used: float = 0.0
    keywords: list[str] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)
    quarantine: str = ""
    learned: bool = False  # written by Hermes (it has Hermes' version/created keys)
    notice: str = ""  # what loading changed, e.g. a normalized name

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None


# -- cleaning: everything Hermes writes goes through these ------------------------------------------


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
    """True if ``name`` is already in canonical form (what a skill folder should be called)."""
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


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="microseconds")


def yaml_scalar(value: str) -> str:
    """``value`` as one YAML flow scalar (quoted when needed), the way PyYAML would write it."""
    import yaml

    dumped = yaml.safe_dump({"k": value}, allow_unicode=True, width=10**9, sort_keys=False)
    return dumped[len("k: "):].rstrip("\n").removesuffix("\n...")


# -- the file's parts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SkillText:
    """A SKILL.md cut into exact pieces: ``head + body == text``.

    ``head`` runs from the start through the closing ``---`` line; ``frontmatter`` is the YAML
    between the fences. A file without frontmatter has an empty head.
    """

    head: str
    frontmatter: str
    body: str

    @property
    def has_frontmatter(self) -> bool:
        return bool(self.head)


def split_text(text: str) -> SkillText:
    """Cut ``text`` at its frontmatter fences without changing a byte."""
    start = 1 if text.startswith("\ufeff") else 0
    opening = _FENCE.match(text, start)
    if opening is None:
        return SkillText("", "", text)
    closing = _FENCE.search(text, opening.end())
    if closing is None:
        tail = text.rstrip()
        if tail.endswith("\n---") and len(tail) > opening.end() - 1:
            return SkillText(text, text[opening.end():len(tail) - 3], "")
        raise SkillError("the frontmatter is not closed with a '---' line")
    return SkillText(text[:closing.end()], text[opening.end():closing.start()], text[closing.end():])


def load_frontmatter(frontmatter: str) -> dict[str, Any]:
    """The frontmatter as a mapping ({} when empty); ``SkillError`` when it is not one."""
    import yaml

    try:
        data = _yaml().load(frontmatter)  # python-frontmatter's handler: yaml with its safe loader
    except (yaml.YAMLError, RecursionError) as exc:
        raise SkillError(f"the frontmatter is not valid YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillError("the frontmatter must be a YAML mapping (key: value lines)")
    return {str(k): v for k, v in data.items()}


# -- SKILL.md -> Skill ----------------------------------------------------------------------------


def parse_skill(text: str, name: str, path: Path | None = None, mtime: float = 0.0) -> Skill:
    """Read any skill file leniently under the lookup ``name``; ``SkillError`` if unusable."""
    parts = split_text(text)
    data = load_frontmatter(parts.frontmatter)
    meta: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    hermes_agent: dict[str, Any] = meta["hermes"] if isinstance(meta.get("hermes"), dict) else {}

    def pick(key: str) -> Any:
        return meta.get(key, data.get(key))

    body = clean_body(parts.body)
    description = _first_text(data.get("description"), data.get("summary"), meta.get("description"))
    if not description:
        description = first_paragraph(body)
    if not description:
        raise SkillError("it has no description (no 'description' or 'summary' key and no text in the body)")
    version = _as_int(pick("version"))
    created = _as_epoch(pick("created"))
    return Skill(
        name=name,
        description=clean_description(description),
        triggers=_words(pick("triggers")),
        body=body,
        version=max(1, version or 1),
        use_count=max(0, _as_int(pick("use_count")) or 0),
        created=created or mtime,
        updated=_as_epoch(pick("updated")) or created or mtime,
        path=path,
        keywords=_words(data.get("tags")) + _words(meta.get("tags")) + _words(hermes_agent.get("tags"))
        + _words(data.get("keywords")),
        platforms=[p.lower() for p in _words(pick("platforms"))],
        learned=version is not None and created is not None,
    )


def first_paragraph(body: str) -> str:
    """The first prose paragraph of a markdown body (headings, fences and rules skipped)."""
    lines: list[str] = []
    in_fence = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or stripped.startswith(("#", "<!--", "---", "===")) or not stripped:
            if lines and not in_fence:
                break
            continue
        lines.append(stripped)
    return " ".join(lines)


def _first_text(*values: Any) -> str:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return clean_triggers(value)
    if isinstance(value, list):
        return clean_triggers([str(v) for v in value if isinstance(v, (str, int, float))])
    return []


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _as_epoch(value: Any) -> float | None:
    """ISO 8601 strings, YAML timestamps/dates, or epoch numbers; anything else -> None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
    if isinstance(value, datetime):
        value = (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    elif isinstance(value, date):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        format_time(float(value))
    except (OverflowError, OSError, ValueError):
        return None
    return float(value)


# -- Skill -> a new SKILL.md ------------------------------------------------------------------------


def render_skill(skill: Skill) -> str:
    """SKILL.md text for a skill Hermes creates; passes ``skills-ref validate`` in a folder named ``skill.name``."""
    if not is_valid_name(skill.name):
        raise SkillError(f"{skill.name!r} is not a valid skill name; pass it through normalize_name() first")
    lines = [
        "---",
        f"name: {skill.name}",
        f"description: {yaml_scalar(clean_description(skill.description))}",
        "metadata:",
        *(f"  {key}: {yaml_scalar(value)}" for key, value in hermes_metadata(skill).items()),
        "---",
        "",
        clean_body(skill.body),
    ]
    return "\n".join(lines) + "\n"


def hermes_metadata(skill: Skill) -> dict[str, str]:
    """Hermes' own ``metadata`` keys for ``skill``, as the strings written to disk."""
    meta = {
        "triggers": ", ".join(clean_triggers(skill.triggers)),
        "version": str(int(skill.version)),
        "created": format_time(skill.created),
        "updated": format_time(skill.updated),
    }
    if skill.use_count:  # only for files made elsewhere; the index migrates it once and keeps counting
        meta["use_count"] = str(int(skill.use_count))
    return meta


__all__ = [
    "HERMES_META_KEYS",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "SkillText",
    "clean_body",
    "clean_description",
    "clean_line",
    "clean_triggers",
    "first_paragraph",
    "format_time",
    "hermes_metadata",
    "is_valid_name",
    "load_frontmatter",
    "normalize_name",
    "parse_skill",
    "render_skill",
    "split_text",
    "yaml_scalar",
]
