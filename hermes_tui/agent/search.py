"""``glob`` and ``grep``: read-only search of the workspace that needs no approval.

Both list files as ripgrep does (``.gitignore`` honoured, hidden files included but ``.git``
skipped, symlinks never followed, so nothing outside the workspace is reached), drop every path
``check_not_secret`` refuses, and cap what they return with a note. ripgrep does the work when it
is installed; otherwise a pure-Python walk (``walk.py``) and Python's ``re`` give the same answers.
Glob patterns follow gitignore rules: a pattern without ``/`` matches a name at any depth.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes_tui.agent.paths import PathError, resolve_in_workspace, secret_filter
from hermes_tui.agent.toolkit import INT, STR, Tool, ToolContext, ToolResult, schema
from hermes_tui.agent.walk import walk_files

if TYPE_CHECKING:
    import pathspec

Engine = Literal["rg", "python"]
GLOB_CAP = 100  # paths glob returns
GREP_LINES = 200  # output lines grep returns
GREP_CHARS = 20_000  # characters grep returns
LINE_WIDTH = 300  # characters shown of one matching line
MAX_FILESIZE = 2 * 1024 * 1024  # grep skips bigger files (minified bundles, data dumps)
CONTEXT_MAX = 10
RG_TIMEOUT = 60.0
_RG_COMMON = ("--no-config", "--hidden", "--no-require-git", "--glob", "!.git", "--color", "never")


def _gitignore(pattern: str) -> pathspec.PathSpec:
    """``pattern`` with git's rules (pathspec, imported by the first glob or grep that needs it)."""
    import pathspec

    return pathspec.PathSpec.from_lines("gitignore", [pattern])


def engine() -> Engine:
    """ripgrep when it is on PATH (looked up per call: cheap, and a test may hide it)."""
    return "rg" if shutil.which("rg") else "python"


def _base(ctx: ToolContext, path: str) -> tuple[Path, Path]:
    root = Path(os.path.realpath(ctx.workspace))
    return root, resolve_in_workspace(root, path or ".", home=ctx.home)


def _rg(root: Path, args: list[str], cancel: threading.Event) -> Iterator[bytes]:
    """ripgrep's output lines; killed when the user cancels, the caller stops reading, or after RG_TIMEOUT."""
    environment = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"}  # none of Hermes' secrets
    proc = subprocess.Popen(["rg", *_RG_COMMON, *args], cwd=root, stdout=subprocess.PIPE, env=environment,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    done = threading.Event()
    threading.Thread(target=_kill_unless, args=(done, cancel, proc), daemon=True).start()
    try:
        assert proc.stdout is not None
        yield from proc.stdout
        proc.wait()
        if proc.returncode == 2 and proc.stderr is not None:
            message = proc.stderr.read().decode(errors="replace").strip().splitlines()
            raise RipgrepError(message[-1] if message else "ripgrep failed")
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _kill_unless(done: threading.Event, cancel: threading.Event, proc: subprocess.Popen[bytes]) -> None:
    waited = 0.0
    while not done.wait(0.05):
        waited += 0.05
        if cancel.is_set() or waited > RG_TIMEOUT:
            proc.kill()
            return


class RipgrepError(Exception):
    """ripgrep refused the search (a bad pattern, most often); the message is its own line."""


# -- glob --------------------------------------------------------------------------------------


def _listing(root: Path, base: Path, cancel: threading.Event, use: Engine) -> Iterator[str]:
    if use == "python":
        yield from walk_files(root, base, cancel)
        return
    target = os.path.relpath(base, root)
    for line in _rg(root, ["--files", "--null", "--", target], cancel):
        for name in line.split(b"\0"):
            if name.strip(b"\n"):
                yield os.path.normpath(name.strip(b"\n").decode(errors="surrogateescape"))


def find(root: Path, base: Path, pattern: str, home: Path | None, cancel: threading.Event,
         use: Engine) -> list[tuple[float, str]]:
    """(modification time, path relative to the root) of every file under ``base`` that ``pattern``
    matches (relative to ``base``), newest first."""
    spec = _gitignore(pattern)
    prefix = "" if base == root else os.path.relpath(base, root) + "/"
    hits, refused, top = [], secret_filter(home), str(root)
    for rel in _listing(root, base, cancel, use):
        inner = rel[len(prefix):] if prefix and rel.startswith(prefix) else rel
        if spec.match_file(inner) and not refused(full := os.path.join(top, rel)):
            try:
                hits.append((os.lstat(full).st_mtime, rel))
            except OSError:
                continue
    hits.sort(key=lambda hit: (-hit[0], hit[1]))
    return hits


def glob_tool(ctx: ToolContext, pattern: str, path: str = ".", *, use: Engine | None = None) -> ToolResult:
    if not pattern.strip():
        return ToolResult(False, "glob: pattern is empty; try **/*.py")
    root, base = _base(ctx, path)
    if not base.is_dir():
        return ToolResult(False, f"glob: {path!r} is not a folder")
    try:
        hits = find(root, base, pattern.strip(), ctx.home, ctx.cancel, use or engine())
    except RipgrepError as exc:
        return ToolResult(False, f"glob: {exc}")
    if ctx.cancel.is_set():
        return ToolResult(False, "glob: cancelled by the user")
    if not hits:
        return ToolResult(True, f"No files match {pattern!r} (files ignored by .gitignore are not searched).")
    lines = [rel for _, rel in hits[:GLOB_CAP]]
    if len(hits) > GLOB_CAP:
        lines.append(f"[... {len(hits) - GLOB_CAP:,} more files match; these are the {GLOB_CAP} most recently "
                     "modified. Narrow the pattern or path to see others ...]")
    return ToolResult(True, "\n".join(lines))


# -- grep --------------------------------------------------------------------------------------


@dataclass
class _Report:
    """Output grouped by file, capped; what did not fit is counted for the closing note."""

    lines: list[str] = field(default_factory=list)
    chars: int = 0
    files: int = 0
    matches: int = 0
    hidden_matches: int = 0
    hidden_files: int = 0
    full: bool = False
    _current: str | None = None
    _last: int = 0

    def add(self, rel: str, number: int, text: str, is_match: bool) -> None:
        new_file = rel != self._current
        if new_file:
            self._current, self._last = rel, 0
            self.files += 1
        self.matches += is_match
        if self.full:
            self.hidden_matches += is_match
            self.hidden_files += new_file
            return
        text = text if len(text) <= LINE_WIDTH else text[:LINE_WIDTH] + "…"
        block = ([rel] if new_file else []) + (["--"] if self._last and number > self._last + 1 else [])
        block.append(f"{number}{':' if is_match else '-'} {text}")
        size = sum(len(line) + 1 for line in block)
        if len(self.lines) + len(block) > GREP_LINES or self.chars + size > GREP_CHARS:
            self.full = True
            self.hidden_matches += is_match
            self.hidden_files += new_file
            return
        self.lines += block
        self.chars += size
        self._last = number


def _grep_rg(root: Path, base: Path, regex: str, glob: str | None, context: int,
             home: Path | None, cancel: threading.Event, report: _Report) -> None:
    args = ["--line-number", "--with-filename", "--no-heading", "--null", "--sort", "path",
            "--max-filesize", str(MAX_FILESIZE), "--context", str(context)]
    args += ["--regexp", regex, "--", os.path.relpath(base, root)]
    # Not rg's --glob: it would override .gitignore. The same matcher as the Python walk instead.
    spec = _gitignore(glob) if glob and not base.is_file() else None
    verdicts: dict[str, bool] = {}
    refused = secret_filter(home)
    for raw in _rg(root, args, cancel):
        name, sep, rest = raw.rstrip(b"\n").partition(b"\0")
        if not sep:
            continue  # the "--" between context groups: _Report draws its own
        match = re.match(rb"(\d+)([:-])", rest)
        if match is None:
            continue
        rel = os.path.normpath(name.decode(errors="surrogateescape"))
        if rel not in verdicts:
            full = os.path.join(root, rel)
            verdicts[rel] = (spec is None or spec.match_file(rel)) and not refused(full) and _single(full)
        if verdicts[rel]:
            text = rest[match.end():].decode(errors="replace").rstrip("\r")
            report.add(rel, int(match.group(1)), text, match.group(2) == b":")
        if report.full and report.hidden_matches > 20 * GREP_LINES:
            report.hidden_files = -1  # stopped counting
            return


def _grep_python(root: Path, base: Path, regex: str, glob: str | None, context: int,
                 home: Path | None, cancel: threading.Event, report: _Report) -> None:
    try:
        compiled, anywhere = re.compile(regex), re.compile(regex, re.MULTILINE)
    except re.error as exc:
        raise RipgrepError(f"regex parse error: {exc}") from None
    spec = _gitignore(glob) if glob else None
    names = [os.path.relpath(base, root)] if base.is_file() else walk_files(root, base, cancel)
    refused = secret_filter(home)
    for rel in names:
        if cancel.is_set() or (report.full and report.hidden_matches > 20 * GREP_LINES):
            report.hidden_files = -1 if report.full else report.hidden_files
            return
        if spec is not None and not base.is_file() and not spec.match_file(rel):
            continue
        if refused(os.path.join(root, rel)):
            continue
        text = _text(root / rel, explicit=base.is_file())
        if text is None or not anywhere.search(text):  # most files: one search, no line split
            continue
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        lines = [line.removesuffix("\r") for line in lines]
        hits = {n for n, line in enumerate(lines) if compiled.search(line)}
        shown = {k for n in hits for k in range(max(0, n - context), min(len(lines), n + context + 1))}
        for k in sorted(shown):
            report.add(rel, k + 1, lines[k], k in hits)


def _single(path: str) -> bool:
    """A regular file with one link: ``read_file``'s rule. A hard link may be a file from outside
    the workspace (``ln /etc/shadow-copy x``); a FIFO would block the search."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_nlink == 1


def _text(path: Path, *, explicit: bool) -> str | None:
    """A file's text, or None when grep skips it: not a single-link regular file, too big, or
    binary (unless named outright). Opened without blocking and without following a link, then
    checked on the open descriptor, so a file swapped for a FIFO or a link meanwhile is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return None
        if not explicit and found.st_size > MAX_FILESIZE:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    if b"\x00" in data[:8192] and not explicit:
        return None
    return data.decode(errors="replace")


def grep_tool(ctx: ToolContext, pattern: str, path: str = ".", glob: str = "", context: int = 0,
              *, use: Engine | None = None) -> ToolResult:
    if not pattern:
        return ToolResult(False, "grep: pattern is empty")
    root, base = _base(ctx, path)
    if not base.exists():
        raise PathError(f"{path!r} does not exist")
    if not base.is_dir() and not _single(str(base)):
        raise PathError(f"{path!r} is refused: grep reads regular files with a single link (not a FIFO, "
                        "socket or device, nor a hard link that may be a file from outside the workspace)")
    context = max(0, min(int(context), CONTEXT_MAX))
    report = _Report()
    run = _grep_rg if (use or engine()) == "rg" else _grep_python
    try:
        run(root, base, pattern, glob.strip() or None, context, ctx.home, ctx.cancel, report)
    except RipgrepError as exc:
        return ToolResult(False, f"grep: {exc}. The pattern is a regular expression: escape ( [ {{ . * + ? \\ to "
                                 "match them literally.")
    if ctx.cancel.is_set():
        return ToolResult(False, "grep: cancelled by the user")
    if not report.matches:
        return ToolResult(True, f"No matches for {pattern!r} (binary files, files over {MAX_FILESIZE // 2**20} MB "
                                "and files ignored by .gitignore are not searched).")
    text = "\n".join(report.lines)
    if report.full:
        more = ("many more matching lines (counting stopped)" if report.hidden_files < 0 else
                f"{report.hidden_matches:,} more matching lines in {report.hidden_files:,} more files" if
                report.hidden_files else f"{report.hidden_matches:,} more matching lines")
        text += f"\n[... output capped: {more}. Narrow the pattern, path or glob ...]"
    return ToolResult(True, text)


SEARCH_TOOLS: tuple[Tool, ...] = (
    Tool(
        "glob", f"Files matching a glob (**/*.py; no / means any depth), newest first, at most {GLOB_CAP}. "
        "Honours .gitignore.",
        schema({"pattern": STR, "path": STR | {"description": "folder; default ."}}, ["pattern"]),
        glob_tool, cancellable=True, summary_arg="pattern",
    ),
    Tool(
        "grep", "Regex search of file contents ((?i) ignores case); use it, not run_bash. Honours "
        ".gitignore; skips binary and huge files.",
        schema({"pattern": STR, "path": STR | {"description": "file or folder; default ."},
                "glob": STR | {"description": "e.g. *.py"},
                "context": INT | {"description": f"lines around matches (max {CONTEXT_MAX})"}}, ["pattern"]),
        grep_tool, cancellable=True, summary_arg="pattern",
    ),
)
