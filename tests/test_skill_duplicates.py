"""Near-duplicate proposals refine the skill they repeat; different procedures stay apart."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.skills.manager import SkillManager

STEPS = "1. Do the thing.\n2. Check the result."


def test_one_procedure_in_several_wordings_is_one_skill(tmp_path: Path) -> None:
    manager = SkillManager(tmp_path / "skills")
    outcomes = [
        manager.propose("count-lines", "Count the lines of code in a repository", ["loc", "sloc"], STEPS),
        manager.propose("count-lines-helper", "How to count the lines of code in a repository",
                        ["loc", "line count"], STEPS + "\n3. Skip vendored folders."),
        manager.propose("quick-count-lines", "Count lines of code in a repository quickly", ["sloc"], STEPS),
        manager.propose("backup-postgres", "Back up a PostgreSQL database with pg_dump", ["pg_dump"], STEPS),
        manager.propose("restore-postgres", "Restore a PostgreSQL database from a dump file", ["pg_restore"], STEPS),
    ]
    assert [o.kind for o in outcomes] == ["created", "refined", "refined", "created", "created"]
    assert {o.name for o in outcomes[:3]} == {"count-lines"}
    assert sorted(s.name for s in manager.list()) == ["backup-postgres", "count-lines", "restore-postgres"]
    assert manager.get("count-lines").version == 3
    manager.close()


def test_a_near_duplicate_of_a_skill_the_user_edited_waits_for_the_user(tmp_path: Path) -> None:
    manager = SkillManager(tmp_path / "skills")
    manager.propose("rotate-logs", "Rotate and compress old log files", ["logrotate"], STEPS)
    skill_file = tmp_path / "skills" / "rotate-logs" / "SKILL.md"
    skill_file.write_text(skill_file.read_text() + "\n4. My own step.\n")
    outcome = manager.propose("log-rotation", "Rotate and compress the old log files", ["logrotate"], STEPS)
    assert (outcome.kind, outcome.name) == ("pending", "rotate-logs")
    assert "My own step." in skill_file.read_text(), "the user's file is never overwritten"
    assert [s.name for s in manager.list()] == ["rotate-logs"]
    manager.close()
