"""The router: paraphrased requests find their skill, unrelated ones get no hint, through the real
SQLite index of a SkillManager (no corpus needed; bench/router_recall.py measures the published one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.skills.manager import SkillManager
from hermes_tui.skills.synonyms import expansions, table


@pytest.fixture
def skills(tmp_path: Path) -> SkillManager:
    return SkillManager(tmp_path / "skills")


def library(skills: SkillManager) -> None:
    """Skills described as published ones are, and neighbours that share a request's other words."""
    for name, description in [
        ("pptx-files", "Create, read and edit .pptx presentation files with python-pptx: layouts, speaker notes."),
        ("xlsx-files", "Read and write .xlsx spreadsheet files with openpyxl: formulas, number formats, charts."),
        ("apple-reminders", "Apple Reminders via remindctl on macOS: add, list and complete reminders."),
        ("quarterly-report", "Write the quarterly report from the finance team's numbers."),
        ("number-formatting", "Format numbers and dates consistently in text and tables."),
        ("tax-numbers", "Check quarterly tax numbers before filing."),
        ("budget-planning", "Plan a monthly budget and track what was spent."),
        ("sales-totals", "Compute the sales totals of each region."),
        ("tidy-desk", "Tidy up a desk and its cables."),
        ("formula-sheet", "A physics formula cheat sheet, printable."),
        ("dentist-visits", "Track dentist visits and call the practice to book the next one."),
        ("call-notes", "Write notes while on a phone call and send them after the call."),
        ("friday-standup", "Run the Friday standup: collect what each person did this week."),
    ]:
        skills.create(name, description, [], f"# {name}\n\n1. Do it.\n")


@pytest.mark.parametrize(("request_text", "wanted"), [
    ("turn our quarterly numbers into a deck", "pptx-files"),
    ("tidy up the totals in my workbook", "xlsx-files"),
    ("put 'call the dentist' on my to-do for Friday", "apple-reminders"),
])
def test_a_paraphrase_finds_its_skill_in_the_top_three(skills: SkillManager, request_text: str, wanted: str) -> None:
    # None of these requests names the skill's own words (deck/presentation, workbook/spreadsheet,
    # to-do/reminders); each shares words with two or three neighbours instead.
    library(skills)
    assert wanted in [s.name for s in skills.search(request_text, limit=3)]


def test_the_requests_own_words_outrank_the_paraphrases_added_for_them(skills: SkillManager) -> None:
    # "deck" widens to presentation/slides/pptx: a skill matching the word the user typed still
    # comes first.
    library(skills)
    skills.create("deck-builder", "Plan and build a wooden deck for the garden.", [], "# Deck\n")
    assert [s.name for s in skills.search("build a deck", limit=2)] == ["deck-builder", "pptx-files"]


def test_words_most_skills_describe_themselves_with_earn_no_hint(skills: SkillManager) -> None:
    # In a library of 60 skills, "best" and "learn" each open several descriptions: a request that
    # shares only those with a skill is not about it, one that shares rarer words is.
    for n in range(52):
        skills.create(f"topic-{n}", f"Manage the records of project {n} with its own tool.", [], "# Steps\n")
    for n in range(4):
        skills.create(f"guide-{n}", f"Best practices for area {n}.", [], "# Steps\n")
        skills.create(f"course-{n}", f"Learn the basics of area {n}.", [], "# Steps\n")
    skills.create("ml-basics", "Learn the best machine learning practices: train a classifier.", [], "# Steps\n")
    assert skills.search("what's the best way to learn to juggle", limit=1)[0].name == "ml-basics"
    assert skills.hint("what's the best way to learn to juggle") == []
    assert [s.name for s in skills.hint("train a machine learning classifier")] == ["ml-basics"]


def test_a_weak_second_match_and_a_same_named_twin_are_not_hinted(skills: SkillManager, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for source in ("alpha", "bravo"):  # one skill published by two sources: same name, same text
        folder = root / source / "pdf-forms"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            "---\nname: pdf-forms\ndescription: Fill PDF form fields and flatten the filled PDF forms.\n---\n"
            "# Forms\n\nUse pypdf to fill each field, then flatten.\n", encoding="utf-8")
    skills.create("form-letters", "Write form letters.", [], "# Letters\n\nA PDF copy of each form letter.\n")
    skills.reload()
    request = "fill the form fields of this pdf"
    assert len(skills.search(request, limit=3)) == 3
    assert [s.name.rsplit("/", 1)[-1] for s in skills.hint(request)] == ["pdf-forms"]


def test_the_paraphrase_table_matches_phrases_and_plurals() -> None:
    assert "presentation" in expansions(["three", "decks"])
    assert "reminder" in expansions(["put", "it", "on", "my", "to", "do", "list"])
    assert "docx" in expansions(["save", "it", "as", "a", "word", "document"])
    assert expansions(["save", "it", "as", "a", "word"]) == []  # "word" alone is only a word
    assert all(targets for targets in table().values())
