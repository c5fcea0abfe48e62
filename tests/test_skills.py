"""SkillManager and the SKILL.md format, on real files; the reference validator is the judge."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import skills_ref

from hermes_tui.skills.manager import MAX_FILE_BYTES, SkillExistsError, SkillManager, SkillNotFoundError
from hermes_tui.skills.schema import Skill, SkillError, normalize_name, parse_skill, render_skill

HOSTILE_DESCRIPTION = (
    "Deploy --- then: 'quote' \"double\" # not a comment {braces} [list] & *alias !tag | > % @ `tick`\n"
    "second line\ttab \x00nul \x1b[31mansi\u2028sep 😀 é " + "long " * 400
)


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    return tmp_path / "skills"


@pytest.fixture
def manager(skills_dir: Path) -> SkillManager:
    return SkillManager(skills_dir)


def make_library(manager: SkillManager) -> None:
    manager.create(
        "Deploy Flask to Railway",
        "Deploy a Flask web app to Railway with gunicorn and a Procfile.",
        ["deploy", "railway", "flask", "gunicorn"],
        "1. Add a Procfile: `web: gunicorn app:app`\n2. Run `railway up`.",
    )
    manager.create(
        "postgres-backup",
        "Back up a PostgreSQL database with pg_dump.",
        ["backup", "postgres", "pg_dump"],
        "Run pg_dump nightly and ship the dump to object storage.",
    )
    manager.create(
        "flask-unit-tests",
        "Write pytest tests for Flask views.",
        ["pytest", "flask", "testing"],
        "Use app.test_client() inside a fixture.",
    )


def write_file(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def assert_valid(folder: Path) -> None:
    assert skills_ref.validate(folder) == [], folder.joinpath("SKILL.md").read_text(encoding="utf-8")


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Deploy Flask to Railway", "deploy-flask-to-railway"),
        ("Deploy Flask → Railway!", "deploy-flask-railway"),
        ("  --Hello__World--  ", "hello-world"),
        ("Café Déjà Vu", "cafe-deja-vu"),
        ("already-fine-2", "already-fine-2"),
        ("a" * 100, "a" * 64),
        ("ab-" * 40, ("ab-" * 22)[:64].rstrip("-")),
    ],
)
def test_normalize_name(raw: str, expected: str) -> None:
    name = normalize_name(raw)
    assert name == expected
    assert len(name) <= 64 and "--" not in name and not name.startswith("-") and not name.endswith("-")


@pytest.mark.parametrize("raw", ["", "   ", "!!!", "---", "日本語"])
def test_normalize_name_rejects_text_without_letters(raw: str) -> None:
    with pytest.raises(SkillError, match="cannot make a skill name"):
        normalize_name(raw)
    assert issubclass(SkillError, ValueError)


# -- create / get / list ------------------------------------------------------------------------


def test_create_then_get_by_any_spelling(manager: SkillManager, skills_dir: Path) -> None:
    created = manager.create(
        "Deploy Flask to Railway", "  Deploy it.  ", ["deploy", " railway ", "", "a, b"], "\n\nSteps\n"
    )
    assert created.name == "deploy-flask-to-railway"
    assert created.path == skills_dir / "deploy-flask-to-railway" / "SKILL.md"
    assert (created.description, created.triggers, created.body) == (
        "Deploy it.",
        ["deploy", "railway", "a", "b"],
        "Steps",
    )
    assert (created.version, created.use_count) == (1, 0)
    assert created.created == created.updated and abs(created.created - time.time()) < 60

    for spelling in ("deploy-flask-to-railway", "Deploy Flask to Railway", "DEPLOY_FLASK_TO_RAILWAY"):
        found = manager.get(spelling)
        assert found is not None and found.name == created.name and found.triggers == created.triggers
    assert manager.get("missing") is None
    assert manager.get("!!!") is None


def test_results_are_copies_not_the_cache(manager: SkillManager) -> None:
    manager.create("copy-me", "A skill.", ["one"], "body")
    manager.get("copy-me").triggers.append("mutated")  # type: ignore[union-attr]
    assert manager.get("copy-me").triggers == ["one"]  # type: ignore[union-attr]


def test_duplicate_names_are_rejected(manager: SkillManager) -> None:
    manager.create("Deploy Flask", "First.", [], "")
    with pytest.raises(SkillExistsError, match="'deploy-flask' already exists"):
        manager.create("deploy-flask", "Second.", [], "")
    with pytest.raises(SkillExistsError):
        manager.create("DEPLOY  flask!", "Third.", [], "")
    assert manager.get("deploy-flask").description == "First."  # type: ignore[union-attr]


def test_description_is_required_trimmed_and_capped(manager: SkillManager) -> None:
    for empty in ("", "   \n\t", "\x00\x01"):
        with pytest.raises(SkillError, match="needs a description"):
            manager.create(f"empty {len(empty)}", empty, [], "")
    assert manager.list() == []
    skill = manager.create("long", "x" * 5000, [], "")
    assert skill.description == "x" * 1024
    assert manager.get("long").description == "x" * 1024  # type: ignore[union-attr]


def test_list_orders_by_use_then_recent_update(manager: SkillManager) -> None:
    for name in ("alpha", "bravo", "charlie", "delta"):
        manager.create(name, f"Skill {name}.", [], "")
    manager.record_use("bravo")
    manager.record_use("bravo")
    manager.record_use("charlie")
    manager.refine("alpha", body="updated after delta was created")
    assert [s.name for s in manager.list()] == ["bravo", "charlie", "alpha", "delta"]


def test_oversized_skill_is_refused_before_writing(manager: SkillManager, skills_dir: Path) -> None:
    with pytest.raises(SkillError, match="limit"):
        manager.create("huge", "Too big.", [], "x" * (MAX_FILE_BYTES + 1))
    assert not (skills_dir / "huge").exists()


# -- search ------------------------------------------------------------------------------------


def test_search_finds_a_paraphrase(manager: SkillManager) -> None:
    make_library(manager)
    results = manager.search("ship my flask app to railway")
    assert results[0].name == "deploy-flask-to-railway"
    assert manager.search("how do I back up my databases?")[0].name == "postgres-backup"
    assert manager.search("testing views")[0].name == "flask-unit-tests"


def test_search_stems_word_forms(manager: SkillManager) -> None:
    make_library(manager)
    assert manager.search("deploying")[0].name == "deploy-flask-to-railway"
    assert manager.search("deployments")[0].name == "deploy-flask-to-railway"
    assert manager.search("backups")[0].name == "postgres-backup"
    manager.create("nginx-setup", "Set up a reverse proxy.", ["configure nginx", "library"], "")
    for query in ("configuring", "configured", "configuration", "libraries"):
        assert [s.name for s in manager.search(query)] == ["nginx-setup"], query


def test_search_weighs_triggers_most(manager: SkillManager) -> None:
    manager.create("in-body", "Cluster notes.", [], "We use kubernetes here.")
    manager.create("in-description", "Everything about kubernetes.", [], "")
    manager.create("in-triggers", "Cluster operations.", ["kubernetes"], "")
    manager.create("kubernetes", "Just the name.", [], "")
    manager.create("unrelated", "Bake bread.", ["bread"], "flour")
    names = [s.name for s in manager.search("kubernetes", limit=10)]
    assert names[0] == "in-triggers"
    assert names[-1] == "in-body"
    assert "unrelated" not in names


def test_search_limit_and_no_match(manager: SkillManager) -> None:
    make_library(manager)
    assert len(manager.search("flask", limit=1)) == 1
    assert len(manager.search("flask")) == 2
    assert manager.search("flask", limit=0) == []
    assert manager.search("quantum chromodynamics") == []


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "the and of to my",
        "(((",
        "*",
        "\\",
        '"unclosed',
        "NEAR(a b) OR NOT -x",
        "\x00\x01\x02",
        "😀😀😀",
        "\ud800 lone surrogate",
        "a" * 100_000,
        "flask " * 10_000,
        "../../etc/passwd",
        "%s %d {0} {name}",
    ],
)
def test_search_never_raises(manager: SkillManager, query: str) -> None:
    make_library(manager)
    results = manager.search(query)
    assert isinstance(results, list) and len(results) <= 5
    if query.strip() in ("", "the and of to my"):
        assert results == []


# -- refine / restore / record_use / delete ------------------------------------------------------


def test_refine_bumps_version_and_keeps_the_old_one(manager: SkillManager, skills_dir: Path) -> None:
    original = manager.create("deploy", "Deploy the app.", ["deploy"], "Old steps.")
    refined = manager.refine("deploy", body="New steps.", triggers=["deploy", "ship"])
    assert refined.version == 2 and refined.updated >= original.updated
    assert (refined.description, refined.triggers, refined.body) == (
        "Deploy the app.",
        ["deploy", "ship"],
        "New steps.",
    )
    assert refined.created == original.created
    archived = skills_dir / "deploy" / "versions" / "v1.md"
    assert parse_skill(archived.read_text(encoding="utf-8"), archived).body == "Old steps."
    assert manager.versions("deploy") == [1, 2]
    assert_valid(skills_dir / "deploy")

    with pytest.raises(SkillError, match="at least one"):
        manager.refine("deploy")
    with pytest.raises(SkillNotFoundError):
        manager.refine("nope", body="x")


def test_restore_makes_a_new_version_equal_to_the_old(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("deploy", "Deploy v1.", ["one"], "Body one.")
    manager.refine("deploy", description="Deploy v2.", triggers=["two"], body="Body two.")
    manager.record_use("deploy")
    restored = manager.restore("deploy", 1)
    assert restored.version == 3 and restored.use_count == 1
    assert (restored.description, restored.triggers, restored.body) == ("Deploy v1.", ["one"], "Body one.")
    assert manager.versions("deploy") == [1, 2, 3]
    again = manager.restore("deploy", 2)  # nothing was lost by restoring
    assert (again.version, again.body) == (4, "Body two.")
    with pytest.raises(SkillNotFoundError, match="no version 9; available: 1, 2, 3, 4"):
        manager.restore("deploy", 9)
    assert_valid(skills_dir / "deploy")


def test_record_use_counts(manager: SkillManager) -> None:
    manager.create("counted", "Count me.", [], "")
    assert manager.record_use("Counted").use_count == 1
    skill = manager.record_use("counted")
    assert (skill.use_count, skill.version) == (2, 1)
    with pytest.raises(SkillNotFoundError, match="no skill named 'ghost'"):
        manager.record_use("ghost")


def test_concurrent_record_use_loses_nothing(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("busy", "Used a lot.", [], "")
    other = SkillManager(skills_dir)  # a second manager on the same folder (file lock)

    def work(target: SkillManager) -> None:
        for _ in range(20):
            target.record_use("busy")

    threads = [threading.Thread(target=work, args=(m,)) for m in (manager, manager, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert manager.get("busy").use_count == 60  # type: ignore[union-attr]


def test_concurrent_record_use_across_processes(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("shared", "Used by two processes.", [], "")
    code = (
        "import sys; from pathlib import Path; from hermes_tui.skills.manager import SkillManager\n"
        "m = SkillManager(Path(sys.argv[1]))\n"
        "for _ in range(20): m.record_use('shared')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(skills_dir)], env=env) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert manager.get("shared").use_count == 40  # type: ignore[union-attr]


def test_readers_never_see_a_torn_file(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("hot", "Rewritten while read.", ["x"], "line\n" * 5000)
    path = skills_dir / "hot" / "SKILL.md"
    stop = threading.Event()
    seen: list[int] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(parse_skill(path.read_text(encoding="utf-8"), path).use_count)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(30):
            manager.record_use("hot")
    finally:
        stop.set()
        reader.join()
    assert seen and seen == sorted(seen) and max(seen) <= 30


def test_delete(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("doomed", "Going away.", [], "")
    manager.refine("doomed", body="v2")
    manager.create("kept", "Staying.", [], "")
    manager.delete("Doomed")
    assert not (skills_dir / "doomed").exists()
    assert manager.get("doomed") is None
    assert [s.name for s in manager.list()] == ["kept"]
    with pytest.raises(SkillNotFoundError):
        manager.delete("doomed")
    manager.create("doomed", "Back again.", [], "")  # the name is free again
    assert manager.versions("doomed") == [1]


def test_state_survives_a_new_manager(manager: SkillManager, skills_dir: Path) -> None:
    first = manager.create("durable", "Persists.", ["keep"], "Body.")
    manager.refine("durable", body="Body 2.")
    manager.record_use("durable")
    reopened = SkillManager(skills_dir).get("durable")
    assert reopened is not None
    assert (reopened.version, reopened.use_count, reopened.triggers, reopened.body) == (
        2,
        1,
        ["keep"],
        "Body 2.",
    )
    assert reopened.created == pytest.approx(first.created, abs=1e-5)
    assert SkillManager(skills_dir).versions("durable") == [1, 2]


def test_changes_by_someone_else_are_seen(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("edited", "Before.", [], "")
    assert manager.get("edited").description == "Before."  # type: ignore[union-attr]
    path = skills_dir / "edited" / "SKILL.md"
    write_file(path, path.read_text(encoding="utf-8").replace("Before.", "After, edited by hand."))
    assert manager.get("edited").description == "After, edited by hand."  # type: ignore[union-attr]


def test_writes_leave_no_temp_files(manager: SkillManager, skills_dir: Path) -> None:
    manager.create("tidy", "Clean.", [], "")
    manager.refine("tidy", body="v2")
    manager.record_use("tidy")
    manager.restore("tidy", 1)
    files = sorted(p.relative_to(skills_dir).as_posix() for p in skills_dir.rglob("*") if p.is_file())
    assert files == [".lock", "tidy/SKILL.md", "tidy/versions/v1.md", "tidy/versions/v2.md"]


# -- reading files Hermes did not write ------------------------------------------------------------


def test_malformed_files_are_skipped_with_a_warning(
    manager: SkillManager, skills_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager.create("good", "A good skill.", [], "")
    bad = {
        "bad-yaml": "---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n",
        "no-description": "---\nname: no-description\n---\nbody\n",
        "not-a-mapping": "---\n- just\n- a list\n---\nbody\n",
        "unclosed": "---\nname: unclosed\ndescription: never closed\n",
        "no-frontmatter": "# Just markdown\n",
        "too-big": "---\nname: too-big\ndescription: big\n---\n" + "x" * MAX_FILE_BYTES,
    }
    for name, text in bad.items():
        write_file(skills_dir / name / "SKILL.md", text)
    write_file(skills_dir / "binary" / "SKILL.md", b"---\nname: binary\ndescription: d\n---\n\x00\xff\xfe")
    write_file(
        skills_dir / "latin1" / "SKILL.md", "---\nname: latin1\ndescription: caf\xe9\n---\n".encode("latin-1")
    )
    write_file(skills_dir / "Bad Folder" / "SKILL.md", "---\nname: bad-folder\ndescription: d\n---\n")
    write_file(skills_dir / "bad-legacy.md", "---\ndescription: [oops\n---\n")

    with caplog.at_level(logging.WARNING):
        assert [s.name for s in manager.list()] == ["good"]
    warned = caplog.text
    for name in [*bad, "binary", "latin1", "Bad Folder", "bad-legacy.md"]:
        assert f"{name}" in warned, name
    assert "not valid YAML" in warned and "binary" in warned and "larger than" in warned
    assert "not UTF-8" in warned and "not a valid skill name" in warned

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert [s.name for s in manager.list()] == ["good"]
        assert manager.search("skill")[0].name == "good"
    assert caplog.records == []  # warned once per file version, not on every read


def test_symlinks_out_of_the_skills_dir_are_not_followed(
    manager: SkillManager, skills_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager.create("good", "A good skill.", [], "")
    outside = write_file(
        tmp_path / "outside" / "secret" / "SKILL.md", "---\nname: secret\ndescription: Secret.\n---\n"
    )
    (skills_dir / "linked-file").mkdir()
    (skills_dir / "linked-file" / "SKILL.md").symlink_to(outside)
    (skills_dir / "linked-folder").symlink_to(outside.parent)
    (skills_dir / "sneaky.md").symlink_to(outside)
    inside = manager.create("original", "Inside.", [], "").path
    (skills_dir / "alias").mkdir()
    assert inside is not None
    (skills_dir / "alias" / "SKILL.md").symlink_to(inside)

    with caplog.at_level(logging.WARNING):
        names = [s.name for s in manager.list()]
    assert sorted(names) == ["alias", "good", "original"]  # a link inside the folder is fine
    assert caplog.text.count("outside the skills folder") == 3
    assert manager.search("secret") == []


def test_frontmatter_name_not_matching_folder_is_accepted_under_the_folder_name(
    manager: SkillManager, skills_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_file(
        skills_dir / "right-name" / "SKILL.md", "---\nname: wrong-name\ndescription: Mismatch.\n---\nBody\n"
    )
    with caplog.at_level(logging.WARNING):
        assert [s.name for s in manager.list()] == ["right-name"]
    assert "does not match its folder" in caplog.text
    assert skills_ref.validate(skills_dir / "right-name")  # invalid as written by hand...
    manager.record_use("right-name")
    assert_valid(skills_dir / "right-name")  # ...valid once Hermes rewrites it


def test_hand_written_skill_without_metadata(manager: SkillManager, skills_dir: Path) -> None:
    path = write_file(
        skills_dir / "pdf-tools" / "SKILL.md",
        "---\nname: pdf-tools\ndescription: |\n  Extract text from PDFs.\n  Use for any PDF.\n"
        "license: MIT\ntags: [pdf, text]\nmetadata:\n  author: someone\n---\n"
        "\n# PDF tools\n\nUse pdftotext.\n",
    )
    os.utime(path, (1_700_000_000, 1_700_000_000))
    skill = manager.get("pdf-tools")
    assert skill is not None
    assert skill.description == "Extract text from PDFs. Use for any PDF."
    assert (skill.version, skill.use_count, skill.triggers) == (1, 0, [])
    assert skill.created == skill.updated == 1_700_000_000
    assert skill.body == "# PDF tools\n\nUse pdftotext."

    manager.record_use("pdf-tools")
    assert_valid(skills_dir / "pdf-tools")
    rewritten = path.read_text(encoding="utf-8")
    assert "license: MIT" in rewritten and "author: someone" in rewritten and "tags: pdf, text" in rewritten
    again = SkillManager(skills_dir).get("pdf-tools")
    assert again is not None and again.use_count == 1 and again.created == 1_700_000_000


def test_legacy_flat_files_are_read_and_moved_on_write(manager: SkillManager, skills_dir: Path) -> None:
    write_file(
        skills_dir / "Old Trick.md",
        "---\ndescription: An old trick.\ntriggers: [old, trick]\nversion: 3\nuse_count: 7\n"
        "created: 2024-01-02T03:04:05Z\n---\nDo the trick.\n",
    )
    write_file(
        skills_dir / "named.md", "---\nname: Named Legacy\ndescription: Has a name.\ntriggers: a, b\n---\n"
    )
    legacy = manager.get("old-trick")
    assert legacy is not None
    assert (legacy.triggers, legacy.version, legacy.use_count, legacy.body) == (
        ["old", "trick"],
        3,
        7,
        "Do the trick.",
    )
    assert legacy.created == 1704164645.0
    assert manager.get("named-legacy").triggers == ["a", "b"]  # type: ignore[union-attr]
    assert manager.search("tricks")[0].name == "old-trick"
    with pytest.raises(SkillExistsError):
        manager.create("old trick", "Clash.", [], "")

    moved = manager.refine("old-trick", body="Do it better.")
    assert not (skills_dir / "Old Trick.md").exists()
    assert moved.path == skills_dir / "old-trick" / "SKILL.md"
    assert (moved.version, moved.use_count) == (4, 7)
    assert_valid(skills_dir / "old-trick")
    assert manager.restore("old-trick", 3).body == "Do the trick."
    manager.delete("named-legacy")
    assert not (skills_dir / "named.md").exists()


# -- the on-disk format ------------------------------------------------------------------------------


def test_render_and_parse_round_trip(tmp_path: Path) -> None:
    skill = Skill(
        name="round-trip",
        description="Round trip: keeps everything.",
        triggers=["one", "two words"],
        body="# Title\n\n---\n\nAfter a rule.",
        version=7,
        use_count=42,
        created=1_700_000_000.25,
        updated=1_700_000_100.5,
    )
    text = render_skill(skill)
    assert text.startswith("---\nname: round-trip\ndescription: 'Round trip: keeps everything.'\nmetadata:\n")
    assert "  triggers: one, two words\n  version: '7'\n  use_count: '42'\n" in text
    assert "  created: '2023-11-14T22:13:20.250000+00:00'\n" in text
    parsed = parse_skill(text, tmp_path / "round-trip" / "SKILL.md")
    assert parsed.path == tmp_path / "round-trip" / "SKILL.md"
    parsed.path = None
    assert parsed == skill
    with pytest.raises(SkillError, match="not a valid skill name"):
        render_skill(Skill(name="Not Valid", description="x"))


def test_every_file_hermes_writes_passes_the_reference_validator(
    manager: SkillManager, skills_dir: Path
) -> None:
    make_library(manager)
    manager.create(
        "hostile",
        HOSTILE_DESCRIPTION,
        ["a,b", "---", "x: y", "'q'", "\x00"],
        "---\nbody with --- and \x00\n---",
    )
    manager.refine("hostile", description="  Also: --- hostile #  ", triggers=["deploy"])
    manager.restore("hostile", 1)
    manager.record_use("deploy-flask-to-railway")
    write_file(
        skills_dir / "legacy.md", "---\ndescription: 'Legacy: ---'\nextra: {nested: true}\n---\nbody\n"
    )
    manager.record_use("legacy")

    folders = sorted(p.parent for p in skills_dir.glob("*/SKILL.md"))
    assert [f.name for f in folders] == [
        "deploy-flask-to-railway",
        "flask-unit-tests",
        "hostile",
        "legacy",
        "postgres-backup",
    ]
    for folder in folders:
        assert_valid(folder)
    hostile = manager.get("hostile")
    assert hostile is not None and len(hostile.description) == 1024 and "---" not in hostile.description

    cli = subprocess.run(
        [sys.executable, "-m", "skills_ref.cli", "validate", str(skills_dir / "hostile")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    assert "Valid skill" in cli.stdout
