"""``hermes-tui permissions list|revoke N``: this workspace's lasting rules without the app.

Rules are only added by a key press in the approval dialog; this lists and revokes them. The
rules of a session exist only inside the running app (``/permissions`` there).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from hermes_tui.agent.permissions import LastingRules
from hermes_tui.cli_lines import EXIT_OK, fail, say
from hermes_tui.config import Config, ConfigError


def permissions_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-tui permissions",
                                     description="The calls (shell commands, file writes, edits) allowed always here.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="the lasting rules of this workspace (HERMES_WORKSPACE or the current folder)")
    commands.add_parser("revoke", help="remove rule N (from the list)").add_argument("number", type=int, metavar="N")
    args = parser.parse_args(argv)
    try:
        config = Config.load()
    except ConfigError as exc:
        return fail(str(exc))
    rules = LastingRules(config.home, config.workspace)
    if (warning := rules.warning()) is not None:
        return fail(warning)
    found = rules.rules()
    if args.command == "revoke":
        if not 1 <= args.number <= len(found):
            return fail(f"there is no rule {args.number}: 'hermes-tui permissions list' shows "
                         f"{len(found)} for {rules.workspace}.")
        try:
            rules.revoke(found[args.number - 1])
        except OSError as exc:
            return fail(f"the rule was not revoked: {exc}")
        say(f"Revoked: {found[args.number - 1].label}. Hermes asks before it again.")
        return EXIT_OK
    if not found:
        say(f"No lasting rules for {rules.workspace}: the approval dialog's w and p keys add them.")
        return EXIT_OK
    say(f"Allowed always in {rules.workspace} ({rules.path}):")
    for number, rule in enumerate(found, start=1):
        say(f"{number:>3}  {rule.label}")
    return EXIT_OK
