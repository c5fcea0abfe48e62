"""SkillManager: the skill library on disk (``skills_dir/<name>/SKILL.md``).

Design choices:

* The files are the only truth. Each read re-checks every file's stat, so skills written by
  another process (TUI + web + headless) show up at once; parsed files are cached by
  (inode, size, mtime, ctime) so ``list()`` every turn stays cheap.
* A file that cannot be used is skipped with one ``logging`` warning per file version and the
  rest are still listed: bad YAML, no description, binary, over 1 MB, not a regular file, a
  symlink resolving outside ``skills_dir``, or a folder whose name is not a valid skill name.
  A frontmatter ``name`` that differs from its folder is *accepted* under the folder name (with a
  warning) because the folder is what every lookup uses; the next write fixes the file.
* Legacy flat ``skills_dir/*.md`` files are read too; any write moves such a skill into its folder.
  A folder skill wins over a legacy file of the same name.
* ``refine``/``restore`` keep the replaced file as ``<name>/versions/v<N>.md`` (the validator only
  looks at SKILL.md, so extra folders are allowed); history is never lost.
* Writes are atomic (temp file in the same folder, fsync, ``os.replace``). Read-modify-write runs
  under a per-manager lock plus an ``flock`` on ``skills_dir/.lock`` (best effort across processes),
  and re-reads the file bypassing the cache, so concurrent ``record_use`` calls lose nothing.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from hermes_tui.private import private_dir, private_file
from hermes_tui.skills.schema import (
    SKILL_FILE,
    Skill,
    SkillError,
    clean_body,
    clean_description,
    clean_triggers,
    normalize_name,
    parse_skill,
    render_skill,
)

try:  # POSIX; elsewhere only the in-process lock applies
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
VERSIONS_DIR = "versions"
LOCK_FILE = ".lock"
_VERSION_FILE = re.compile(r"v([0-9]{1,9})\.md")

__all__ = ["MAX_FILE_BYTES", "SkillError", "SkillExistsError", "SkillManager", "SkillNotFoundError"]


class SkillExistsError(SkillError):
    """``create`` was given a name that is already taken."""


class SkillNotFoundError(SkillError):
    """No usable skill (or skill version) by that name."""


@dataclass
class _Cached:
    key: tuple[object, ...]
    skill: Skill | None  # None: the file is unusable and was warned about once


class SkillManager:
    """Create, find, rank, refine and count skills stored under ``skills_dir``."""

    def __init__(self, skills_dir: Path) -> None:
        self.skills_dir = Path(skills_dir)
        self._lock = threading.RLock()
        self._cache: dict[Path, _Cached] = {}

    # -- reading -----------------------------------------------------------------------------

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (any spelling that normalises to it), or None."""
        key = _canonical(name)
        with self._lock:
            skill = self._scan().get(key) if key else None
            return _copy(skill) if skill is not None else None

    def list(self) -> list[Skill]:
        """Every usable skill: most used first, then most recently updated, then by name."""
        with self._lock:
            skills = [_copy(s) for s in self._scan().values()]
        return sorted(skills, key=lambda s: (-s.use_count, -s.updated, s.name))

    def search(self, query: str, limit: int = 5) -> list[Skill]:
        """Skills matching ``query``, best first; [] when nothing (or only stop words) matches.

        Each query term scores, per field it occurs in, the field weight (triggers 4, name 3,
        description 2, body 1; half for a prefix match) times an IDF factor, so rare words count
        more. Terms are lowercased, stop words dropped and lightly stemmed on both sides.
        """
        if not isinstance(query, str) or limit <= 0:
            return []
        terms = _query_terms(query)
        if not terms:
            return []
        with self._lock:
            skills = [_copy(s) for s in self._scan().values()]
        indexed = [(skill, _skill_fields(skill)) for skill in skills]
        totals: dict[str, float] = {}
        for term in terms:
            gains = [
                sum(_WEIGHTS[f] * _match(term, idx) for f, idx in fields.items()) for _, fields in indexed
            ]
            matched = sum(1 for gain in gains if gain)
            idf = 1.0 + math.log((len(indexed) + 1) / (matched + 1))
            for (skill, _), gain in zip(indexed, gains, strict=True):
                if gain:
                    totals[skill.name] = totals.get(skill.name, 0.0) + gain * idf
        ranked = sorted(
            (skill for skill, _ in indexed if skill.name in totals),
            key=lambda s: (-totals[s.name], -s.use_count, -s.updated, s.name),
        )
        return ranked[:limit]

    def versions(self, name: str) -> list[int]:
        """Every version number ``restore`` accepts for ``name``, oldest first (current last)."""
        with self._lock:
            current = self._require(name)
            return self._versions(current)

    # -- writing -----------------------------------------------------------------------------

    def create(self, name: str, description: str, triggers: Iterable[str] = (), body: str = "") -> Skill:
        """Save a new skill at version 1; the name is normalised, an existing one is refused."""
        key = normalize_name(name)
        description = clean_description(description)
        trigger_list = clean_triggers(triggers)
        body = clean_body(body)
        with self._locked():
            folder = self.skills_dir / key
            if key in self._scan() or folder.exists() or folder.is_symlink():
                raise SkillExistsError(
                    f"a skill named {key!r} already exists ({folder}); refine it or choose another name"
                )
            now = time.time()
            skill = Skill(
                key, description, trigger_list, body, version=1, use_count=0, created=now, updated=now
            )
            return self._write(skill)

    def refine(
        self,
        name: str,
        *,
        description: str | None = None,
        triggers: Iterable[str] | None = None,
        body: str | None = None,
    ) -> Skill:
        """Save a new version with the given fields changed; the old one goes to ``versions/``."""
        if description is None and triggers is None and body is None:
            raise SkillError("refine needs at least one of description, triggers or body")
        with self._locked():
            current = self._require(name, fresh=True)
            return self._new_version(current, description, triggers, body)

    def restore(self, name: str, version: int) -> Skill:
        """Make a new version whose description, triggers and body equal those of ``version``."""
        with self._locked():
            current = self._require(name, fresh=True)
            if isinstance(version, bool) or not isinstance(version, int):
                raise SkillError(f"a version must be a whole number, not {version!r}")
            if version == current.version:
                old = current
            else:
                path = self.skills_dir / current.name / VERSIONS_DIR / f"v{version}.md"
                if version < 1 or not path.is_file():
                    available = ", ".join(str(v) for v in self._versions(current))
                    raise SkillNotFoundError(
                        f"skill {current.name!r} has no version {version}; available: {available}"
                    )
                try:
                    old = parse_skill(self._read_file(path), path)
                except SkillError as exc:
                    raise SkillError(f"version {version} of {current.name!r} is unreadable: {exc}") from None
            return self._new_version(current, old.description, old.triggers, old.body)

    def record_use(self, name: str) -> Skill:
        """Count one use; the version and ``updated`` stay (they track content, not use)."""
        with self._locked():
            current = self._require(name, fresh=True)
            return self._write(replace(current, use_count=current.use_count + 1))

    def delete(self, name: str) -> None:
        """Remove the skill's folder (with its history), or its legacy flat file."""
        with self._locked():
            current = self._require(name)
            assert current.path is not None
            folder = self.skills_dir / current.name
            if current.path.parent == self.skills_dir:
                current.path.unlink()
            elif folder.is_symlink():
                folder.unlink()
            else:
                shutil.rmtree(folder)
            self._cache.pop(current.path, None)
            log.info("deleted skill %s", current.name)

    def reload(self) -> None:
        """Forget parsed files (and so warn again about bad ones); the next read re-reads all."""
        with self._lock:
            self._cache.clear()

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Thread lock plus an advisory file lock, so other managers and processes wait too."""
        with self._lock:
            private_dir(self.skills_dir)
            with open(private_file(self.skills_dir / LOCK_FILE), "a+b") as handle:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_EX)
                yield

    def _require(self, name: str, fresh: bool = False) -> Skill:
        """The named skill or ``SkillNotFoundError``; ``fresh`` re-reads its file past the cache."""
        key = _canonical(name)
        skill = self._scan().get(key) if key else None
        if skill is not None and fresh:
            assert skill.path is not None
            self._cache.pop(skill.path, None)
            skill = self._load(skill.path, self.skills_dir.resolve())
        if skill is None:
            raise SkillNotFoundError(f"no skill named {name!r}; list the skills to see their names")
        return _copy(skill)

    def _versions(self, current: Skill) -> list[int]:
        folder = self.skills_dir / current.name / VERSIONS_DIR
        archived = []
        if folder.is_dir():
            for entry in folder.iterdir():
                match = _VERSION_FILE.fullmatch(entry.name)
                if match and int(match.group(1)) < current.version:
                    archived.append(int(match.group(1)))
        return sorted(archived) + [current.version]

    def _new_version(
        self,
        current: Skill,
        description: str | None,
        triggers: Iterable[str] | None,
        body: str | None,
    ) -> Skill:
        assert current.path is not None
        updated = replace(
            current,
            description=current.description if description is None else clean_description(description),
            triggers=current.triggers if triggers is None else clean_triggers(triggers),
            body=current.body if body is None else clean_body(body),
            version=current.version + 1,
            updated=time.time(),
        )
        archive = (f"v{current.version}.md", self._read_file(current.path).encode("utf-8"))
        return self._write(updated, archive)

    def _write(self, skill: Skill, archive: tuple[str, bytes] | None = None) -> Skill:
        """Write SKILL.md atomically (after archiving the old text if given); migrate legacy files."""
        text = render_skill(skill)
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise SkillError(
                f"skill {skill.name!r} would be {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,} "
                "(keep the body to the steps that matter)"
            )
        folder = self.skills_dir / skill.name
        target = folder / SKILL_FILE
        moving = skill.path is not None and skill.path != target  # a legacy flat file
        if moving and (target.exists() or target.is_symlink()):
            raise SkillError(
                f"cannot move legacy skill file {skill.path} into {folder}: it already has a {SKILL_FILE}"
            )
        private_dir(folder)
        if archive is not None:
            private_dir(folder / VERSIONS_DIR)
            _atomic_write(folder / VERSIONS_DIR / archive[0], archive[1])
        _atomic_write(target, data)
        if moving:
            assert skill.path is not None
            skill.path.unlink(missing_ok=True)
            self._cache.pop(skill.path, None)
        # Not cached from here: the next read stats the new file and parses what is really there.
        self._cache.pop(target, None)
        return parse_skill(text, target)  # exactly what a later read returns (times in microseconds)

    def _scan(self) -> dict[str, Skill]:
        """Name -> skill for every usable file; call with ``self._lock`` held."""
        try:
            entries = sorted(os.scandir(self.skills_dir), key=lambda e: e.name)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            log.warning("cannot read the skills folder %s: %s", self.skills_dir, exc)
            return {}
        root = self.skills_dir.resolve()
        skills: dict[str, Skill] = {}
        legacy: list[Path] = []
        seen: set[Path] = set()
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if entry.is_dir():
                skill_md = path / SKILL_FILE
                if skill_md.exists() or skill_md.is_symlink():
                    seen.add(skill_md)
                    skill = self._load(skill_md, root)
                    if skill is not None:
                        skills[skill.name] = skill
            elif entry.name.endswith(".md"):
                legacy.append(path)
        for path in legacy:
            seen.add(path)
            skill = self._load(path, root)
            if skill is None:
                continue
            if skill.name in skills:
                log.debug("legacy skill file %s is shadowed by %s", path, skills[skill.name].path)
                continue
            skills[skill.name] = skill
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return skills

    def _load(self, path: Path, root: Path) -> Skill | None:
        """Parse one file, via the cache; an unusable file is warned about once per version."""
        try:
            real, info = _resolve(path)
        except SkillError as exc:
            return self._remember(path, ("unreadable", str(exc)), None, exc)
        key = (str(real), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        cached = self._cache.get(path)
        if cached is not None and cached.key == key:
            return cached.skill
        try:
            return self._remember(path, key, parse_skill(_read_checked(real, info, root), path), None)
        except SkillError as exc:
            return self._remember(path, key, None, exc)

    def _remember(
        self, path: Path, key: tuple[object, ...], skill: Skill | None, problem: SkillError | None
    ) -> Skill | None:
        cached = self._cache.get(path)
        if problem is not None and (cached is None or cached.key != key):
            log.warning("skipping skill file %s: %s", path, problem)
        self._cache[path] = _Cached(key, skill)
        return skill

    def _read_file(self, path: Path) -> str:
        real, info = _resolve(path)
        return _read_checked(real, info, self.skills_dir.resolve())


# -- file helpers -----------------------------------------------------------------------------


def _resolve(path: Path) -> tuple[Path, os.stat_result]:
    try:
        real = path.resolve(strict=True)
        return real, real.stat()
    except (OSError, RuntimeError) as exc:
        raise SkillError(
            f"cannot open it ({exc.__class__.__name__}: broken symlink or no permission?)"
        ) from None


def _read_checked(real: Path, info: os.stat_result, root: Path) -> str:
    """The file's text, refusing anything outside ``root``, special, oversized, binary or non-UTF-8."""
    if not real.is_relative_to(root):
        raise SkillError(f"it resolves to {real}, outside the skills folder {root}")
    if not stat.S_ISREG(info.st_mode):
        raise SkillError("it is not a regular file")
    too_big = SkillError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
    if info.st_size > MAX_FILE_BYTES:
        raise too_big
    try:
        with open(real, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SkillError(f"cannot read it: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise too_big
    if b"\x00" in data:
        raise SkillError("it looks binary (it contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkillError("it is not UTF-8 text") from None


def _atomic_write(target: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never a torn one, even after a crash."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def _copy(skill: Skill) -> Skill:
    """Callers get their own lists and dicts, so mutating a result never touches the cache."""
    return replace(
        skill,
        triggers=list(skill.triggers),
        extra_fields=dict(skill.extra_fields),
        extra_metadata=dict(skill.extra_metadata),
    )


def _canonical(name: str) -> str | None:
    try:
        return normalize_name(name)
    except SkillError:
        return None


# -- search -----------------------------------------------------------------------------------

_WEIGHTS = {"triggers": 4.0, "name": 3.0, "description": 2.0, "body": 1.0}
_MAX_QUERY_CHARS = 2000
_MAX_QUERY_TERMS = 32
_TOKEN = re.compile(r"[^\W_]+")
_STOP_WORDS = frozenset(
    """a about after all also am an and any are as at be been being but by can could did do does doing
    for from get got had has have he her him his how i if in into is it its just let lets like me might
    more most must my need no not now of on onto or our out over please she should so some such than
    that the their them then there these they this those through to too up us use using very want was
    we were what when where which while who why will with would you your""".split()
)
_SUFFIXES = ("ation", "ment", "ness", "ing", "ed", "er", "ly")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Light English stemming: deploys/deployed/deploying/deployment -> deploy."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "lsz":  # shipped -> ship
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:  # configure/configuring -> configur
        word = word[:-1]
    return word


def _terms(text: str) -> list[str]:
    return [_stem(token) for token in _TOKEN.findall(text.lower()) if token not in _STOP_WORDS]


def _query_terms(query: str) -> list[str]:
    unique = dict.fromkeys(_terms(query[:_MAX_QUERY_CHARS]))
    return list(unique)[:_MAX_QUERY_TERMS]


@lru_cache(maxsize=4096)
def _field_index(text: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """Term set (exact lookups) and sorted terms (prefix lookups) of one field's text."""
    terms = frozenset(_terms(text))
    return terms, tuple(sorted(terms))


def _skill_fields(skill: Skill) -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    return {
        "triggers": _field_index(" ".join(skill.triggers)),
        "name": _field_index(skill.name),
        "description": _field_index(skill.description),
        "body": _field_index(skill.body),
    }


def _match(term: str, field: tuple[frozenset[str], tuple[str, ...]]) -> float:
    """1 for the term itself, 0.5 when one is a prefix (>= 4 letters) of the other, else 0."""
    terms, ordered = field
    if term in terms:
        return 1.0
    if len(term) < 4:
        return 0.0
    at = bisect_left(ordered, term)
    if at < len(ordered) and ordered[at].startswith(term):
        return 0.5
    if any(term[:k] in terms for k in range(4, len(term))):
        return 0.5
    return 0.0
