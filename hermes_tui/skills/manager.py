"""SkillManager: the skill library on disk, indexed in SQLite, guarded, and never damaged.

One class in three layers: ``library.py`` keeps the index in step with the files and holds the
lock and the one write path, ``versions.py`` adds each skill's history and pending proposals, and
this module is the public API (reading, lifecycle, writing). ``files.py`` reads files safely.

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

import builtins
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_tui.private import private_dir
from hermes_tui.progress import NO_PROGRESS, Progress
from hermes_tui.skills.files import MAX_FILE_BYTES, read_text, sha
from hermes_tui.skills.index import Row
from hermes_tui.skills.layout import namespace
from hermes_tui.skills.library import (
    SkillExistsError,
    SkillGuardError,
    SkillNotFoundError,
    checked,
    clean_query,
    unchanged,
)
from hermes_tui.skills.lifecycle import Ages, Provenance, SkillState, SkillStats, TurnCost, state_of, turn_outcome
from hermes_tui.skills.patch import PatchError, patch_skill
from hermes_tui.skills.schema import (
    SKILL_FILE,
    Skill,
    SkillError,
    clean_body,
    clean_description,
    clean_triggers,
    load_frontmatter,
    normalize_name,
    render_skill,
    split_text,
)
from hermes_tui.skills.similar import CANDIDATES, near_duplicate
from hermes_tui.skills.versions import Accepted, Version, VersionedLibrary

if TYPE_CHECKING:
    from hermes_tui.config import Config

log = logging.getLogger(__name__)

# The per-turn hint names a skill only when at least HINT_WORDS distinct words of the request occur
# in its name, triggers or description, and its bm25 is at least HINT_SHARE of the best match's
# (measured in tests/test_skills.py and bench/router_recall.py on the published corpus: 3 of 50
# unrelated requests get a hint, and a hint is right about half the time rather than a third).
HINT_WORDS = 2
HINT_SHARE = 0.7

__all__ = [
    "MAX_FILE_BYTES", "Accepted", "HeldBack", "Outcome", "SkillError", "SkillExistsError", "SkillGuardError",
    "SkillManager", "SkillNotFoundError", "Version",
]


@dataclass(frozen=True)
class Outcome:
    """What became of a curator proposal: created, refined, pending, unchanged or refused."""

    kind: str
    name: str
    version: int = 0
    detail: str = ""


@dataclass(frozen=True)
class HeldBack:
    """A file the library does not offer: quarantined by the guard, or skipped with a reason."""

    name: str | None
    path: str
    reason: str
    quarantined: bool


class SkillManager(VersionedLibrary):
    """Create, find, rank, refine, version and count skills stored under ``skills_dir``.

    The core (index, lock, the one write path) is ``library.Library``; versions and pending
    proposals are ``versions.VersionedLibrary``."""

    @classmethod
    def for_config(cls, config: Config, progress: Progress = NO_PROGRESS) -> SkillManager:
        """The library of ``config``, with its ageing settings."""
        return cls(config.skills_dir, ages=Ages(config.skill_stale_days, config.skill_archive_days),
                   progress=progress)

    # -- reading -----------------------------------------------------------------------------

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (any spelling that normalises to it) with its body, or None.

        Quarantined skills are returned too (``quarantine`` says why); callers that hand a skill
        to the model use ``use()``, which refuses them.
        """
        with self._lock:
            row = self._find(name)
            return self._full(row) if row is not None else None

    def list(self, limit: int = -1, offset: int = 0) -> builtins.list[Skill]:
        """Every usable skill (no body): most used first, then most recently updated, then by name."""
        with self._lock:
            self._refresh()
            return [self._skill(r) for r in self.index.usable(limit, offset)]

    def count(self) -> int:
        with self._lock:
            self._refresh()
            return self.index.count_usable()

    def for_prompt(self, limit: int) -> builtins.list[Skill]:
        """The system-prompt index: most useful first, then most used, then the newest learned;
        stale skills are left out (and skills past the archive age are archived first)."""
        self.age()
        with self._lock:
            self._refresh()
            now = self.clock()
            return [self._skill(r) for r in self.index.for_prompt(limit, now, self.ages.stale_before(now))]

    def search(self, query: str, limit: int = 5, offset: int = 0) -> builtins.list[Skill]:
        """Usable skills matching ``query``, best first (weighted bm25); [] when nothing matches."""
        if not isinstance(query, str) or limit <= 0:
            return []
        with self._lock:
            self._refresh()
            return [self._skill(r) for r, _, _ in self.index.search(clean_query(query), limit, offset,
                                                                 now=self.clock())]

    def count_matches(self, query: str) -> int:
        with self._lock:
            self._refresh()
            return self.index.count_matches(clean_query(query))

    def hint(self, query: str, limit: int = 3) -> builtins.list[Skill]:
        """Skills worth suggesting for this request: the search's best few, kept only when they match
        the request strongly on what a skill says it is for (its name, triggers or description)
        and score close to the best; of same-named skills from several sources, the best only."""
        if not isinstance(query, str):
            return []
        with self._lock:
            self._refresh()
            query = clean_query(query)
            failing = self.index.failing()  # flagged for review: no longer suggested
            ranked = [r for r in self.index.search(query, limit, now=self.clock()) if r.row.rel not in failing]
            words = self.index.described_terms(query, [r.row.id for r in ranked])
            best = min((r.match for r in ranked), default=0.0)  # bm25 alone: usefulness orders, never hides
            hinted: dict[str, Skill] = {}  # one per plain name: a namespaced twin is the same advice
            for row, _, match in ranked:
                plain = (row.name or row.rel).rsplit("/", 1)[-1]
                if words[row.id] >= HINT_WORDS and match <= HINT_SHARE * best and plain not in hinted:
                    hinted[plain] = self._skill(row)
            return list(hinted.values())

    def held_back(self) -> builtins.list[HeldBack]:
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
            return self._full(self._require(row.found_name))

    def record_use(self, name: str) -> Skill:
        """Count one use (database only; the file is never written)."""
        with self._lock:
            row = self._require(name)
            self.index.record_use(row.rel, self.clock())
            return self._skill(self._require(row.found_name))

    # -- outcomes and lifecycle (lifecycle.py) -------------------------------------------------

    def finish_turn(self, turn: int | None, stopped_reason: str, cost: TurnCost | None = None) -> None:
        """Book how the turn ended (the loop's stopped_reason) and what it cost on the skills it used."""
        if turn is not None:
            with self._lock:
                self.index.finish_turn(turn, turn_outcome(stopped_reason), cost)

    def correct_turn(self, turn: int | None) -> None:
        """The user retried, undid or corrected this turn: its skills' uses count as corrected, and
        a skill learned from it is demoted (one failed use)."""
        if turn is not None:
            with self._lock:
                self.index.correct_turn(turn, self.clock())

    def stats(self, name: str | None = None) -> builtins.list[SkillStats]:
        """Uses, successes, failures and mean cost of each skill (or of ``name``), against the turn
        it was learned from; by name ([] when there is no skill ``name``)."""
        with self._lock:
            self._refresh()
            rows = [r for r in [self._find(name)] if r is not None] if name is not None else self.index.usable()
            outcomes, costs, failing = self.index.outcomes(), self.index.cost_stats(), self.index.failing()
            found = []
            for row in rows:
                counts = outcomes.get(row.rel, {})
                calls, tokens, learned_calls, learned_tokens = costs.get(row.rel, (None, None, None, None))
                found.append(SkillStats(row.name or row.rel, row.use_count, counts.get("done", 0),
                                        sum(counts.get(o, 0) for o in ("error", "corrected")), calls, tokens,
                                        learned_calls, learned_tokens, row.rel in failing))
            return sorted(found, key=lambda s: s.name)

    def inbox(self) -> builtins.list[Skill]:
        """Learned skills waiting for review (HERMES_LEARN=review), oldest first."""
        with self._lock:
            self._refresh()
            rows = [self.index.by_rel(rel) for rel in self.index.inbox()]
            return [self._full(row) for row in rows if row is not None and row.name is not None]

    def accept_learned(self, name: str) -> Skill:
        """Take a learned skill out of the inbox: it is offered from now on."""
        with self._locked():
            row = self._require(name, force=True)
            self.index.take_from_inbox(row.rel)
            return self._skill(self._require(row.found_name))

    def pin(self, name: str, pinned: bool = True) -> Skill:
        """A pinned skill never goes stale or into the archive."""
        with self._lock:
            row = self._require(name)
            self.index.pin(row.rel, pinned)
            return self._skill(row)

    def age(self) -> builtins.list[str]:
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

    def states(self) -> builtins.list[SkillState]:
        """Every skill in the library and in the archive, with its state, uses and outcomes."""
        with self._lock:
            self._refresh()
            now = self.clock()
            outcomes = self.index.outcomes()
            pinned = self.index.pinned()
            failing = self.index.failing()
            found: builtins.list[SkillState] = []

            def record(name: str, state: str, rel: str, learned: bool, uses: int, last: float, path: Path) -> None:
                counts = outcomes.get(rel, {})
                found.append(SkillState(name, state, rel in pinned, learned, uses, counts.get("done", 0),
                                        counts.get("error", 0) + counts.get("corrected", 0), last, str(path),
                                        rel in failing))

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

    # -- writing -----------------------------------------------------------------------------

    def create(self, name: str, description: str, triggers: Iterable[str] = (), body: str = "", *,
               metadata: dict[str, str] | None = None, review: bool = False) -> Skill:
        """Save a new skill at version 1; the name is normalised, a taken one is refused.

        ``metadata``: more ``metadata`` keys (a learned skill's provenance); ``review``: it waits in
        the inbox, offered nowhere, until accepted."""
        key = normalize_name(name)
        skill = checked(Skill(key, clean_description(description), clean_triggers(triggers), clean_body(body)))
        with self._locked():
            self._refresh(force=True)
            folder = self.skills_dir / key
            if self.index.by_name(key) is not None or folder.exists() or folder.is_symlink():
                raise SkillExistsError(
                    f"a skill named {key!r} already exists ({folder}); refine it or choose another name"
                )
            now = self.clock()
            text = render_skill(replace(skill, created=now, updated=now))
            if metadata:
                text = patch_skill(text, {}, metadata, None)
            rel = f"{key}/{SKILL_FILE}"
            if review:
                with self.index.write() as conn:
                    self.index.put_in_inbox(conn, rel, now)
            return self._write(rel, text)

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

    def propose(self, name: str, description: str, triggers: Iterable[str], body: str, *,
                provenance: Provenance | None = None, review: bool = False) -> Outcome:
        """The curator's entry: create, refine, keep as pending (user-edited file) or refuse.

        ``provenance`` is written into the file's ``metadata`` (learned_by/learned_in, refined_by)
        and the index remembers the turn it came from. ``review``: a new skill waits in the inbox
        and a refinement is kept as a pending version, both for the user to accept.

        A proposal under a new name that repeats an existing skill (``similar.py``) refines that
        skill, or is kept as its pending version when the file is not Hermes' own (the user accepts
        it in the Skills pane): it never becomes a second skill.

        All of it runs under the lock, so concurrent proposals of one name from several
        processes each end as a new skill, a new version, a pending version or "unchanged".
        """
        try:
            key = normalize_name(name)
            proposal = checked(
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
                skill = self.create(key, proposal.description, proposal.triggers, proposal.body,
                                    metadata=provenance.created_metadata() if provenance else None, review=review)
                self._record_learned(skill, provenance)
                return Outcome("pending" if review else "created", skill.name, skill.version,
                               "waiting in the inbox" if review else "")
            current = self._full(row)
            if unchanged(current, proposal.description, proposal.triggers, proposal.body):
                return Outcome("unchanged", row.found_name, row.version)
            path = self.skills_dir / row.rel
            text = read_text(path, self.skills_dir)
            metadata = self._refined_metadata(text, row.version + 1, provenance)
            if review or self.index.written_sha(row.rel) != sha(text.encode("utf-8")):
                label = self._save_pending(row, text, proposal, metadata)
                why = "HERMES_LEARN=review" if review else "the file changed since Hermes last wrote it"
                return Outcome("pending", row.found_name, row.version, f"{why}; proposal kept as {label}")
            try:
                skill = self._refine_row(row, proposal.description, proposal.triggers, proposal.body,
                                         metadata=metadata)
            except PatchError as exc:
                label = self._save_pending(row, text, proposal, metadata)
                return Outcome("pending", row.found_name, row.version, f"{exc}; proposal kept as {label}")
            self._record_learned(skill, provenance)
            return Outcome("refined", skill.name, skill.version)

    def _refined_metadata(self, text: str, version: int, provenance: Provenance | None) -> dict[str, str]:
        if provenance is None:
            return {}
        try:
            meta = load_frontmatter(split_text(text).frontmatter).get("metadata")
        except SkillError:
            meta = None
        before = meta.get("refined_by") if isinstance(meta, dict) else None
        return provenance.refined_metadata(before if isinstance(before, str) else "", version)

    def _record_learned(self, skill: Skill, provenance: Provenance | None) -> None:
        row = self._find(skill.name)
        if provenance is not None and row is not None:
            self.index.record_learned(row.rel, skill.version, provenance, self.clock())

    def approve(self, name: str) -> Skill:
        """Release a quarantined skill: this exact content is trusted (an edit re-checks it)."""
        with self._locked():
            row = self._require(name, force=True)
            self.index.approve(row.rel, row.sha)
            return self._full(self._require(row.found_name))

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
