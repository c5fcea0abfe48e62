"""Where skills are in a library folder: the layouts Hermes reads, and what it skips and why.

Read layouts (``<root>`` is the skills folder or a folder being imported):

* ``<root>/<name>/SKILL.md`` — Hermes' own and the agentskills.io layout;
* ``<root>/<category>/<name>/SKILL.md`` — hermes-agent and bundles, any depth up to ``MAX_DEPTH``
  (so Claude plugin layouts such as ``<plugin>/skills/<name>/SKILL.md`` load too);
* ``<root>/<name>.md`` — Hermes' older flat files.

A folder holding a SKILL.md is a skill; its own sub-folders (``scripts/``, ``references/``,
``assets/``, ``versions/``) are its bundled files and are not searched for more skills. Dot
folders are entered (openai/skills keeps its skills under ``.curated/``, ``.experimental/`` and
``.system/``), except version-control, environment and cache folders; dot files are never read,
and the usual dependency folders are never entered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes_tui.skills.schema import SKILL_FILE, SkillError, is_valid_name, normalize_name

MAX_DEPTH = 6
NOT_SKILLS = frozenset({"scripts", "references", "assets", "versions", "node_modules", "__pycache__", "venv",
                        ".git", ".hg", ".svn", ".venv", ".tox", ".cache", ".mypy_cache", ".pytest_cache",
                        ".ruff_cache"})
LEGACY_IGNORED = frozenset({"readme.md", "license.md", "changelog.md", "contributing.md"})


@dataclass(frozen=True)
class Found:
    """One candidate file: ``rel`` is its path under the root (posix), ``problem`` a skip reason."""

    rel: str
    mtime_ns: int
    size: int
    depth: int  # 0 for a legacy flat file, else how deep the skill folder is
    problem: str = ""


def walk(root: Path) -> Iterator[Found]:
    """Every skill file under ``root`` with its stat (no file is read here)."""
    real_root = os.path.realpath(root)
    yield from _walk(root, real_root, "", 1)


def _walk(folder: Path, real_root: str, prefix: str, depth: int) -> Iterator[Found]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        rel = prefix + name
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if name.startswith(".") and not is_dir:
            continue
        if is_dir:
            if name in NOT_SKILLS:
                continue
            skill_md = os.path.join(entry.path, SKILL_FILE)
            try:
                info = os.lstat(skill_md)
            except OSError:
                if depth < MAX_DEPTH and not entry.is_symlink():
                    yield from _walk(Path(entry.path), real_root, rel + "/", depth + 1)
                continue
            yield _found(f"{rel}/{SKILL_FILE}", skill_md, info, real_root, depth,
                         entry.is_symlink())
        elif depth == 1 and name.lower().endswith(".md") and name.lower() not in LEGACY_IGNORED:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield _found(rel, entry.path, info, real_root, 0, False)


def _found(rel: str, path: str, info: os.stat_result, real_root: str, depth: int, linked_folder: bool) -> Found:
    problem = ""
    if linked_folder or stat.S_ISLNK(info.st_mode):
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            problem = f"it resolves to {real}, outside the skills folder"
        else:
            try:
                info = os.stat(real)
            except OSError:
                problem = "it is a broken symlink"
    if not problem and not stat.S_ISREG(info.st_mode):
        problem = "it is not a regular file"
    return Found(rel, info.st_mtime_ns, info.st_size, depth, problem)


def base_name(found: Found, frontmatter_name: object) -> tuple[str, str]:
    """The skill's name from its folder (or a legacy file's frontmatter/stem), and a notice if renamed."""
    rel = Path(found.rel)
    if found.depth:
        raw = rel.parent.name
    else:
        raw = frontmatter_name if isinstance(frontmatter_name, str) and frontmatter_name.strip() else rel.stem
    if is_valid_name(raw):
        return raw, ""
    try:
        name = normalize_name(raw)
    except SkillError:
        raise SkillError(f"{raw!r} cannot be made a skill name (use letters or digits)") from None
    return name, f"name {raw!r} normalized to {name!r}"


def namespace(rel: str, depth: int) -> str:
    """The ``source`` part of a namespaced name: the folders above the skill's own."""
    parts = Path(rel).parts
    if not depth:
        return "legacy"
    return "/".join(normalize_part(p) for p in parts[:-2]) or "local"


def normalize_part(part: str) -> str:
    try:
        return normalize_name(part)
    except SkillError:
        return "x"
