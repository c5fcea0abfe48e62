"""SkillManager: the skill library on disk, indexed in SQLite, guarded, and never damaged.

* **The files are the truth; the index is a cache plus bookkeeping.** Every read refreshes the
  index from the files' (mtime, size) at most every ``REFRESH_SECONDS`` (writes by any Hermes
  process update the shared index at once, so only hand edits wait that long); ``reload()``
  forces it. Lookups and searches are SQL queries, never a rescan.
* **Lossless.** Using a skill writes only the database. A refinement patches Hermes' own keys as
  text (``patch.py``); everything else in the file stays byte for byte. The replaced file is
  archived as ``versions/v<N>.md`` first. A refinement that changes nothing writes nothing.
* **User edits win.** Hermes remembers the hash and body of what it last wrote. The curator's
  proposal for a file that changed since (or that Hermes never wrote) is kept as
  ``versions/pending-<time>.md`` for the user to diff and accept, never written over the file;
  accepting merges it into the file on disk (``merge.py``), so the user's lines stay. A hand edit
  from the Skills pane (``book_edit``) archives the version before it, as a refinement does.
* **Guarded.** The guard (``guard.py``) runs on every file indexed and on everything Hermes is
  asked to save; a flagged skill is quarantined (left out of list, search, hints and use) until
  the user approves that exact content or deletes it. Hermes refuses to save flagged text.
* **Earns its place** (``lifecycle.py``). Each use is booked against its turn's outcome, the
  ranker weighs bm25 by how useful a skill has been, and unused learned skills go stale, then
  move to the archive folder (``archive``/``unarchive``; never deleted).
* **Concurrent.** Read-modify-write (create, refine, propose, accept, restore, delete) runs under a
  per-manager lock plus an ``flock`` on ``skills_dir/.lock``, so processes never lose a proposal.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import re
import shutil
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui.clock import Clock
from hermes_tui.progress import NO_PROGRESS, Progress
from hermes_tui.private import private_dir, private_file, write_private
from hermes_tui.skills import guard
from hermes_tui.skills.index import Entry, Row, SkillIndex
from hermes_tui.skills.layout import Found, base_name, namespace, walk
from hermes_tui.skills.lifecycle import Ages, SkillState, state_of, turn_outcome
from hermes_tui.skills.merge import Merged, merge_text
from hermes_tui.skills.patch import PatchError, patch_skill
from hermes_tui.skills.similar import CANDIDATES, near_duplicate
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
    render_skill,
    split_text,
)

if TYPE_CHECKING:
    from hermes_tui.config import Config

try:  # POSIX; elsewhere only the in-process lock applies
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
VERSIONS_DIR = "versions"
LOCK_FILE = ".lock"
# A small library (up to FREE_WALK_FILES files, a walk well under a millisecond) is re-walked on
# every read, so hand edits show at once; a bigger one at most every REFRESH_SECONDS (writes
# through Hermes are in the shared index at once either way).
REFRESH_SECONDS = 2.0
FREE_WALK_FILES = 100
PROGRESS_FROM = 50  # changed files from which a refresh reports its progress (a first index, an import)
PROGRESS_CHUNK = 25  # files read between two reports
# The per-turn hint names a skill only when at least HINT_WORDS distinct words of the request occur
# in its name, triggers or description (measured in tests/test_skills.py: unrelated requests
# rarely reach it, paraphrases written against curator-style triggers do).
HINT_WORDS = 2
_VERSION_FILE = re.compile(r"v([0-9]{1,9})\.md")
_PENDING_FILE = re.compile(r"pending-[0-9T]+-[0-9]+\.md")
PLATFORM = {"darwin": "macos", "win32": "windows", "cygwin": "windows"}.get(sys.platform, "linux")
PLATFORM_NAMES = {"darwin": "macos", "osx": "macos", "mac": "macos", "win": "windows", "win32": "windows"}

__all__ = [
    "MAX_FILE_BYTES", "Accepted", "HeldBack", "Outcome", "SkillError", "SkillExistsError", "SkillGuardError",
    "SkillManager", "SkillNotFoundError", "Version",
]


class SkillExistsError(SkillError):
    """``create`` was given a name that is already taken."""


class SkillNotFoundError(SkillError):
    """No usable skill (or skill version) by that name."""


class SkillGuardError(SkillError):
    """The guard flagged the text Hermes was asked to save."""


@dataclass(frozen=True)
class Version:
    """One entry of a skill's history: ``v<N>`` (archived), ``current``, or ``pending-…``."""

    label: str
    kind: str  # "archived" | "current" | "pending"
    number: int | None
    time: float


@dataclass(frozen=True)
class Outcome:
    """What became of a curator proposal: created, refined, pending, unchanged or refused."""

    kind: str
    name: str
    version: int = 0
    detail: str = ""


@dataclass(frozen=True)
class Accepted:
    """An accepted proposal: the new version, and how many places both it and the user changed
    (both kept there; ``merge.py``)."""

    skill: Skill
    overlaps: int


@dataclass(frozen=True)
class HeldBack:
    """A file the library does not offer: quarantined by the guard, or skipped with a reason."""

    name: str | None
    path: str
    reason: str
    quarantined: bool


class SkillManager:
    """Create, find, rank, refine, version and count skills stored under ``skills_dir``."""

    def __init__(self, skills_dir: Path, index_path: Path | None = None, *, ages: Ages = Ages(),
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

    @classmethod
    def for_config(cls, config: Config, progress: Progress = NO_PROGRESS) -> SkillManager:
        """The library of ``config``, with its ageing settings."""
        return cls(config.skills_dir, ages=Ages(config.skill_stale_days, config.skill_archive_days),
                   progress=progress)

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

    # -- reading -----------------------------------------------------------------------------

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (any spelling that normalises to it) with its body, or None.

        Quarantined skills are returned too (``quarantine`` says why); callers that hand a skill
        to the model use ``use()``, which refuses them.
        """
        with self._lock:
            row = self._find(name)
            return self._full(row) if row is not None else None

    def list(self, limit: int = -1, offset: int = 0) -> list[Skill]:
        """Every usable skill (no body): most used first, then most recently updated, then by name."""
        with self._lock:
            self._refresh()
            return [self._skill(r) for r in self.index.usable(limit, offset)]

    def count(self) -> int:
        with self._lock:
            self._refresh()
            return self.index.count_usable()

    def for_prompt(self, limit: int) -> list[Skill]:
        """The system-prompt index: most useful first, then most used, then the newest learned;
        stale skills are left out (and skills past the archive age are archived first)."""
        self.age()
        with self._lock:
            self._refresh()
            now = self.clock()
            return [self._skill(r) for r in self.index.for_prompt(limit, now, self.ages.stale_before(now))]

    def search(self, query: str, limit: int = 5, offset: int = 0) -> list[Skill]:
        """Usable skills matching ``query``, best first (weighted bm25); [] when nothing matches."""
        if not isinstance(query, str) or limit <= 0:
            return []
        with self._lock:
            self._refresh()
            return [self._skill(r) for r, _ in self.index.search(_clean_query(query), limit, offset,
                                                                 now=self.clock())]

    def count_matches(self, query: str) -> int:
        with self._lock:
            self._refresh()
            return self.index.count_matches(_clean_query(query))

    def hint(self, query: str, limit: int = 3) -> list[Skill]:
        """Skills worth suggesting for this request: the search's best few, kept only when they match
        the request strongly on what a skill says it is for (its name, triggers or description)."""
        if not isinstance(query, str):
            return []
        with self._lock:
            self._refresh()
            query = _clean_query(query)
            found = [row for row, _ in self.index.search(query, limit, now=self.clock())]
            words = self.index.described_terms(query, [row.id for row in found])
            return [self._skill(row) for row in found if words[row.id] >= HINT_WORDS]

    def held_back(self) -> list[HeldBack]:
        """Quarantined skills and skipped files, each with its reason."""
        with self._lock:
            self._refresh()
            return [
                HeldBack(r.name, r.rel, r.skipped or r.flag, quarantined=not r.skipped)
                for r in self.index.held_back()
            ]

    def use(self, name: str, turn: int | None = None) -> Skill:
        """The skill for the model, counted as a use of ``turn`` (the user message's id, whose
        outcome ``finish_turn`` books); quarantined ones are refused. An archived skill asked for
        by its exact name comes back from the archive."""
        with self._lock:
            if self._find(name) is None and isinstance(name, str) and self.index.archived_entry(name.strip()):
                self.unarchive(name.strip())
            row = self._require(name)
            if row.flag:
                raise SkillGuardError(
                    f"skill {row.name!r} is quarantined by the skill guard ({row.flag}); "
                    "the user can approve it in the Skills pane"
                )
            self.index.record_use(row.rel, self.clock(), turn)
            return self._full(self._require(row.name))

    def record_use(self, name: str) -> Skill:
        """Count one use (database only; the file is never written)."""
        with self._lock:
            row = self._require(name)
            self.index.record_use(row.rel, self.clock())
            return self._skill(self._require(row.name))

    # -- outcomes and lifecycle (lifecycle.py) -------------------------------------------------

    def finish_turn(self, turn: int | None, stopped_reason: str) -> None:
        """Book how the turn ended (the loop's stopped_reason) on the skills it used."""
        if turn is not None:
            with self._lock:
                self.index.finish_turn(turn, turn_outcome(stopped_reason))

    def correct_turn(self, turn: int | None) -> None:
        """The user retried or undid this turn: its skills' uses count as corrected."""
        if turn is not None:
            with self._lock:
                self.index.correct_turn(turn)

    def pin(self, name: str, pinned: bool = True) -> Skill:
        """A pinned skill never goes stale or into the archive."""
        with self._lock:
            row = self._require(name)
            self.index.pin(row.rel, pinned)
            return self._skill(row)

    def age(self) -> list[str]:
        """Archive the learned, unpinned skills untouched for ``ages.archive_days``; their names."""
        with self._lock:
            self._refresh()
            if not self.index.aged(self.ages.archive_before(self.clock())):
                return []  # the usual case: no lock file taken, nothing created
        with self._locked():
            rows = self.index.aged(self.ages.archive_before(self.clock()))
            for row in rows:
                self._archive_row(row)
            return [row.name or row.rel for row in rows]

    def archive(self, name: str) -> str:
        """Move a skill Hermes wrote to the archive folder now; where it went."""
        with self._locked():
            row = self._require(name, force=True)
            if not row.learned:
                raise SkillError(f"skill {row.name!r} was not written by Hermes; Hermes never moves such skills "
                                 "(move or delete its folder yourself)")
            return str(self._archive_row(row))

    def unarchive(self, name: str) -> Skill:
        """Bring an archived skill back into the library, with its history and counts."""
        with self._locked():
            entry = self.index.archived_entry(name)
            if entry is None:
                raise SkillNotFoundError(f"no archived skill named {name!r}; `hermes-tui skills list` shows them")
            rel, folder = entry
            source, target = self.archive_dir / folder, self._home(rel)
            if target.exists() or target.is_symlink():
                raise SkillError(f"cannot restore {name!r}: {target} exists; move it away first")
            private_dir(target.parent)
            shutil.move(source, target)
            with self.index.write() as conn:
                self.index.unset_archived(conn, name)
            self.index.touch(rel, self.clock())  # back from the archive: its age starts again
            self._refresh(force=True)
            row = self.index.by_rel(rel)
            if row is None or row.name is None:
                raise SkillError(f"skill {name!r} was restored to {target} but cannot be read there")
            log.info("restored skill %s from the archive", row.name)
            return self._skill(row)

    def states(self) -> list[SkillState]:
        """Every skill in the library and in the archive, with its state, uses and outcomes."""
        with self._lock:
            self._refresh()
            now = self.clock()
            outcomes = self.index.outcomes()
            pinned = self.index.pinned()
            found: list[SkillState] = []

            def record(name: str, state: str, rel: str, learned: bool, uses: int, last: float, path: Path) -> None:
                counts = outcomes.get(rel, {})
                found.append(SkillState(name, state, rel in pinned, learned, uses, counts.get("done", 0),
                                        counts.get("error", 0) + counts.get("corrected", 0), last, str(path)))

            for row in self.index.usable():
                touched = max(row.last_used, row.created, row.updated)
                record(row.name or row.rel, state_of(row.learned, row.rel in pinned, touched, now, self.ages),
                       row.rel, row.learned, row.use_count, row.last_used, self.skills_dir / row.rel)
            usage = dict(self.index.conn.execute("SELECT rel, use_count FROM usage").fetchall())
            for name, rel, folder in self.index.archived():
                record(name, "archived", rel, True, usage.get(rel, 0), 0.0, self.archive_dir / folder)
            return sorted(found, key=lambda s: s.name)

    def _home(self, rel: str) -> Path:
        """What moves for the skill at ``rel``: its folder, or a legacy flat file."""
        return self.skills_dir / (rel.rsplit("/", 1)[0] if "/" in rel else rel)

    def _archive_row(self, row: Row) -> Path:
        source = self._home(row.rel)
        part = source.relative_to(self.skills_dir).as_posix()
        target = self.archive_dir / part
        if target.exists() or target.is_symlink():  # an earlier skill of that name is archived already
            part = f"{part}-{int(self.clock())}"
            target = self.archive_dir / part
        private_dir(self.archive_dir)
        private_dir(target.parent)
        shutil.move(source, target)
        with self.index.write() as conn:
            self.index.remove(conn, [row.rel])  # counts, outcomes and the written hash stay for a restore
            self.index.set_archived(conn, row.name or row.rel, row.rel, part, self.clock())
            self.index.assign_names(conn, namespace)
        log.info("archived skill %s to %s", row.name, target)
        return target

    # -- versions ----------------------------------------------------------------------------

    def versions(self, name: str) -> list[Version]:
        """Archived versions oldest first, then the current one, then pending proposals."""
        with self._lock:
            row = self._require(name)
            folder = self._folder(row)
            archived: list[Version] = []
            pending: list[Version] = []
            for entry in _scandir(folder / VERSIONS_DIR):
                match = _VERSION_FILE.fullmatch(entry.name)
                when = _mtime(entry.path)
                if match:
                    archived.append(Version(f"v{match.group(1)}", "archived", int(match.group(1)), when))
                elif _PENDING_FILE.fullmatch(entry.name):
                    pending.append(Version(entry.name[:-3], "pending", None, when))
            archived.sort(key=lambda v: v.number or 0)
            pending.sort(key=lambda v: v.label)
            current = Version("current", "current", row.version, row.updated)
            return [*archived, current, *pending]

    def version_text(self, name: str, label: str) -> str:
        """The full SKILL.md text of one version (``current``, ``v<N>`` or ``pending-…``)."""
        with self._lock:
            row = self._require(name)
            return _read_text(self._version_path(row, label), self.skills_dir)

    def diff(self, name: str, old: str, new: str) -> str:
        """A unified diff between two versions' texts ('' when they are equal)."""
        return _unified(self.version_text(name, old), self.version_text(name, new), old, new)

    def accept(self, name: str, label: str) -> Accepted:
        """Apply a pending proposal to the file on disk (archived first), then drop the proposal.

        The body is merged (``merge.py``): what the user changed since the proposal's base stays.
        """
        if not _PENDING_FILE.fullmatch(f"{label}.md"):
            raise SkillError(f"{label!r} is not a pending version (they are called pending-…)")
        with self._locked():
            row = self._require(name, force=True)
            path = self._version_path(row, label)
            proposal, merged = self._merged(row, label)
            skill = self._refine_row(row, proposal.description, proposal.triggers, merged.text)
            path.unlink(missing_ok=True)
            return Accepted(skill, merged.overlaps)

    def accept_diff(self, name: str, label: str) -> str:
        """The unified diff of what ``accept`` would write: the file now against the merged result."""
        with self._lock:
            row = self._require(name)
            proposal, merged = self._merged(row, label)
            current = self._full(row)
            text = _read_text(self.skills_dir / row.rel, self.skills_dir)
            try:
                new = self._patched(text, current, clean_description(proposal.description),
                                    clean_triggers(proposal.triggers), clean_body(merged.text))
            except PatchError:
                new = self.version_text(row.name or name, label)  # accept will refuse; show the proposal
            return _unified(text, new, "current", f"{label} (merged)")

    def _merged(self, row: Row, label: str) -> tuple[Skill, Merged]:
        """The proposal ``label`` and its body merged into the current one.

        The base is the body Hermes last wrote; else the body before the last hand edit (a file
        Hermes never wrote, edited with F6); else the current body (nothing to keep: the proposal
        replaces it, as the diff shows).
        """
        proposal = parse_skill(_read_text(self._version_path(row, label), self.skills_dir), row.name or "")
        current = self._full(row).body
        base = self.index.written_body(row.rel)
        if base is None:
            archived = [v for v in self.versions(row.name or "") if v.kind == "archived"]
            base = (clean_body(split_text(self.version_text(row.name or "", archived[-1].label)).body)
                    if archived else current)
        return proposal, merge_text(base, current, proposal.body)

    def book_edit(self, name: str, before: str) -> Skill | None:
        """A hand edit (the Skills pane's F6) becomes a version the way a refinement does.

        ``before`` (the file when the editor opened) is archived as the previous version and a
        learned skill's version and time move on, so F9 restores it. The file stays the user's:
        what Hermes last wrote remains the base a pending proposal is merged from. None when the
        editor changed nothing.
        """
        with self._locked():
            row = self._require(name, force=True)
            path = self.skills_dir / row.rel
            text = _read_text(path, self.skills_dir)
            if text == before:
                return None
            previous = parse_skill(before, row.name or name)
            number = previous.version if previous.learned else row.version
            if row.learned:
                try:
                    text = patch_skill(text, {}, {"version": str(number + 1), "updated": format_time(self.clock())},
                                       None)
                except PatchError as exc:
                    log.warning("skill %s: the hand edit keeps its own version keys (%s)", row.name, exc)
            return self._write(row.rel, text, archive=(f"v{number}.md", before.encode("utf-8")), written=False)

    def restore(self, name: str, version: int) -> Skill:
        """Make a new version whose description, triggers and body equal those of ``version``."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise SkillError(f"a version must be a whole number, not {version!r}")
        with self._locked():
            row = self._require(name, force=True)
            if version == row.version:
                return self._full(row)
            path = self._folder(row) / VERSIONS_DIR / f"v{version}.md"
            if not path.is_file():
                available = ", ".join(v.label for v in self.versions(row.name) if v.kind == "archived")
                raise SkillNotFoundError(
                    f"skill {row.name!r} has no version {version}; archived: {available or 'none'}"
                )
            old = parse_skill(_read_text(path, self.skills_dir), row.name)
            return self._refine_row(row, old.description, old.triggers, old.body, force=True)

    # -- writing -----------------------------------------------------------------------------

    def create(self, name: str, description: str, triggers: Iterable[str] = (), body: str = "") -> Skill:
        """Save a new skill at version 1; the name is normalised, a taken one is refused."""
        key = normalize_name(name)
        skill = _checked(Skill(key, clean_description(description), clean_triggers(triggers), clean_body(body)))
        with self._locked():
            self._refresh(force=True)
            folder = self.skills_dir / key
            if self.index.by_name(key) is not None or folder.exists() or folder.is_symlink():
                raise SkillExistsError(
                    f"a skill named {key!r} already exists ({folder}); refine it or choose another name"
                )
            now = self.clock()
            text = render_skill(replace(skill, created=now, updated=now))
            return self._write(f"{key}/{SKILL_FILE}", text)

    def refine(
        self,
        name: str,
        *,
        description: str | None = None,
        triggers: Iterable[str] | None = None,
        body: str | None = None,
    ) -> Skill:
        """Patch the given fields into the file (old file archived); no change writes nothing."""
        if description is None and triggers is None and body is None:
            raise SkillError("refine needs at least one of description, triggers or body")
        with self._locked():
            row = self._require(name, force=True)
            return self._refine_row(row, description, triggers, body)

    def propose(self, name: str, description: str, triggers: Iterable[str], body: str) -> Outcome:
        """The curator's entry: create, refine, keep as pending (user-edited file) or refuse.

        A proposal under a new name that repeats an existing skill (``similar.py``) refines that
        skill, or is kept as its pending version when the file is not Hermes' own (the user accepts
        it in the Skills pane): it never becomes a second skill.

        All of it runs under the lock, so concurrent proposals of one name from several
        processes each end as a new skill, a new version, a pending version or "unchanged".
        """
        try:
            key = normalize_name(name)
            proposal = _checked(
                Skill(key, clean_description(description), clean_triggers(triggers), clean_body(body))
            )
        except SkillError as exc:
            return Outcome("refused", str(name)[:64], detail=str(exc))
        with self._locked():
            row = self._find(name, force=True)  # a namespaced name (source/name) finds its skill
            if row is None:  # a new name for a skill the library has is a refinement of that skill
                query = " ".join([key.replace("-", " "), proposal.description, *proposal.triggers])
                twin = near_duplicate(proposal, self.search(query, limit=CANDIDATES))
                row = self._find(twin.name, force=True) if twin is not None else None
            if row is None:
                skill = self.create(key, proposal.description, proposal.triggers, proposal.body)
                return Outcome("created", skill.name, skill.version)
            current = self._full(row)
            if _same(current, proposal.description, proposal.triggers, proposal.body):
                return Outcome("unchanged", row.name, row.version)
            path = self.skills_dir / row.rel
            text = _read_text(path, self.skills_dir)
            if self.index.written_sha(row.rel) != _sha(text.encode("utf-8")):
                label = self._save_pending(row, text, proposal)
                return Outcome("pending", row.name, row.version,
                               f"the file changed since Hermes last wrote it; proposal kept as {label}")
            try:
                skill = self._refine_row(row, proposal.description, proposal.triggers, proposal.body)
            except PatchError as exc:
                label = self._save_pending(row, text, proposal)
                return Outcome("pending", row.name, row.version, f"{exc}; proposal kept as {label}")
            return Outcome("refined", skill.name, skill.version)

    def approve(self, name: str) -> Skill:
        """Release a quarantined skill: this exact content is trusted (an edit re-checks it)."""
        with self._locked():
            row = self._require(name, force=True)
            self.index.approve(row.rel, row.sha)
            return self._full(self._require(row.name))

    def delete(self, name: str) -> None:
        """Remove the skill's folder (with its history and bundled files), or its legacy flat file."""
        with self._locked():
            row = self._require(name, force=True)
            path = self.skills_dir / row.rel
            if row.rel.count("/") == 0:
                path.unlink(missing_ok=True)
            elif path.parent.is_symlink():
                path.parent.unlink()
            else:
                shutil.rmtree(path.parent)
            with self.index.write() as conn:
                self.index.forget(conn, row.rel)
                self.index.assign_names(conn, namespace)
            log.info("deleted skill %s", row.name)

    def reload(self) -> None:
        """Re-check every file now (the Skills pane's reload)."""
        with self._lock:
            self._refresh(force=True)

    # -- internals: reading ------------------------------------------------------------------

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
            data = _read_bytes(path, self.skills_dir)
            text = _decode(data)
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
        version = skill.version if skill.learned else 1 + _archived_count(path.parent, found.depth)
        flag = guard.verdict([skill.name, skill.description, " ".join(skill.triggers), skill.body])
        if flag:
            log.warning("skill %s quarantined by the guard: %s", path, flag)
        return Entry(
            found.rel, found.mtime_ns, found.size, found.depth, _sha(data), base, "", flag, notice,
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
            key = _canonical(name)
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
        text = _read_text(path, self.skills_dir)
        return self._skill(row, body=clean_body(split_text(text).body))

    def _folder(self, row: Row) -> Path:
        path = self.skills_dir / row.rel
        return path.parent if path.name == SKILL_FILE else self.skills_dir / (row.name or path.stem)

    def _version_path(self, row: Row, label: str) -> Path:
        if label == "current":
            return self.skills_dir / row.rel
        if not (_VERSION_FILE.fullmatch(f"{label}.md") or _PENDING_FILE.fullmatch(f"{label}.md")):
            raise SkillNotFoundError(f"{label!r} is not a version name (current, v<N> or pending-…)")
        path = self._folder(row) / VERSIONS_DIR / f"{label}.md"
        if not path.is_file():
            raise SkillNotFoundError(f"skill {row.name!r} has no version {label!r}")
        return path

    # -- internals: writing ------------------------------------------------------------------

    def _refine_row(
        self,
        row: Row,
        description: str | None,
        triggers: Iterable[str] | None,
        body: str | None,
        force: bool = False,
    ) -> Skill:
        current = self._full(row)
        new_description = current.description if description is None else clean_description(description)
        new_triggers = current.triggers if triggers is None else clean_triggers(triggers)
        new_body = current.body if body is None else clean_body(body)
        if not force and _same(current, new_description, new_triggers, new_body):
            return current  # a no-op refinement writes nothing and bumps nothing
        _checked(replace(current, description=new_description, triggers=new_triggers, body=new_body))
        path = self.skills_dir / row.rel
        old_text = _read_text(path, self.skills_dir)
        text = self._patched(old_text, current, new_description, new_triggers, new_body)
        folder = self._folder(row)
        rel = f"{folder.relative_to(self.skills_dir).as_posix()}/{SKILL_FILE}"
        return self._write(rel, text, archive=(f"v{row.version}.md", old_text.encode("utf-8")),
                           old_rel=row.rel if rel != row.rel else None)

    def _patched(self, text: str, current: Skill, description: str, triggers: list[str], body: str) -> str:
        top = {"description": description} if description != current.description else {}
        meta: dict[str, str] = {}
        if triggers != current.triggers:
            meta["triggers"] = ", ".join(triggers)
        if current.learned:
            meta["version"] = str(current.version + 1)
            meta["updated"] = format_time(self.clock())
        return patch_skill(text, top, meta, body if body != current.body else None)

    def _save_pending(self, row: Row, text: str, proposal: Skill) -> str:
        current = self._full(row)
        try:
            pending = self._patched(text, current, proposal.description, proposal.triggers, proposal.body)
        except PatchError:
            pending = render_skill(replace(proposal, name=_canonical(row.name or "") or "skill",
                                           created=time.time(), updated=time.time()))
        folder = self._folder(row) / VERSIONS_DIR
        private_dir(folder)
        label = f"pending-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{time.time_ns() % 10**9:09d}"
        write_private(folder / f"{label}.md", pending.encode("utf-8"))
        log.info("skill %s: proposal kept as %s (the file is the user's)", row.name, label)
        return label

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
                self.index.set_written(conn, rel, _sha(data), entry.body)
            self.index.assign_names(conn, namespace)
        row = self.index.by_rel(rel)
        assert row is not None and row.name is not None
        return self._full(row)


# -- helpers ------------------------------------------------------------------------------------


def _checked(skill: Skill) -> Skill:
    """Refuse what Hermes must not save: an empty body, or text the guard flags."""
    if not skill.body:
        raise SkillError("a skill needs a body: the steps to follow (markdown)")
    flagged = guard.verdict([skill.name, skill.description, " ".join(skill.triggers), skill.body])
    if flagged:
        raise SkillGuardError(f"refused by the skill guard: {flagged}")
    return skill


def _unified(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label)
    return "".join(lines)


def _same(current: Skill, description: str, triggers: list[str], body: str) -> bool:
    return (current.description, current.triggers, current.body) == (description, triggers, body)


def _clean_query(query: str) -> str:
    return query.encode("utf-8", "replace").decode("utf-8")


def _canonical(name: str) -> str | None:
    parts = [p for p in name.strip().split("/") if p.strip()]
    try:
        return "/".join(normalize_name(p) for p in parts) or None
    except SkillError:
        return None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _archived_count(folder: Path, depth: int) -> int:
    if not depth:
        return 0
    return sum(1 for e in _scandir(folder / VERSIONS_DIR) if _VERSION_FILE.fullmatch(e.name))


def _read_bytes(path: Path, root: Path) -> bytes:
    """The file's bytes, refusing anything outside ``root``, special, oversized or binary."""
    try:
        real = path.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError) as exc:
        raise SkillError(f"cannot open it ({exc.__class__.__name__}: broken symlink or no permission?)") from None
    if not real.is_relative_to(root.resolve()):
        raise SkillError(f"it resolves to {real}, outside the skills folder")
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
    return data


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError("it is not UTF-8 text") from None


def _read_text(path: Path, root: Path) -> str:
    return _decode(_read_bytes(path, root))
