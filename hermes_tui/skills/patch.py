"""Change Hermes' keys in someone else's SKILL.md without touching anything else.

Re-dumping YAML loses comments, quoting, key order, block scalars and flow lists, so a refinement
is a *textual* patch: the lines of the keys Hermes owns are replaced (or appended), every other
line is kept byte for byte. The result is then parsed and compared with the original: if any key
Hermes does not own changed its value, or Hermes' keys did not land, the patch is refused
(``PatchError``) and the caller keeps the proposal aside instead of writing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hermes_tui.skills.schema import SkillError, load_frontmatter, split_text, yaml_scalar

_KEY = re.compile(r"""^(?P<indent>[ \t]*)(?P<key>"[^"\n]*"|'[^'\n]*'|[^\s#'"\-?:][^:#\n]*?)[ \t]*:(?:[ \t]|\r?$)""")


class PatchError(SkillError):
    """The file cannot be patched safely (for example an inline ``metadata: {…}``)."""


@dataclass
class _Block:
    """A key of a SKILL.md front matter and the lines its value spans."""

    key: str
    start: int  # index of the key line
    end: int  # one past its last line


def patch_skill(text: str, top: dict[str, str], metadata: dict[str, str], body: str | None) -> str:
    """``text`` with top-level keys ``top`` and ``metadata.<key>`` values set, and the body replaced.

    Values are single-line strings. ``body=None`` keeps the body's bytes.
    """
    parts = split_text(text)
    before = load_frontmatter(parts.frontmatter)
    lines = parts.frontmatter.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    for key, value in top.items():
        _set_top(lines, key, value, newline)
    if metadata:
        _set_metadata(lines, metadata, newline)
    frontmatter = "".join(lines)
    if parts.has_frontmatter:
        opening = parts.head[: parts.head.index("\n") + 1]
        closing = parts.head[len(opening) + len(parts.frontmatter):]
        head = opening + frontmatter + closing
    else:
        head = f"---{newline}{frontmatter}---{newline}"
    new_body = parts.body if body is None else (newline + body.replace("\n", newline) + newline)
    result = head + new_body
    _verify(before, load_frontmatter(split_text(result).frontmatter), top, metadata)
    return result


def _blocks(lines: list[str], indent: str) -> list[_Block]:
    """The keys at exactly ``indent`` and the lines that belong to each."""
    blocks: list[_Block] = []
    for index, line in enumerate(lines):
        match = _KEY.match(line)
        if match and match.group("indent") == indent:
            if blocks:
                blocks[-1].end = index
            blocks.append(_Block(_unquote(match.group("key")), index, len(lines)))
        elif blocks and _dedented(line, indent):
            blocks[-1].end = index
            break
    return blocks


def _dedented(line: str, indent: str) -> bool:
    """A content line less indented than ``indent`` (it ends a nested mapping)."""
    stripped = line.lstrip(" \t")
    if not stripped.strip() or stripped.startswith("#"):
        return False
    return len(line) - len(stripped) < len(indent)


def _trim(lines: list[str], block: _Block) -> int:
    """Where to insert after ``block``: after its last content line (trailing blanks/comments stay)."""
    end = block.end
    while end > block.start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _set_top(lines: list[str], key: str, value: str, newline: str) -> None:
    new = f"{key}: {yaml_scalar(value)}{newline}"
    blocks = {b.key: b for b in _blocks(lines, "")}
    if key in blocks:
        block = blocks[key]
        lines[block.start:_trim(lines, block)] = [new]
        return
    at = blocks["metadata"].start if "metadata" in blocks else len(lines)
    lines.insert(at, new)


def _set_metadata(lines: list[str], values: dict[str, str], newline: str) -> None:
    blocks = {b.key: b for b in _blocks(lines, "")}
    block = blocks.get("metadata")
    if block is None:
        lines.append(f"metadata:{newline}")
        lines.extend(f"  {k}: {yaml_scalar(v)}{newline}" for k, v in values.items())
        return
    head = lines[block.start]
    after_colon = head.split(":", 1)[1].strip()
    if after_colon and not after_colon.startswith("#"):
        raise PatchError("its 'metadata' is written inline; Hermes will not rewrite it")
    end = _trim(lines, block)
    children = lines[block.start + 1:end]
    indent = next(
        (c[: len(c) - len(c.lstrip(" \t"))] for c in children if c.strip() and not c.lstrip().startswith("#")),
        "  ",
    )
    if not indent:
        raise PatchError("its 'metadata' block is not indented")
    inner = _blocks(children, indent)
    known = {b.key: b for b in inner}
    for key, value in values.items():
        new = f"{indent}{key}: {yaml_scalar(value)}{newline}"
        if key in known:
            child = known[key]
            stop = _trim(children, child)
            children[child.start:stop] = [new]
            inner = _blocks(children, indent)
            known = {b.key: b for b in inner}
        else:
            children.append(new)
    lines[block.start + 1:end] = children


def _unquote(key: str) -> str:
    return key[1:-1] if key[:1] in "'\"" and key[-1:] == key[:1] else key


def _verify(before: dict[str, Any], after: dict[str, Any], top: dict[str, str], metadata: dict[str, str]) -> None:
    """Refuse any patch that changed a key Hermes does not own or failed to set one it does."""
    for key, value in top.items():
        if after.get(key) != value:
            raise PatchError(f"setting {key!r} did not round-trip")
    old_meta: dict[str, Any] = before["metadata"] if isinstance(before.get("metadata"), dict) else {}
    new_meta = after.get("metadata")
    if metadata:
        if not isinstance(new_meta, dict):
            raise PatchError("metadata did not round-trip")
        for key, value in metadata.items():
            if new_meta.get(key) != value:
                raise PatchError(f"setting metadata.{key} did not round-trip")
    for key in set(before) | set(after):
        if key in top or (key == "metadata" and metadata):
            continue
        if before.get(key) != after.get(key):
            raise PatchError(f"patching would have changed {key!r}")
    if metadata and isinstance(new_meta, dict):
        for key in set(old_meta) | set(new_meta):
            if key not in metadata and old_meta.get(key) != new_meta.get(key):
                raise PatchError(f"patching would have changed metadata.{key}")
