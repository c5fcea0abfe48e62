"""Whether the packages a start imports have up-to-date compiled bytecode (``hermes-tui doctor``).

Without ``.pyc`` files every start compiles thousands of modules from source first: ``import
litellm`` takes about twice as long. ``uv pip install`` does not compile by default, and
``PYTHONDONTWRITEBYTECODE=1`` keeps Python from saving what it compiled, so a user can run like
that for months without knowing. Checking reads 16 bytes per module and imports nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# What a start imports, largest first: the model library and its SDK, the TUI's, and Hermes.
PACKAGES = ("litellm", "openai", "textual", "hermes_tui")

_HEADER = 16  # magic, flags, source mtime, source size (PEP 552)


@dataclass(frozen=True)
class Uncompiled:
    """A package some of whose modules have no valid ``.pyc`` file."""

    package: str
    folder: Path
    missing: int
    total: int

    def line(self) -> str:
        return (f"{self.package}: {self.missing:,} of {self.total:,} modules have no up-to-date compiled "
                f"bytecode, so each start compiles them first; compile them once with: "
                f"{sys.executable} -m compileall -q {self.folder}")


def _fresh(source: Path) -> bool:
    """The cached ``.pyc`` exists and was compiled from this source (by mtime and size, or by hash)."""
    try:
        cached = Path(importlib.util.cache_from_source(str(source)))
        with cached.open("rb") as handle:
            header = handle.read(_HEADER)
        stat = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(header) < _HEADER or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") & 1:  # hash-based: checked (or not) at import
        return True
    return (int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF)


def uncompiled(packages: tuple[str, ...] | None = None) -> list[Uncompiled]:
    """The installed ``packages`` (default ``PACKAGES``) with modules lacking valid bytecode, found
    without importing them."""
    found: list[Uncompiled] = []
    for name in PACKAGES if packages is None else packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations)))
        sources = list(folder.rglob("*.py"))
        missing = sum(not _fresh(source) for source in sources)
        if missing:
            found.append(Uncompiled(name, folder, missing, len(sources)))
    return found


def report_lines() -> list[str]:
    """What ``doctor`` prints: one line per package lacking bytecode, or one line saying all is well."""
    lines = [item.line() for item in uncompiled()]
    if lines and os.environ.get("PYTHONDONTWRITEBYTECODE"):
        lines.append("PYTHONDONTWRITEBYTECODE is set, so Python does not save what it compiles: "
                     "compile once as above, or unset it")
    return lines or [f"compiled bytecode: up to date for {', '.join(PACKAGES)}"]
