"""``hermes-tui skills import DIR``: copy other people's skill libraries into Hermes' own.

Any layout ``layout.walk`` reads is accepted (flat folders, category folders, Claude plugin
bundles, legacy flat files). Each skill folder is copied whole — SKILL.md byte for byte, with its
``scripts/``, ``references/`` and ``assets/`` — to ``skills_dir/<name>``. A name already taken is
renamed after its source folder; nothing is overwritten and every skip says why. A copy the skill
guard flags is quarantined like any skill (held back until the user approves it); the report
names each one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from hermes_tui.private import private_dir
from hermes_tui.progress import NO_PROGRESS, Progress
from hermes_tui.skills.layout import Found, base_name, namespace, normalize_part, walk
from hermes_tui.skills.manager import MAX_FILE_BYTES, SkillManager
from hermes_tui.skills.schema import SKILL_FILE, SkillError, load_frontmatter, parse_skill, split_text

IMPORT_CHUNK = 20  # skills copied between two reports to the progress


@dataclass
class ImportReport:
    imported: list[tuple[str, str]] = field(default_factory=list)  # (source path, name)
    renamed: list[tuple[str, str, str]] = field(default_factory=list)  # (source path, name, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source path, reason)
    quarantined: list[tuple[str, str]] = field(default_factory=list)  # (name, the guard's reason): copied, held back

    def lines(self) -> list[str]:
        out = [f"imported {len(self.imported)}, renamed {len(self.renamed)}, skipped {len(self.skipped)}"]
        out += [f"  renamed {src} -> {name}: {why}" for src, name, why in self.renamed]
        out += [f"  skipped {src}: {reason}" for src, reason in self.skipped]
        return out


def import_library(source: Path, manager: SkillManager, progress: Progress = NO_PROGRESS) -> ImportReport:
    """Copy every usable skill under ``source`` into ``manager``'s library; ``progress`` is told
    how many were copied, ``IMPORT_CHUNK`` at a time (the manager's own progress then tells how
    the new skills are indexed)."""
    report = ImportReport()
    source = Path(source)
    if not source.is_dir():
        raise SkillError(f"{source} is not a folder")
    with manager._locked():  # one writer at a time, like every library change
        manager.reload()
        found_all = list(walk(source))
        progress.start(f"Importing skills from {source.name}", len(found_all))
        try:
            for start in range(0, len(found_all), IMPORT_CHUNK):
                chunk = found_all[start:start + IMPORT_CHUNK]
                for found in chunk:
                    _import_one(source, found, manager, report)
                progress.advance(len(chunk))
        finally:
            progress.done()
        manager.reload()
        for name in [name for _, name in report.imported] + [name for _, name, _ in report.renamed]:
            skill = manager.get(name)
            if skill is not None and skill.quarantine:  # the guard judged the copy: it is held back
                report.quarantined.append((name, skill.quarantine))
    return report


def _import_one(source: Path, found: Found, manager: SkillManager, report: ImportReport) -> None:
    """Copy one skill folder (or legacy file), or say in ``report`` why it was skipped or renamed."""
    path = source / found.rel
    try:
        if found.problem:
            raise SkillError(found.problem)
        if found.size > MAX_FILE_BYTES:
            raise SkillError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
        text = path.read_bytes().decode("utf-8")
        frontmatter = load_frontmatter(split_text(text).frontmatter)
        name, notice = base_name(found, frontmatter.get("name"))
        parse_skill(text, name)
    except (SkillError, UnicodeDecodeError, OSError) as exc:
        reason = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
        report.skipped.append((found.rel, reason))
        return
    target, why = _free_name(manager, name, found.rel, found.depth, source.name)
    why = "; ".join(filter(None, [notice, why]))
    private_dir(manager.skills_dir)
    if found.depth:
        shutil.copytree(path.parent, manager.skills_dir / target, symlinks=True, ignore=_ignored)
    else:
        private_dir(manager.skills_dir / target)
        shutil.copyfile(path, manager.skills_dir / target / SKILL_FILE)
    if why:
        report.renamed.append((found.rel, target, why))
    else:
        report.imported.append((found.rel, target))


def _free_name(manager: SkillManager, name: str, rel: str, depth: int, source: str) -> tuple[str, str]:
    """``name`` if free in the library, else one made from its source folder (then numbered)."""
    if manager.get(name) is None and not (manager.skills_dir / name).exists():
        return name, ""
    prefix = namespace(rel, depth) if depth > 1 else source
    base = f"{normalize_part(prefix.replace('/', '-'))}-{name}"[:64].strip("-")
    candidate, n = base, 2
    while manager.get(candidate) is not None or (manager.skills_dir / candidate).exists():
        candidate, n = f"{base[:60]}-{n}", n + 1
    return candidate, f"a skill named {name!r} already exists"


def _ignored(folder: str, names: list[str]) -> set[str]:
    """Hermes' own history and hidden files stay behind; links are not followed out of the copy."""
    return {n for n in names if n.startswith(".") or n == "versions" or Path(folder, n).is_symlink()}
