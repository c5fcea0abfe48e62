"""The question asked before run_bash / write_file / edit_file. It shows everything that will run or
be written: the whole command (scrollable both ways, focusable, with its line count), or for a write
a diff against the file as it is now ("new file, N lines" when there is none), or for an edit the
numbered diff it would make (or why it will fail). Nothing is cut. A write names its real target
(symlinks followed, as the tool will: "Write .github/ci.yml (via docs/ci.yml)"), and the dialog
reads for its diff only what the file tools would read: a path they refuse (outside the workspace,
HERMES_HOME, a secret) is never opened, only said to be refused.

Answers (keys from ``actions.ACTIONS``): once (y); this exact call for the session (c); every
call of this tool for the session (a); deny (n or Esc). Where the policy offers them
(``agent/approvals.py``, from the tool's record), lasting answers for this workspace too: this
exact call (w: the command, the file), and for a plain call of a program on the allowlist
(``permissions.PROGRAMS``) any such call of it (p).
At 80×24 every answer stays on screen: the buttons go into a grid when one row is too narrow.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from hermes_tui.agent.approvals import ALWAYS, DENY, EXACT, ONCE, PROGRAM, SESSION
from hermes_tui.textsafe import printable
from hermes_tui.tui import actions
from hermes_tui.tui.dismiss_once import DismissOnce
from hermes_tui.tui.format import plural

DIFF_LIMIT = 2_000_000  # bytes of an existing file compared for the diff; larger ones are only named
# The dialog's geometry, as its CSS below declares it (on_resize lays out by these numbers).
DIALOG_WIDTH = 100
DIALOG_SIDES = 2 + 4  # the border and the padding, in columns
BUTTON_SIDES = 4  # a normal button's border and padding around its label
COMPACT_SIDES = 2  # a compact button's padding
BUTTON_HEIGHT = 3  # a normal button's rows
# Rows besides the body and the buttons: border 2, title 1, question margin 1 and 1 row, summary 1,
# the body's margin 1, the buttons' margins 2, the footer 1.
CHROME_ROWS = 10


@dataclass(frozen=True)
class Approval:
    """What the dialog shows for one call."""

    question: str
    summary: str  # the line count, or what the write does
    body: Content  # the command, the diff or the new content, whole
    warning: str = ""  # control characters that are not drawn


def lines_of(text: str) -> list[str]:
    """The lines as an editor counts them: a final newline ends the last line, it starts none
    (five lines and their newlines were "new file, 6 lines")."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def hidden_controls(raw: str) -> str:
    """A warning when the raw text holds characters the dialog does not draw."""
    shown = printable(raw)
    if shown == raw.replace("\r\n", "\n"):
        return ""
    return (f"⚠ {plural(len(raw) - len(shown), 'control character')} (terminal escapes or similar) are not "
            "drawn here; they are part of the call as it would run.")


def describe(name: str, arguments: dict[str, Any], workspace: str, root: str | None = None,
             shows: str | None = None, home: Path | None = None) -> Approval:
    """The dialog's text for a call; ``shows``: what to show (default: what the tool's record says);
    ``home``: HERMES_HOME, which the file tools refuse."""
    if shows is None:
        from hermes_tui.agent.tools import approval_spec

        shows = approval_spec(name).shows
    if shows == "command":
        command = str(arguments.get("command", ""))
        count = len(lines_of(command))
        return Approval(f"Run this command in {workspace}?", f"{plural(count, 'line')} · nothing cut: ↑ ↓ PgUp PgDn scroll",
                        Content(printable(command)), hidden_controls(command))
    if shows == "write":
        return _describe_write(str(arguments.get("path", "?")), str(arguments.get("content", "")), workspace, root,
                               home)
    if shows == "edit" and root is not None:
        return _describe_edit(str(arguments.get("path", "?")), arguments, workspace, root)
    listing = "\n".join(f"{key}: {value}" for key, value in arguments.items())
    return Approval(f"Allow {printable(name)}?", plural(len(arguments), "argument"), Content(printable(listing)),
                    hidden_controls(listing))


def _describe_write(path: str, content: str, workspace: str, root: str | None, home: Path | None) -> Approval:
    target = _target(path, root)
    question = f"Write {printable(target)} in {workspace}?"
    warning = hidden_controls(content)
    current, reason = _current(path, root, home)
    if reason.startswith("refused"):  # never read: the call itself will be refused by the tool
        return Approval(question, f"({printable(reason)})",
                        Content(printable(content)) if content else Content("(empty file)"), warning)
    new_lines = lines_of(printable(content))
    if current is None:
        summary = f"new file, {plural(len(new_lines), 'line')}" + (f" ({reason})" if reason else "")
        return Approval(question, summary, Content(printable(content)) if content else Content("(empty file)"),
                        warning)
    old_lines = lines_of(printable(current))
    diff = list(difflib.unified_diff(old_lines, new_lines, "now", "after", lineterm="", n=3))
    if not diff:
        return Approval(question, "no change: the file already has this content",
                        Content(printable(content)), warning)
    added = sum(1 for line in diff[2:] if line.startswith("+"))
    removed = sum(1 for line in diff[2:] if line.startswith("-"))
    summary = f"replaces an existing file: +{plural(added, 'line')} −{removed:,} · {len(new_lines):,} lines after"
    return Approval(question, summary, _diff_content(diff[2:]), warning)


def _describe_edit(path: str, arguments: dict[str, Any], workspace: str, root: str) -> Approval:
    """The whole diff the edit would make to the file as it is now, or why it will fail."""
    from hermes_tui.agent.edit import preview

    shown = preview(Path(root), path, arguments)
    texts = [str(arguments.get(key, "")) for key in ("old", "new")]
    texts += [str(change.get(key, "")) for change in arguments.get("edits") or [] if isinstance(change, dict)
              for key in ("old", "new")]
    warning = next((w for w in map(hidden_controls, texts) if w), "")
    body = Content(printable(shown.problem)) if shown.problem else _diff_content([printable(line) for line in shown.diff])
    return Approval(f"Edit {printable(_target(path, root))} in {workspace}?", shown.summary, body, warning)


def _target(path: str, root: str | None) -> str:
    """How the question names the file: its real path, and the given one when they differ."""
    from hermes_tui.agent.paths import real_target

    real = real_target(Path(root), path) if root is not None else None
    if real is None or real == os.path.normpath(path):
        return path
    return f"{real} (via {path})"


def _current(path: str, root: str | None, home: Path | None) -> tuple[str | None, str]:
    """The file's text now (None when it does not exist or must not be shown) and why not. It
    is read as ``read_file`` reads (``open_in_workspace``): what the tools refuse is never opened."""
    if root is None:
        return None, ""
    from hermes_tui.agent.paths import PathError, open_in_workspace, resolve_in_workspace, write_refusal

    try:
        real = resolve_in_workspace(Path(root), path, home=home)
    except PathError as exc:
        return None, f"refused: {exc}"
    refusal = write_refusal(Path(root), real, shown=path)
    if refusal is not None:
        return None, f"refused: {refusal}"
    if not real.exists():
        return None, ""
    try:
        with open_in_workspace(Path(root), path, "read", home=home) as (fd, _real):
            if os.fstat(fd).st_size > DIFF_LIMIT:
                return None, "an existing file too large to compare"
            with os.fdopen(os.dup(fd), "rb") as file:
                return file.read().decode(errors="replace"), ""
    except PathError as exc:
        return None, f"refused: {exc}"
    except OSError as exc:
        return None, f"the existing file cannot be read: {exc.strerror or exc}"


def _diff_content(lines: list[str]) -> Content:
    styles = {"+": "$text-success", "-": "$text-error", "@": "$text-accent"}
    parts: list[tuple[str, str] | str] = []
    for index, line in enumerate(lines):
        if index:
            parts.append("\n")
        parts.append((line, styles.get(line[:1], "")))
    return Content.assemble(*parts)


class CommandView(ScrollableContainer, can_focus=True):
    """The call's text. Keys scroll at once: Textual's scrolls wait for the next refresh and
    start from where the view is then, so PgDn or → pressed in a burst (a held key) moved once."""

    def action_page_down(self) -> None:
        self._scroll_by(0, self.scrollable_content_region.height)

    def action_page_up(self) -> None:
        self._scroll_by(0, -self.scrollable_content_region.height)

    def action_scroll_down(self) -> None:
        self._scroll_by(0, 1)

    def action_scroll_up(self) -> None:
        self._scroll_by(0, -1)

    def action_scroll_right(self) -> None:
        self._scroll_by(1, 0)

    def action_scroll_left(self) -> None:
        self._scroll_by(-1, 0)

    def _scroll_by(self, dx: int, dy: int) -> None:
        if not (self.allow_horizontal_scroll if dx else self.allow_vertical_scroll):
            raise SkipAction()
        self.scroll_to(x=self.scroll_x + dx, y=self.scroll_y + dy, animate=False, immediate=True)


class ApprovalScreen(DismissOnce, ModalScreen[str]):
    """Dismisses with "once", "exact", "session" or "deny" (Esc denies)."""

    # The text has the focus: arrows and PgUp/PgDn read it all; a stray Enter runs nothing.
    # Textual focuses it once the screen is composed (an on_mount query once ran too early).
    AUTO_FOCUS = "#approval-details"

    # Here rather than in hermes.tcss: parsed when first shown, not at start-up.
    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
        background: $background 60%;
    }
    #approval-dialog {
        width: 100;
        max-width: 96%;
        height: auto;
        max-height: 95%;
        padding: 0 2;
        border: thick $warning 70%;
        background: $surface;
    }
    #approval-question {
        margin-top: 1;
    }
    #approval-summary, #approval-warning {
        color: $text-muted;
    }
    #approval-warning {
        color: $text-warning;
    }
    #approval-details {
        height: auto;
        min-height: 3;
        margin-top: 1;
        background: $panel;
        scrollbar-gutter: stable;
        &:focus {
            background-tint: $foreground 4%;
        }
    }
    #approval-dialog.-tall {  # a body taller than the screen: the dialog fills it, the body scrolls
        height: 95%;
        #approval-details {
            height: 1fr;
        }
    }
    #approval-text {
        width: auto;
        padding: 0 1;
        color: $foreground;
    }
    #approval-buttons {
        dock: bottom;  # always drawn, however tall the command
        height: auto;
        margin: 1 0;
        align-horizontal: right;
    }
    #approval-buttons Button {
        margin-left: 1;
        min-width: 10;
    }
    #approval-buttons.-stacked {  # too narrow for one row: a grid of compact buttons
        layout: grid;
        grid-size: 2;
        grid-rows: 1;
        grid-gutter: 0 1;
        &.-single {
            grid-size: 1;
        }
    }
    #approval-buttons.-stacked Button {
        width: 1fr;
        margin-left: 0;
    }
    """

    BINDINGS = actions.bindings("approval")

    def __init__(self, name: str, arguments: dict[str, Any], workspace: str, root: str | None = None,
                 *, answers: tuple[str, ...] = (ONCE, EXACT, SESSION, DENY), home: Path | None = None,
                 agent: str = "") -> None:
        super().__init__(classes="approval")
        self.agent = agent  # a sub-agent's call: which one asks
        from hermes_tui.agent.tools import approval_spec

        self.tool_name = name
        self.spec = approval_spec(name)
        self.approval = describe(name, arguments, workspace, root, self.spec.shows, home)
        self.answers = answers  # as the policy offers them: the lasting ones where the tool has them
        self.program = self.spec.broad(arguments) if PROGRAM in answers else None  # "Any pytest"

    def compose(self) -> ComposeResult:
        exact = f"{self.spec.exact_label} · session"
        every = f"{self.spec.every_label or 'All ' + printable(self.tool_name)} · session"
        with Vertical(id="approval-dialog"):
            yield Static(Content.assemble(("Approval needed · ", "$text-warning bold"),
                                          (printable(self.tool_name), "bold"),
                                          (f" · asked by {printable(self.agent)}" if self.agent else "", "$text-muted")),
                         id="approval-title")
            yield Static(self.approval.question, markup=False, id="approval-question")
            yield Static(Content(self.approval.summary), id="approval-summary")
            if self.approval.warning:
                yield Static(Content(self.approval.warning), id="approval-warning")
            with CommandView(id="approval-details"):
                yield Static(self.approval.body, id="approval-text")
            with Horizontal(id="approval-buttons"):
                yield Button(Content(f"Once ({_keys(ONCE)})"), id=ONCE, variant="primary")
                yield Button(Content(f"{exact} ({_keys(EXACT)})"), id=EXACT)
                yield Button(Content(f"{every} ({_keys(SESSION)})"), id=SESSION)
                if ALWAYS in self.answers:
                    yield Button(Content(f"{self.spec.exact_label} · always here ({_keys(ALWAYS)})"), id=ALWAYS)
                if self.program is not None:
                    yield Button(Content(f"{self.spec.broad_answer.format(self.program)} · always here "
                                         f"({_keys(PROGRAM)})"), id=PROGRAM)
                yield Button(Content(f"Deny ({_keys(DENY)})"), id=DENY, variant="error")
        yield Footer()

    def on_resize(self) -> None:
        """Lay out for this size by arithmetic, not by measuring after a refresh (a measurement
        taken before the buttons were placed left them on one row, cut at 80 columns)."""
        width, height = self.size
        inner = min(DIALOG_WIDTH, width * 96 // 100) - DIALOG_SIDES
        buttons = list(self.query(Button))
        if not buttons:  # a resize can come before the composed widgets are mounted
            return
        labels = [cell_len(str(button.label)) for button in buttons]
        one_row = sum(max(label + BUTTON_SIDES, 10) + 1 for label in labels)
        stacked = one_row > inner
        columns = 2 if max(labels) + COMPACT_SIDES <= (inner - 1) // 2 else 1
        row = self.query_one("#approval-buttons")
        row.set_class(stacked, "-stacked")
        row.set_class(stacked and columns == 1, "-single")
        for button in buttons:
            button.compact = stacked
        button_rows = (len(buttons) + columns - 1) // columns if stacked else BUTTON_HEIGHT
        warning = len(self.approval.warning) // max(inner, 1) + 1 if self.approval.warning else 0
        chrome = CHROME_ROWS + len(self.approval.question) // max(inner, 1) + warning
        body = len(lines_of(self.approval.body.plain)) + 1  # + the horizontal scrollbar's row
        self.query_one("#approval-dialog").set_class(chrome + button_rows + body > height * 95 // 100, "-tall")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or DENY)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The lasting answers' keys only where the dialog offers them."""
        if action == "choose" and parameters:
            return parameters[0] in self.answers
        return True

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


def _keys(choice: str) -> str:
    """The keys of an answer as its button names them (``n/Esc``): from the action table."""
    return actions.all_keys("approval", f"choose('{choice}')")
