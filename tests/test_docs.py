"""The manual in docs/: its generated tables match the code, and its pages are reachable.

The tables the code declares (keys, slash commands, subcommands, providers, settings) are written
into the pages by cog from ``hermes_tui/docs_tables.py``; ``cog --check`` (also run by CI) fails
when someone changes a table in the code without regenerating the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cogapp import Cog

from hermes_tui import docs_tables
from hermes_tui.tui.actions import ACTIONS

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def cog_check(paths: list[Path]) -> int:
    """What ``cog --check`` returns for ``paths`` (0: every generated table is current)."""
    return Cog().main(["cog", "--check", *(str(p) for p in paths)])


def test_the_generated_tables_match_the_code() -> None:
    assert PAGES
    assert cog_check(PAGES) == 0, "run: cog -r docs/*.md"


def test_the_check_fails_when_a_table_is_stale(tmp_path: Path) -> None:
    """A page whose keys table lost a row is reported, so the check above can fail."""
    page = (DOCS / "tui.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| `ctrl+q` |"))
    stale = tmp_path / "tui.md"
    stale.write_text(page.replace(row + "\n", ""))
    assert cog_check([stale]) != 0


def test_every_key_says_where_it_works() -> None:
    """The keys table's "where" column comes from the scope or the help text's prefix."""
    places = [docs_tables.where_and_what(action)[0] for action in ACTIONS]
    assert all(place and len(place) < 50 for place in places), places


def test_every_page_is_linked_from_the_readme_and_every_link_leads_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = {Path(target).name for target in LINK.findall(readme) if target.startswith("docs/")}
    # docs/settings.md is written by the settings generator; until it is committed, links to it wait.
    waiting = set() if (DOCS / "settings.md").exists() else {"settings.md"}
    assert {p.name for p in PAGES} <= linked, {p.name for p in PAGES} - linked
    broken = [(source.name, target) for source in [ROOT / "README.md", *PAGES]
              for target in LINK.findall(source.read_text())
              if not (source.parent / target).resolve().is_file()
              and Path(target).name not in waiting]
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_each_page_has_one_title(page: Path) -> None:
    lines = page.read_text().splitlines()
    in_code = False
    titles = []
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("# "):
            titles.append(line)
    assert lines[0].startswith("# ") and len(titles) == 1, titles
