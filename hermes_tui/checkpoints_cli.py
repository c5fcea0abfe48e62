"""``hermes-tui checkpoints list|restore N``: the workspace's checkpoints without the app.

A restore shows what it will do and asks (on a terminal), or needs ``--yes`` (in a script). Files
someone changed after the checkpoint are kept as they are unless ``--overwrite`` is given, or the
user says so when asked: a restore never silently overwrites them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from hermes_tui.agent.checkpoints import (
    FILES_SHOWN,
    CheckpointError,
    CheckpointStore,
    describe_plan,
    file_lines,
    headline,
)
from hermes_tui.cli_lines import EXIT_OK, fail, say
from hermes_tui.config import Config, ConfigError
from hermes_tui.progress import is_terminal


def checkpoints_main(argv: Sequence[str], stdin: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-tui checkpoints",
                                     description="The workspace's checkpoints: its files before each turn that changed them.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the checkpoints of this workspace (HERMES_WORKSPACE or the current folder)")
    restoring = commands.add_parser("restore", help="put the workspace back as it was before checkpoint N")
    restoring.add_argument("number", type=int, metavar="N")
    restoring.add_argument("--yes", action="store_true", help="do not ask (files changed since are still kept)")
    restoring.add_argument("--overwrite", action="store_true",
                           help="also overwrite files changed after the checkpoint by someone else")
    args = parser.parse_args(argv)
    try:
        config = Config.load()
    except ConfigError as exc:
        return fail(str(exc))
    store = CheckpointStore(config.home, config.workspace)
    if not store.available:
        return fail("git is not installed, so there are no checkpoints. Install git to have them.")
    if args.command == "list":
        return _list(store)
    return _restore(store, args.number, yes=args.yes, overwrite=args.overwrite, stdin=stdin or sys.stdin)


def _list(store: CheckpointStore) -> int:
    checkpoints = store.list()
    if not checkpoints:
        say(f"No checkpoints yet for {store.workspace}.")
        return EXIT_OK
    say(f"Checkpoints of {store.workspace} (newest last; 'restore N' goes back to before N):")
    for checkpoint in checkpoints:
        say(headline(checkpoint))
        for line in file_lines([(c.status, c.path) for c in checkpoint.files]):
            say("    " + line)
    return EXIT_OK


def _restore(store: CheckpointStore, number: int, *, yes: bool, overwrite: bool, stdin: TextIO) -> int:
    try:
        plan = store.plan(number)
    except CheckpointError as exc:
        return fail(str(exc))
    if not plan.actions:
        say(f"The workspace already matches how it was before checkpoint {number}: nothing to restore.")
        return EXIT_OK
    for line in describe_plan(plan):
        say(line)
    interactive = not yes and is_terminal(stdin)
    if not yes and not interactive:
        return fail("Nothing restored: rerun with --yes to restore (add --overwrite to overwrite the files "
                     "changed since).")
    if interactive:
        if not _ask(f"Restore {len(plan.safe_actions if plan.conflicts else plan.actions)} file(s)?", stdin):
            say("Nothing restored.")
            return EXIT_OK
        if plan.conflicts and not overwrite:
            overwrite = _ask(f"Overwrite the {len(plan.conflicts)} file(s) changed since too?", stdin)
    try:
        result = store.restore(plan, overwrite=overwrite)
    except CheckpointError as exc:
        return fail(str(exc))
    say(f"Restored {len(result.restored)} file(s) to how they were before checkpoint {number}.")
    if result.kept:
        say(f"Kept your version of {len(result.kept)} file(s): {', '.join(result.kept[:FILES_SHOWN])}.")
    if result.checkpoint is not None:
        say(f"This restore is checkpoint {result.checkpoint.number}: 'hermes-tui checkpoints restore "
             f"{result.checkpoint.number}' undoes it.")
    return EXIT_OK


def _ask(question: str, stdin: TextIO) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return stdin.readline().strip().lower() in ("y", "yes")
