"""``hermes-tui permissions list|revoke N``: this workspace's lasting rules without the app.

Rules are only added by a key press in the approval dialog; this lists and revokes them. The
rules of a session exist only inside the running app (``/permissions`` there).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hermes_tui.agent.permissions import LastingRules
from hermes_tui.config import Config, ConfigError
from hermes_tui.textsafe import printable

EXIT_OK, EXIT_ERROR = 0, 1


def permissions_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-tui permissions",
                                     description="The shell commands allowed always in this workspace.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="the lasting rules of this workspace (HERMES_WORKSPACE or the current folder)")
    commands.add_parser("revoke", help="remove rule N (from the list)").add_argument("number", type=int, metavar="N")
    args = parser.parse_args(argv)
    try:
        config = Config.load()
    except ConfigError as exc:
        return _fail(str(exc))
    rules = LastingRules(config.home, config.workspace)
    if (warning := rules.warning()) is not None:
        return _fail(warning)
    found = rules.rules()
    if args.command == "revoke":
        if not 1 <= args.number <= len(found):
            return _fail(f"there is no rule {args.number}: 'hermes-tui permissions list' shows "
                         f"{len(found)} for {rules.workspace}.")
        try:
            rules.revoke(found[args.number - 1])
        except OSError as exc:
            return _fail(f"the rule was not revoked: {exc}")
        print(printable(f"Revoked: {found[args.number - 1].label}. Hermes asks before it again."))
        return EXIT_OK
    if not found:
        print(printable(f"No lasting rules for {rules.workspace}: the approval dialog's w and p keys add them."))
        return EXIT_OK
    print(printable(f"Allowed always in {rules.workspace} ({rules.path}):"))
    for number, rule in enumerate(found, start=1):
        print(printable(f"{number:>3}  {rule.label}"))
    return EXIT_OK


def _fail(line: str) -> int:
    print(f"hermes: {line}", file=sys.stderr)
    return EXIT_ERROR
