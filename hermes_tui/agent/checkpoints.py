"""Checkpoints: the workspace's files before and after each turn that may change them, so a turn
(its ``run_bash`` commands included) can be undone, and an earlier one rewound to.

One store per workspace, under ``HERMES_HOME/checkpoints/<hash of the workspace path>/``: the shadow
repository (``shadow_git``) and ``checkpoints.jsonl``, the records. A record is written when its
first snapshot is taken (so a turn killed midway can still be restored) and completed at the end
of the turn with the files it changed. Within a turn, each file-changing tool call is a *window*
(snapshots just before and just after it): only what changed inside a window is the turn's; a
file that changed between windows (the user saving in their editor while the model thinks) is
someone else's, so a restore names it as a conflict instead of silently reverting it. An
unchanged tree costs one git process per snapshot. Every process (TUI, web, headless) shares the store; one
file lock serializes them.

Commit messages in the shadow repository never hold what the user asked (only the checkpoint
number): a prompt may hold a pasted key, and ``forget_session`` must be able to take it back. It
blanks the prompts of that session's records and rewrites any older commit message that still held
one, then prunes the old objects.

A restore takes the workspace back to how it was before a checkpoint: every file changed by that
turn or a later one is put back. It never silently overwrites what someone else changed in
between: ``plan`` names those files (``conflicts``) and the caller asks the user first. The restore
is itself recorded, so it can be undone the same way.
"""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from hermes_tui.agent.paths import check_not_secret, protected_folders, secret_name
from hermes_tui.agent.shadow_git import Change, ShadowError, ShadowRepo, find_git
from hermes_tui.events import FilesChanged, Notice
from hermes_tui.private import private_dir, write_private

log = logging.getLogger(__name__)

NO_GIT = ("git is not installed, so Hermes keeps no checkpoints: /undo cannot restore files. "
          "Install git to have them.")
PROMPT_CHARS = 80
FILES_SHOWN = 10  # files listed per checkpoint or plan; the rest are counted
VERB = {"added": "recreate", "modified": "restore", "deleted": "delete"}  # a plan's action, said
Kind = Literal["turn", "restore"]


class CheckpointError(RuntimeError):
    """A checkpoint cannot be taken, found or restored; the message is one readable line."""


@dataclass(frozen=True)
class Checkpoint:
    """The workspace before (``before``) and after (``after``, None until the turn ended) one turn."""

    number: int
    kind: Kind
    session_id: int | None
    message_id: int | None  # the turn's user message
    prompt: str  # the first line of what the user asked (or what a restore restored)
    created: float
    before: str
    after: str | None = None
    files: tuple[Change, ...] = ()
    windows: tuple[tuple[str, str], ...] = ()  # (before, after) of each file-changing tool call

    @property
    def finished(self) -> bool:
        return self.after is not None

    def outside(self, end: str) -> builtins.list[tuple[str, str]]:
        """The stretches of this turn that were no tool call's (from one window's end to the next
        one's start, and from the last to ``end``): what changed there is someone else's."""
        if not self.windows:
            return []
        starts = [start for start, _ in self.windows[1:]] + [end]
        return [(stop, start) for (_, stop), start in zip(self.windows, starts, strict=True) if stop != start]


@dataclass(frozen=True)
class RestorePlan:
    """Restoring the workspace to how it was before ``target``: what it writes and what it would overwrite.

    ``actions`` say what happens to each file (``added``: recreated, ``modified``: put back,
    ``deleted``: removed); ``conflicts`` are the paths among them changed after a checkpoint by
    someone else (the user, an editor, another program), which a restore would overwrite.
    """

    target: Checkpoint
    covered: tuple[Checkpoint, ...]  # the target and every later checkpoint with changes
    current: str  # the snapshot of the workspace when planned
    actions: tuple[Change, ...]
    conflicts: frozenset[str] = frozenset()
    # Files a restore would delete that the target's ignore rules left out of its snapshot (a turn
    # that edited a .gitignore brought them in): they may well be older than the turn, so they stay.
    ignored_then: tuple[str, ...] = ()

    @property
    def safe_actions(self) -> tuple[Change, ...]:
        return tuple(a for a in self.actions if a.path not in self.conflicts)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the files put back, the ones left alone because the user changed them
    since."""

    restored: tuple[Change, ...]
    kept: tuple[str, ...]  # conflicting files left as the user had them
    checkpoint: Checkpoint | None  # the record of the restore itself (None when nothing changed)


def store_folder(home: Path, workspace: Path) -> Path:
    real = os.path.realpath(workspace)
    return Path(home) / "checkpoints" / hashlib.sha256(os.fsencode(real)).hexdigest()[:16]


class CheckpointStore:
    """The checkpoints of one workspace. ``available`` is False when git is not installed."""

    def __init__(self, home: Path, workspace: Path, *, git: str | None = None) -> None:
        self.home = Path(os.path.abspath(home))
        self.workspace = Path(os.path.realpath(workspace))
        self.folder = store_folder(self.home, self.workspace)
        self.git = git if git is not None else find_git()
        self._records = self.folder / "checkpoints.jsonl"
        self._thread_lock = threading.Lock()
        self._repo: ShadowRepo | None = None

    @property
    def available(self) -> bool:
        return bool(self.git)

    @property
    def repo(self) -> ShadowRepo:
        if not self.git:
            raise CheckpointError(NO_GIT)
        if self._repo is None:
            self._repo = ShadowRepo(self.folder / "git", self.workspace, self.git, skip=self._secret,
                                    excluded=self._protected_inside())
        return self._repo

    def _secret(self, path: str, is_link: bool) -> str | None:
        """Secrets stay out of snapshots. git lists no path through a symlinked folder, so only a
        link itself needs its target resolved; other files are judged by name (fast: 10,000 of them
        on the first snapshot)."""
        if is_link:
            return check_not_secret(self.workspace / path, home=self.home)
        return secret_name(tuple(path.split("/")))

    def _protected_inside(self) -> builtins.list[str]:
        """HERMES_HOME or the log folder, when inside the workspace, as anchored ignore lines."""
        lines = []
        for folder in protected_folders(self.home):
            real = os.path.realpath(folder)
            if real.startswith(str(self.workspace) + os.sep):
                lines.append("/" + os.path.relpath(real, self.workspace).replace(os.sep, "/") + "/")
        return lines

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time, across threads and processes (TUI, web, headless on one workspace)."""
        private_dir(self.folder)
        with self._thread_lock, open(self.folder / "lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- records

    def list(self) -> builtins.list[Checkpoint]:
        """Every checkpoint that changed files (or has not ended yet), oldest first."""
        return [c for c in self._read() if c.files or not c.finished]

    def get(self, number: int) -> Checkpoint | None:
        return next((c for c in self.list() if c.number == number), None)

    def for_message(self, session_id: int, message_id: int) -> Checkpoint | None:
        """The checkpoint of the turn that began with this user message, if it changed files."""
        return next((c for c in self.list() if c.session_id == session_id and c.message_id == message_id), None)

    def _read(self) -> builtins.list[Checkpoint]:
        try:
            lines = self._records.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        found: dict[int, Checkpoint] = {}
        for line in lines:
            try:
                item = json.loads(line)
                number = int(item["n"])
                if "before" in item:
                    found[number] = Checkpoint(
                        number, item.get("kind", "turn"), item.get("session"), item.get("message"),
                        str(item.get("prompt", "")), float(item.get("time", 0)), str(item["before"]))
                elif "window" in item and number in found:
                    start, stop = (str(c) for c in item["window"])
                    found[number] = replace(found[number], windows=(*found[number].windows, (start, stop)))
                elif number in found:
                    files = tuple(Change(str(p), s) for s, p in item.get("files", []))
                    found[number] = replace(found[number], after=str(item["after"]), files=files)
            except (ValueError, KeyError, TypeError):
                log.warning("skipping an unreadable line of %s", self._records)
        return [found[n] for n in sorted(found)]

    def _append(self, item: dict[str, object]) -> None:
        with open(self._records, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")

    # -- taking checkpoints

    def begin(self, kind: Kind, session_id: int | None, message_id: int | None, prompt: str) -> Checkpoint:
        """Snapshot the workspace now and open a record; raises ``CheckpointError``."""
        with self._locked():
            records = self._read()
            number = (records[-1].number + 1) if records else 1
            before = self._snapshot(f"checkpoint {number}: before")
            checkpoint = Checkpoint(number, kind, session_id, message_id, _first_line(prompt), time.time(), before)
            self._append({"n": number, "kind": kind, "session": session_id, "message": message_id,
                          "prompt": checkpoint.prompt, "time": checkpoint.created, "before": before})
        return checkpoint

    def finish(self, checkpoint: Checkpoint) -> Checkpoint:
        """Snapshot the workspace again and record what changed since ``begin``."""
        with self._locked():
            after = self._snapshot(f"checkpoint {checkpoint.number}: after")
            files = tuple(self._turn_changes(checkpoint, after))
            self._append({"n": checkpoint.number, "after": after, "files": [[c.status, c.path] for c in files]})
        return replace(checkpoint, after=after, files=files)

    def window_start(self, checkpoint: Checkpoint) -> str:
        """Snapshot just before a file-changing tool call (the first one's is ``checkpoint.before``)."""
        with self._locked():
            return self._snapshot(f"checkpoint {checkpoint.number}: window")

    def window_end(self, checkpoint: Checkpoint, start: str) -> Checkpoint:
        """Snapshot just after the tool call that began at ``start``, and record the window."""
        with self._locked():
            stop = self._snapshot(f"checkpoint {checkpoint.number}: window")
            self._append({"n": checkpoint.number, "window": [start, stop]})
        return replace(checkpoint, windows=(*checkpoint.windows, (start, stop)))

    def _turn_changes(self, checkpoint: Checkpoint, end: str) -> builtins.list[Change]:
        """What the turn changed from ``before`` to ``end``: with windows, only the files some
        tool call changed (older records have none: everything in between counts)."""
        if not checkpoint.windows:
            return self.repo.changes(checkpoint.before, end)
        paths = {c.path for start, stop in checkpoint.windows for c in self.repo.changes(start, stop)}
        return self.repo.changes(checkpoint.before, end, paths) if paths else []

    def _snapshot(self, message: str) -> str:
        try:
            return self.repo.snapshot(message)
        except ShadowError as exc:
            raise CheckpointError(f"Could not snapshot the workspace: {exc}") from None

    # -- restoring

    def plan(self, number: int) -> RestorePlan:
        """What restoring to before checkpoint ``number`` would do; raises ``CheckpointError``."""
        with self._locked():
            return self._plan(number)

    def _plan(self, number: int) -> RestorePlan:
        records = self.list()
        target = next((c for c in records if c.number == number), None)
        if target is None:
            raise CheckpointError(f"There is no checkpoint {number}; 'hermes-tui checkpoints list' shows them.")
        covered = [c for c in records if c.number >= number]
        repo = self.repo
        current = self._snapshot("before a restore")
        ends = [c.after or (covered[i + 1].before if i + 1 < len(covered) else current)
                for i, c in enumerate(covered)]
        touched: set[str] = set()
        for checkpoint, end in zip(covered, ends, strict=True):
            touched.update(c.path for c in (checkpoint.files or self._turn_changes(checkpoint, end)))
        actions = repo.changes(current, target.before, touched)
        ignored_then = self._ignored_then(target.before, current, actions)
        actions = [a for a in actions if a.path not in ignored_then]
        wanted = {a.path for a in actions}
        outside: set[str] = set()  # changed between checkpoints, or since the last one
        for end, following in zip(ends, [c.before for c in covered[1:]] + [current], strict=True):
            outside.update(c.path for c in repo.changes(end, following, wanted))
        for checkpoint, end in zip(covered, ends, strict=True):  # within a turn, between its tool calls
            for start, stop in checkpoint.outside(end):
                outside.update(c.path for c in repo.changes(start, stop, wanted))
        return RestorePlan(target, tuple(covered), current, tuple(actions), frozenset(outside),
                           tuple(sorted(ignored_then)))

    def _ignored_then(self, before: str, current: str, actions: builtins.list[Change]) -> set[str]:
        """The files a restore would delete that ``before``'s ignore rules left out. Only when a
        ``.gitignore`` changed since: under the same rules, a file absent from ``before`` that is
        in the snapshot now cannot have existed then."""
        doomed = [a.path for a in actions if a.status == "deleted"]
        rules_changed = any(c.path.rsplit("/", 1)[-1] == ".gitignore" for c in self.repo.changes(before, current))
        if not doomed or not rules_changed:
            return set()
        try:
            return self.repo.ignored_by(before, doomed)
        except ShadowError as exc:  # unsure which existed: delete none of them
            log.warning("could not read the ignore rules of %s: %s", before, exc)
            return set(doomed)

    def restore(self, plan: RestorePlan, *, overwrite: bool, session_id: int | None = None) -> RestoreResult:
        """Carry out ``plan``; conflicting files are overwritten only with ``overwrite``.

        Raises ``CheckpointError`` when the workspace changed since the plan was made (plan again).
        """
        with self._locked():
            now = self._snapshot("before a restore")
            if now != plan.current:
                raise CheckpointError("Files changed while you were deciding; nothing was restored. Try again.")
            chosen = plan.actions if overwrite else plan.safe_actions
            kept = (tuple(sorted(plan.conflicts)) if not overwrite else ()) + plan.ignored_then
            if not chosen:
                return RestoreResult((), kept, None)
            prompt = f"restore to before checkpoint {plan.target.number}"
            records = self._read()
            number = (records[-1].number + 1) if records else 1
            self._append({"n": number, "kind": "restore", "session": session_id, "message": None,
                          "prompt": prompt, "time": time.time(), "before": now})
            try:
                blocked = self.repo.restore(plan.target.before, [a.path for a in chosen if a.status != "deleted"],
                                            [a.path for a in chosen if a.status == "deleted"])
            except (ShadowError, OSError) as exc:
                raise CheckpointError(f"The restore failed partway: {exc}. 'hermes-tui checkpoints list' "
                                      f"shows checkpoint {number}, which undoes what it did.") from None
            finally:
                after = self._snapshot(prompt)
                files = self.repo.changes(now, after)
                self._append({"n": number, "after": after, "files": [[c.status, c.path] for c in files]})
            record = Checkpoint(number, "restore", session_id, None, prompt, time.time(), now, after, tuple(files))
        restored = tuple(a for a in chosen if a.path not in blocked)
        return RestoreResult(restored, tuple(sorted({*kept, *blocked})), record)


FORGOTTEN_PROMPT = "(from a forgotten session)"
_NEUTRAL_MESSAGE = re.compile(r"(checkpoint \d+: (before|after|window)|before a restore|restore to before checkpoint \d+)\n*")
_COMMIT_FIELDS = ("before", "after")


def forget_session(home: Path, session_id: int) -> int:
    """Take a forgotten session's words out of every workspace's checkpoints; returns how many
    records were blanked. The files' snapshots stay (a restore still works); what the user asked
    goes, from the records and from any commit message an older Hermes wrote it into."""
    blanked = 0
    for records in sorted((Path(home) / "checkpoints").glob("*/checkpoints.jsonl")):
        folder = records.parent
        with open(folder / "lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                blanked += _forget_in(folder, session_id)
            except (ShadowError, OSError) as exc:  # the session is gone from the store already
                log.warning("could not take session %s out of the checkpoints in %s: %s", session_id, folder, exc)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return blanked


def _forget_in(folder: Path, session_id: int) -> int:
    records = folder / "checkpoints.jsonl"
    items: builtins.list[dict[str, object] | str] = []
    blanked = 0
    for line in records.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            items.append(line)
            continue
        if isinstance(item, dict) and item.get("session") == session_id and item.get("prompt") not in (None, FORGOTTEN_PROMPT):
            item["prompt"] = FORGOTTEN_PROMPT
            blanked += 1
        items.append(item)
    renamed = _neutral_history(folder / "git") if (folder / "git" / "HEAD").exists() and find_git() else {}
    if not blanked and not renamed:
        return 0
    for item in items:
        if isinstance(item, dict):
            for key in _COMMIT_FIELDS:
                if isinstance(item.get(key), str):
                    item[key] = renamed.get(str(item[key]), item[key])
            if isinstance(item.get("window"), builtins.list):
                item["window"] = [renamed.get(str(c), c) for c in item["window"]]
    text = "".join((item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)) + "\n" for item in items)
    write_private(records, text)
    return blanked


def _neutral_history(git_dir: Path) -> dict[str, str]:
    """Rewrite the snapshot chain so no commit message holds more than a checkpoint number, then
    drop the old commits for good (reflog expired, pruned); returns old id -> new id (empty when
    every message was neutral already)."""
    repo = ShadowRepo(git_dir, git_dir, find_git() or "git")
    head = repo.head()
    if head is None:
        return {}
    log_lines = repo._run("log", "--reverse", "--format=%H%x00%P%x00%T%x00%B%x1e", head).decode("utf-8", "replace")
    commits = [entry.strip("\n").split("\0") for entry in log_lines.split("\x1e") if entry.strip()]
    if all(_NEUTRAL_MESSAGE.fullmatch(message) for _c, _p, _t, message in commits):
        return {}
    renamed: dict[str, str] = {}
    for commit, parents, tree, message in commits:
        kept = message.strip() if _NEUTRAL_MESSAGE.fullmatch(message) else "snapshot"
        parent_args = [arg for p in parents.split() for arg in ("-p", renamed.get(p, p))]
        renamed[commit] = repo._run("commit-tree", tree, *parent_args, "-m", kept).decode().strip()
    repo._run("update-ref", ShadowRepo.HEAD, renamed[head], head)
    repo._run("reflog", "expire", "--expire=now", "--all")
    repo._run("gc", "-q", "--prune=now")
    return renamed


class TurnCheckpoints:
    """The agent loop's hook: a snapshot before the first file-changing tool call of a turn, the
    changed files when the turn ends. Nothing runs (no git at all) in a turn that changes nothing.
    Without git, the first file-changing call of the session gets one notice."""

    def __init__(self, home: Path, workspace: Path, store: CheckpointStore | None = None) -> None:
        self.home, self.workspace, self.store = Path(home), Path(workspace), store
        self._turn: tuple[int, int | None, str] | None = None  # (session, user message, prompt)
        self._open: Checkpoint | None = None
        self._failed = False  # this turn's snapshot failed: no second try, no second notice
        self._warned = False
        self._window: str | None = None  # the snapshot before the tool call running now

    def start_turn(self, session_id: int, message_id: int | None, prompt: str) -> None:
        self._turn, self._open, self._failed, self._window = (session_id, message_id, prompt), None, False, None

    def before_change(self) -> str | None:
        """Snapshot before a file-changing tool call (the turn's first one opens its record); a
        notice for the user, or None."""
        if self._failed or self._turn is None:
            return None
        if self._open is not None:
            try:
                self._window = self._store().window_start(self._open)
            except (CheckpointError, OSError) as exc:  # the call still counts, from the last snapshot
                log.warning("checkpoint before a tool call failed: %s", exc)
                self._window = self._open.windows[-1][1] if self._open.windows else self._open.before
            return None
        store = self._store()
        if not store.available:
            self._failed = True
            if self._warned:
                return None
            self._warned = True
            return NO_GIT
        try:
            self._open = store.begin("turn", *self._turn)
        except (CheckpointError, OSError) as exc:
            log.warning("checkpoint before a tool call failed: %s", exc)
            self._failed = True
            return f"{exc} This turn's file changes cannot be undone."
        self._window = self._open.before
        return None

    def after_change(self) -> None:
        """Snapshot after the file-changing tool call ``before_change`` prepared for."""
        start, self._window = self._window, None
        if start is None or self._open is None:
            return
        try:
            self._open = self._store().window_end(self._open, start)
        except (CheckpointError, OSError) as exc:  # end_turn says what could not be recorded
            log.warning("checkpoint after a tool call failed: %s", exc)

    def end_turn(self) -> FilesChanged | Notice | None:
        """Record what the turn changed; the event to show (the files, or why they could not be
        recorded), or None when it changed nothing."""
        checkpoint, self._open, self._turn, self._window = self._open, None, None, None
        if checkpoint is None:
            return None
        try:
            done = self._store().finish(checkpoint)
        except (CheckpointError, OSError) as exc:
            log.warning("checkpoint after a turn failed: %s", exc)
            return Notice(f"{exc} /undo can still restore the files as they were before this turn "
                          f"(checkpoint {checkpoint.number}).")
        if not done.files:
            return None
        return FilesChanged(done.number, [{"path": c.path, "status": c.status} for c in done.files])

    def _store(self) -> CheckpointStore:
        if self.store is None:
            self.store = CheckpointStore(self.home, self.workspace)
        return self.store


class NoCheckpoints:
    """A sub-agent's hook: it takes no snapshots; the parent's turn does, around the ``delegate``
    calls that may change files (one shadow store, one writer)."""

    def start_turn(self, session_id: int, message_id: int | None, prompt: str) -> None:
        """Nothing to open."""

    def before_change(self) -> str | None:
        return None

    def after_change(self) -> None:
        """Nothing to record."""

    def end_turn(self) -> FilesChanged | Notice | None:
        return None


def headline(checkpoint: Checkpoint) -> str:
    """One line per checkpoint: number, time, session, how many files, what was asked."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(checkpoint.created))
    where = f"session {checkpoint.session_id}" if checkpoint.session_id is not None else checkpoint.kind
    count = (f"{len(checkpoint.files)} file{'s' if len(checkpoint.files) != 1 else ''}" if checkpoint.finished
             else "unfinished turn")
    return f"#{checkpoint.number}  {when}  {where}  {count}  {checkpoint.prompt}"


def file_lines(pairs: list[tuple[str, str]]) -> list[str]:
    """``(what, path)`` pairs as aligned lines, at most ``FILES_SHOWN`` and a count of the rest."""
    lines = [f"{what:<8} {path}" for what, path in pairs[:FILES_SHOWN]]
    if len(pairs) > FILES_SHOWN:
        lines.append(f"… and {len(pairs) - FILES_SHOWN} more")
    return lines


def describe_plan(plan: RestorePlan) -> list[str]:
    """What a restore will do, as lines: the checkpoints it undoes, each file, and the conflicts."""
    numbers = ", ".join(f"#{c.number}" for c in plan.covered)
    lines = [f"Restoring to before checkpoint {plan.target.number} ({plan.target.prompt}) undoes {numbers}:"]
    lines += ["  " + line for line in file_lines([(VERB[a.status], a.path) for a in plan.actions])]
    if plan.conflicts:
        lines.append(f"Changed since by someone else (kept unless you choose to overwrite): "
                     f"{', '.join(sorted(plan.conflicts)[:FILES_SHOWN])}")
    if plan.ignored_then:
        more = f" and {len(plan.ignored_then) - FILES_SHOWN} more" if len(plan.ignored_then) > FILES_SHOWN else ""
        lines.append(f"Kept: ignored by .gitignore before checkpoint {plan.target.number}, so they may be older "
                     f"than it: {', '.join(plan.ignored_then[:FILES_SHOWN])}{more}")
    return lines


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= PROMPT_CHARS else line[: PROMPT_CHARS - 1] + "…"
