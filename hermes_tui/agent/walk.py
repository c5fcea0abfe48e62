"""The workspace's files as ``glob``/``grep`` see them without ripgrep: what ``rg --files`` would list.

``.gitignore`` (and ``.ignore``) files are honoured at every level from the workspace down, the
deepest match winning as in git; ``.git`` folders are skipped; symlinks are never followed, so the
walk cannot leave the workspace. pathspec implements git's pattern rules.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported at the first walk or search: a turn without one never loads it
    import pathspec

IGNORE_FILES = (".gitignore", ".ignore")
Specs = tuple[tuple[str, "pathspec.GitIgnoreSpec"], ...]  # (folder relative to the root, its patterns)


def _spec_of(folder: str) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                lines += handle.read().splitlines()
        except OSError:
            continue
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def ignored(specs: Specs, rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (relative to the root, ``/``-separated) is ignored: the deepest verdict wins."""
    verdict = None
    for prefix, spec in specs:
        if prefix and not rel.startswith(prefix + "/"):
            continue
        inner = rel[len(prefix) + 1:] if prefix else rel
        result = spec.check_file(inner + "/" if is_dir else inner)
        if result.include is not None:
            verdict = result.include
    return bool(verdict)


def specs_down_to(root: Path, base: Path) -> Specs:
    """The ignore patterns of ``root`` and every folder between it and ``base``."""
    found: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    rel_parts = base.relative_to(root).parts
    for depth in range(len(rel_parts) + 1):
        folder = root.joinpath(*rel_parts[:depth])
        spec = _spec_of(str(folder))
        if spec is not None:
            found.append(("/".join(rel_parts[:depth]), spec))
    return tuple(found)


def walk_files(root: Path, base: Path, cancel: threading.Event | None = None) -> Iterator[str]:
    """Files under ``base`` (a folder inside ``root``), relative to ``root``: depth first, each
    folder's entries by name (the order of ``rg --sort path``)."""
    start = "/".join(base.relative_to(root).parts)
    yield from _walk(str(root), start, specs_down_to(root, base), cancel)


def _walk(root: str, rel: str, specs: Specs, cancel: threading.Event | None) -> Iterator[str]:
    folder = os.path.join(root, rel) if rel else root
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if cancel is not None and cancel.is_set():
            return
        child = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name == ".git" or ignored(specs, child, True):
                continue
            spec = _spec_of(os.path.join(root, child))
            yield from _walk(root, child, (*specs, (child, spec)) if spec is not None else specs, cancel)
        elif entry.is_file(follow_symlinks=False) and not ignored(specs, child, False):
            yield child
