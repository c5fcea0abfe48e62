"""A skill's history: archived versions (``versions/v<N>.md``), the current file, and the curator's
pending proposals (``versions/pending-….md``) the user diffs, accepts (merged, ``merge.py``) or
leaves; a hand edit booked as a version; a restore that makes a new version of an old one."""

from __future__ import annotations

import difflib
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

from hermes_tui.private import private_dir, write_private
from hermes_tui.skills.files import PENDING_FILE, VERSION_FILE, VERSIONS_DIR, mtime, read_text, scandir
from hermes_tui.skills.index import Row
from hermes_tui.skills.library import Library, SkillNotFoundError, canonical_name
from hermes_tui.skills.merge import Merged, merge_text
from hermes_tui.skills.patch import PatchError, patch_skill
from hermes_tui.skills.schema import (
    Skill,
    SkillError,
    clean_body,
    clean_description,
    clean_triggers,
    format_time,
    parse_skill,
    render_skill,
    split_text,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Version:
    """One entry of a skill's history: ``v<N>`` (archived), ``current``, or ``pending-…``."""

    label: str
    kind: str  # "archived" | "current" | "pending"
    number: int | None
    time: float


@dataclass(frozen=True)
class Accepted:
    """An accepted proposal: the new version, and how many places both it and the user changed
    (both kept there; ``merge.py``)."""

    skill: Skill
    overlaps: int


class VersionedLibrary(Library):
    """The library plus each skill's versions and pending proposals."""

    def versions(self, name: str) -> list[Version]:
        """Archived versions oldest first, then the current one, then pending proposals."""
        with self._lock:
            row = self._require(name)
            folder = self._folder(row)
            archived: list[Version] = []
            pending: list[Version] = []
            for entry in scandir(folder / VERSIONS_DIR):
                match = VERSION_FILE.fullmatch(entry.name)
                when = mtime(entry.path)
                if match:
                    archived.append(Version(f"v{match.group(1)}", "archived", int(match.group(1)), when))
                elif PENDING_FILE.fullmatch(entry.name):
                    pending.append(Version(entry.name[:-3], "pending", None, when))
            archived.sort(key=lambda v: v.number or 0)
            pending.sort(key=lambda v: v.label)
            current = Version("current", "current", row.version, row.updated)
            return [*archived, current, *pending]

    def version_text(self, name: str, label: str) -> str:
        """The full SKILL.md text of one version (``current``, ``v<N>`` or ``pending-…``)."""
        with self._lock:
            row = self._require(name)
            return read_text(self._version_path(row, label), self.skills_dir)

    def diff(self, name: str, old: str, new: str) -> str:
        """A unified diff between two versions' texts ('' when they are equal)."""
        return _unified(self.version_text(name, old), self.version_text(name, new), old, new)

    def accept(self, name: str, label: str) -> Accepted:
        """Apply a pending proposal to the file on disk (archived first), then drop the proposal.

        The body is merged (``merge.py``): what the user changed since the proposal's base stays.
        """
        if not PENDING_FILE.fullmatch(f"{label}.md"):
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
            text = read_text(self.skills_dir / row.rel, self.skills_dir)
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
        proposal = parse_skill(read_text(self._version_path(row, label), self.skills_dir), row.name or "")
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
            text = read_text(path, self.skills_dir)
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
                available = ", ".join(v.label for v in self.versions(row.found_name) if v.kind == "archived")
                raise SkillNotFoundError(
                    f"skill {row.name!r} has no version {version}; archived: {available or 'none'}"
                )
            old = parse_skill(read_text(path, self.skills_dir), row.found_name)
            return self._refine_row(row, old.description, old.triggers, old.body, force=True)

    def _version_path(self, row: Row, label: str) -> Path:
        if label == "current":
            return self.skills_dir / row.rel
        if not (VERSION_FILE.fullmatch(f"{label}.md") or PENDING_FILE.fullmatch(f"{label}.md")):
            raise SkillNotFoundError(f"{label!r} is not a version name (current, v<N> or pending-…)")
        path = self._folder(row) / VERSIONS_DIR / f"{label}.md"
        if not path.is_file():
            raise SkillNotFoundError(f"skill {row.name!r} has no version {label!r}")
        return path

    def _save_pending(self, row: Row, text: str, proposal: Skill, metadata: dict[str, str] | None = None) -> str:
        current = self._full(row)
        try:
            pending = self._patched(text, current, proposal.description, proposal.triggers, proposal.body, metadata)
        except PatchError:
            pending = render_skill(replace(proposal, name=canonical_name(row.name or "") or "skill",
                                           created=time.time(), updated=time.time()))
        folder = self._folder(row) / VERSIONS_DIR
        private_dir(folder)
        label = f"pending-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{time.time_ns() % 10**9:09d}"
        write_private(folder / f"{label}.md", pending.encode("utf-8"))
        log.info("skill %s: proposal kept as %s (the file is the user's)", row.name, label)
        return label


def _unified(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label)
    return "".join(lines)
