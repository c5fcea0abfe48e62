"""The core every skill-library operation shares: the SQLite index kept in step with the files, the
lock that serialises writers, and the one path by which Hermes writes a SKILL.md.

``versions.py`` adds a skill's history on top, ``manager.py`` the library's public API; the module
docstring of ``manager.py`` states the rules all three keep.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from hermes_tui.clock import Clock
from hermes_tui.private import private_dir, private_file, write_private
from hermes_tui.progress import NO_PROGRESS, Progress
from hermes_tui.skills import guard
from hermes_tui.skills.files import MAX_FILE_BYTES, VERSIONS_DIR, archived_count, decode, read_bytes, read_text, sha
from hermes_tui.skills.index import Entry, Row, SkillIndex
from hermes_tui.skills.layout import Found, base_name, namespace, walk
from hermes_tui.skills.lifecycle import DEFAULT_AGES, Ages
from hermes_tui.skills.patch import patch_skill
from hermes_tui.skills.schema import (
    SKILL_FILE,
    Skill,
    SkillError,
    clean_body,
    clean_description,
    clean_triggers,
    format_time,
    load_frontmatter,
    normalize_name,
    parse_skill,
    split_text,
)

try:  # POSIX; elsewhere only the in-process lock applies
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]  # no fcntl (Windows): no file lock

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
# A small library (up to FREE_WALK_FILES files, a walk well under a millisecond) is re-walked on
# every read, so hand edits show at once; a bigger one at most every REFRESH_SECONDS (writes
# through Hermes are in the shared index at once either way).
REFRESH_SECONDS = 2.0
FREE_WALK_FILES = 100
PROGRESS_FROM = 50  # changed files from which a refresh reports its progress (a first index, an import)
PROGRESS_CHUNK = 25  # files read between two reports
PLATFORM = {"darwin": "macos", "win32": "windows", "cygwin": "windows"}.get(sys.platform, "linux")
PLATFORM_NAMES = {"darwin": "macos", "osx": "macos", "mac": "macos", "win": "windows", "win32": "windows"}


class SkillExistsError(SkillError):
    """``create`` was given a name that is already taken."""


class SkillNotFoundError(SkillError):
    """No usable skill (or skill version) by that name."""


class SkillGuardError(SkillError):
    """The guard flagged the text Hermes was asked to save."""


class Library:
    """The skills under ``skills_dir`` and their index: finding rows, reading skills, writing files."""

    def __init__(self, skills_dir: Path, index_path: Path | None = None, *, ages: Ages = DEFAULT_AGES,
                 clock: Clock = time.time, archive_dir: Path | None = None,
                 progress: Progress = NO_PROGRESS) -> None:
        self.skills_dir = Path(skills_dir)
        self.progress = progress  # told while a big refresh reads files (a first index: seconds)
        self.index_path = index_path or self.skills_dir.parent / f"{self.skills_dir.name}-index.sqlite3"
        self.archive_dir = archive_dir or self.skills_dir.parent / f"{self.skills_dir.name}-archive"
        self.ages = ages
        self.clock = clock
        self._lock = threading.RLock()
        self._index: SkillIndex | None = None
        self._checked = float("-inf")
        self._lock_depth = 0

    @property
    def index(self) -> SkillIndex:
        if self._index is None:
            self._index = SkillIndex(self.index_path)
        return self._index

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Thread lock plus an advisory file lock, so other managers and processes wait too."""
        with self._lock:
            if self._lock_depth:  # re-entered (propose -> create): the flock is already held
                yield
                return
            private_dir(self.skills_dir)
            with open(private_file(self.skills_dir / LOCK_FILE), "a+b") as handle:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_EX)
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1

    def _refresh(self, force: bool = False) -> None:
        """Bring the index up to date with the files whose (mtime, size) changed."""
        now = time.monotonic()
        if not force and now - self._checked < REFRESH_SECONDS:
            return
        found = list(walk(self.skills_dir)) if self.skills_dir.is_dir() else []
        self._checked = now if len(found) > FREE_WALK_FILES else float("-inf")
        known = self.index.stats()
        changed = [f for f in found if known.get(f.rel) != (f.mtime_ns, f.size)]
        gone = set(known) - {f.rel for f in found}
        if not changed and not gone:
            return
        entries = self._entries(changed)
        with self.index.write() as conn:
            self.index.remove(conn, gone)
            for entry in entries:
                self.index.upsert(conn, entry)
            self.index.assign_names(conn, namespace)

    def _entries(self, changed: list[Found]) -> list[Entry]:
        """Read and judge the changed files (the slow part of a refresh: writing the index takes
        a fortieth of it); many files, as in a first index, report how far the reading got."""
        if len(changed) < PROGRESS_FROM:
            return [self._entry(f) for f in changed]
        entries: list[Entry] = []
        self.progress.start("Indexing the skills library", len(changed))
        try:
            for start in range(0, len(changed), PROGRESS_CHUNK):
                chunk = changed[start:start + PROGRESS_CHUNK]
                entries += [self._entry(f) for f in chunk]
                self.progress.advance(len(chunk))
        finally:
            self.progress.done()
        return entries

    def _entry(self, found: Found) -> Entry:
        """Read and judge one file; problems become a skipped entry with the reason (and a warning)."""
        path = self.skills_dir / found.rel
        try:
            if found.problem:
                raise SkillError(found.problem)
            data = read_bytes(path, self.skills_dir)
            text = decode(data)
            parts = split_text(text)
            frontmatter = load_frontmatter(parts.frontmatter)
            base, notice = base_name(found, frontmatter.get("name"))
            given = frontmatter.get("name")
            if found.depth and isinstance(given, str) and given.strip() and given != base:
                notice = "; ".join(filter(None, [notice, f"frontmatter name {given!r} differs; using {base!r}"]))
            skill = parse_skill(text, base, path, found.mtime_ns / 1e9)
            if skill.platforms and PLATFORM not in {PLATFORM_NAMES.get(p, p) for p in skill.platforms}:
                raise SkillError(f"it is only for {', '.join(skill.platforms)} (this is {PLATFORM})")
        except SkillError as exc:
            log.warning("skipping skill file %s: %s", path, exc)
            return Entry(found.rel, found.mtime_ns, found.size, found.depth, skipped=str(exc))
        if notice:
            log.info("skill %s: %s", path, notice)
        version = skill.version if skill.learned else 1 + archived_count(path.parent, found.depth)
        flag = guard.verdict([skill.name, skill.description, " ".join(skill.triggers), skill.body])
        if flag:
            log.warning("skill %s quarantined by the guard: %s", path, flag)
        return Entry(
            found.rel, found.mtime_ns, found.size, found.depth, sha(data), base, "", flag, notice,
            skill.description, tuple(skill.triggers), tuple(skill.keywords), tuple(skill.platforms),
            version, skill.created, skill.updated, skill.learned, skill.body, skill.use_count,
        )

    def _find(self, name: str, force: bool = False) -> Row | None:
        """The indexed row for ``name`` (exact, or any spelling that normalises to it)."""
        if not isinstance(name, str):
            return None
        self._refresh(force)
        row = self.index.by_name(name.strip())
        if row is None:
            key = canonical_name(name)
            row = self.index.by_name(key) if key else None
        if row is not None and self._stale(row):
            self._refresh(force=True)
            row = self.index.by_rel(row.rel)
            return row if row is not None and row.name is not None else None
        return row

    def _stale(self, row: Row) -> bool:
        """Did this one file change since it was indexed (cheap: one stat)?"""
        try:
            info = os.stat(self.skills_dir / row.rel)
        except OSError:
            return True
        found = self.index.conn.execute("SELECT mtime_ns, size FROM files WHERE id = ?", (row.id,)).fetchone()
        return found != (info.st_mtime_ns, info.st_size)

    def _require(self, name: str, force: bool = False) -> Row:
        row = self._find(name, force)
        if row is None or row.name is None:
            raise SkillNotFoundError(f"no skill named {name!r}; list the skills to see their names")
        return row

    def _skill(self, row: Row, body: str = "") -> Skill:
        assert row.name is not None
        return Skill(
            name=row.name, description=row.description, triggers=list(row.triggers), body=body,
            version=row.version, use_count=row.use_count, created=row.created, updated=row.updated,
            path=self.skills_dir / row.rel, last_used=row.last_used, keywords=list(row.keywords),
            platforms=list(row.platforms), quarantine=row.flag, learned=row.learned, notice=row.notice,
        )

    def _full(self, row: Row) -> Skill:
        """The skill with its body, read from the file now."""
        path = self.skills_dir / row.rel
        text = read_text(path, self.skills_dir)
        return self._skill(row, body=clean_body(split_text(text).body))

    def _folder(self, row: Row) -> Path:
        path = self.skills_dir / row.rel
        return path.parent if path.name == SKILL_FILE else self.skills_dir / (row.name or path.stem)

    def _write(self, rel: str, text: str, archive: tuple[str, bytes] | None = None,
               old_rel: str | None = None, written: bool = True) -> Skill:
        """Write a SKILL.md atomically (after archiving the old text), then index it at once.

        ``written``: the text is Hermes' own (False for a hand edit: the file stays the user's)."""
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            name = rel.rsplit("/", 2)[0]
            raise SkillError(
                f"skill {name!r} would be {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,} "
                "(keep the body to the steps that matter)"
            )
        target = self.skills_dir / rel
        if old_rel is not None and (target.exists() or target.is_symlink()):
            raise SkillError(f"cannot move legacy skill file {old_rel} into {target.parent}: it already has a {SKILL_FILE}")
        private_dir(target.parent)
        if archive is not None:
            private_dir(target.parent / VERSIONS_DIR)
            write_private(target.parent / VERSIONS_DIR / archive[0], archive[1])
        write_private(target, data)
        if old_rel is not None:
            (self.skills_dir / old_rel).unlink(missing_ok=True)
        info = os.stat(target)
        depth = rel.count("/")
        entry = self._entry(Found(rel, info.st_mtime_ns, info.st_size, depth))
        with self.index.write() as conn:
            if old_rel is not None:
                self.index.move_usage(conn, old_rel, rel)
                self.index.forget(conn, old_rel)
            self.index.upsert(conn, entry)
            if written:
                self.index.set_written(conn, rel, sha(data), entry.body)
            self.index.assign_names(conn, namespace)
        row = self.index.by_rel(rel)
        assert row is not None and row.name is not None
        return self._full(row)

    def _refine_row(
        self,
        row: Row,
        description: str | None,
        triggers: Iterable[str] | None,
        body: str | None,
        force: bool = False,
        metadata: dict[str, str] | None = None,
    ) -> Skill:
        """``metadata``: more ``metadata`` keys to set with the change (a refinement's provenance)."""
        current = self._full(row)
        new_description = current.description if description is None else clean_description(description)
        new_triggers = current.triggers if triggers is None else clean_triggers(triggers)
        new_body = current.body if body is None else clean_body(body)
        if not force and unchanged(current, new_description, new_triggers, new_body):
            return current  # a no-op refinement writes nothing and bumps nothing
        checked(replace(current, description=new_description, triggers=new_triggers, body=new_body))
        path = self.skills_dir / row.rel
        old_text = read_text(path, self.skills_dir)
        text = self._patched(old_text, current, new_description, new_triggers, new_body, metadata)
        folder = self._folder(row)
        rel = f"{folder.relative_to(self.skills_dir).as_posix()}/{SKILL_FILE}"
        return self._write(rel, text, archive=(f"v{row.version}.md", old_text.encode("utf-8")),
                           old_rel=row.rel if rel != row.rel else None)

    def _patched(self, text: str, current: Skill, description: str, triggers: list[str], body: str,
                 metadata: dict[str, str] | None = None) -> str:
        top = {"description": description} if description != current.description else {}
        meta: dict[str, str] = dict(metadata or {})
        if triggers != current.triggers:
            meta["triggers"] = ", ".join(triggers)
        if current.learned:
            meta["version"] = str(current.version + 1)
            meta["updated"] = format_time(self.clock())
        return patch_skill(text, top, meta, body if body != current.body else None)


def checked(skill: Skill) -> Skill:
    """Refuse what Hermes must not save: an empty body, or text the guard flags."""
    if not skill.body:
        raise SkillError("a skill needs a body: the steps to follow (markdown)")
    flagged = guard.verdict([skill.name, skill.description, " ".join(skill.triggers), skill.body])
    if flagged:
        raise SkillGuardError(f"refused by the skill guard: {flagged}")
    return skill


def unchanged(current: Skill, description: str, triggers: list[str], body: str) -> bool:
    return (current.description, current.triggers, current.body) == (description, triggers, body)


def clean_query(query: str) -> str:
    return query.encode("utf-8", "replace").decode("utf-8")


def canonical_name(name: str) -> str | None:
    parts = [p for p in name.strip().split("/") if p.strip()]
    try:
        return "/".join(normalize_name(p) for p in parts) or None
    except SkillError:
        return None
