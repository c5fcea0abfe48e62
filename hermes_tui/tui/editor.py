"""The user's editor on a file or a skill, with the app suspended meanwhile (``$VISUAL``,
``$EDITOR``, else vi). A skill's version before the edit is archived, as a refinement does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SuspendNotSupported

if TYPE_CHECKING:
    from hermes_tui.skills.manager import SkillManager


def edit_file(app: App[Any], path: Path) -> None:
    """Suspend the app and run ``$VISUAL``/``$EDITOR`` (else vi) on ``path``."""
    import shlex
    import subprocess

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        with app.suspend():
            subprocess.run([*shlex.split(editor), str(path)], check=False)
    except (SuspendNotSupported, OSError, ValueError) as exc:
        app.notify(f"Could not open an editor ({editor}): {exc}", severity="error", markup=False)


def edit_skill(app: App[Any], skills: SkillManager, name: str) -> bool:
    """Edit the skill's file; the version before is kept (F9 restores it) and the library reloads.
    False when the skill is gone (said in a notification)."""
    skill = skills.get(name)
    if skill is None or skill.path is None:
        app.notify(f"The skill {name} no longer exists.", severity="error", markup=False)
        return False
    from hermes_tui.skills.manager import SkillError

    before = skills.version_text(skill.name, "current")
    edit_file(app, skill.path)
    try:  # the version before the edit is archived, as a refinement does (F9 restores it)
        skills.book_edit(skill.name, before)
    except (SkillError, OSError) as exc:  # e.g. the edit broke the frontmatter: the pane says why
        app.notify(f"The edit of {skill.name} was not kept as a version: {exc}", severity="warning",
                   markup=False)
    skills.reload()
    return True
