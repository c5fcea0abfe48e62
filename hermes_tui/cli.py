"""Command lines: ``hermes-tui`` (the full-screen app, or one headless turn with ``-p``: ``headless``) and its
subcommands, ``hermes-web``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hermes_tui import __version__, heap
from hermes_tui.cli_lines import EXIT_ERROR, EXIT_OK
from hermes_tui.config import Config, ConfigError
from hermes_tui.progress import for_stderr, is_terminal
from hermes_tui.redaction import withhold_from_environment

# hermes-tui NAME ...: run by COMMANDS[NAME] below; --help lists them with these lines.
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("doctor", "check compiled bytecode and the memory database; rebuild a damaged one"),
    ("skills import DIR", "copy a folder of skills (any layout) into the library"),
    ("skills list|show|stats|archive|restore|pin", "the skills' states, uses, outcomes and costs; archive, "
     "restore, pin"),
    ("inbox list|accept N|reject N", "what Hermes learned under HERMES_LEARN=review, waiting for you"),
    ("facts list|approve ID|remove ID", "what Hermes remembers, the facts waiting for your approval; approve, remove"),
    ("context", "show the fixed part of the prompt, part by part, with token counts"),
    ("checkpoints list|restore N", "this workspace's file checkpoints; put the files back as before a turn"),
    ("mcp list|approve|enable|disable", "the MCP servers: status, tools, approval, on and off"),
    ("hooks list|approve [FILE]", "the hooks of the settings files: what runs, from where; approve a project's"),
    ("permissions list|revoke N", "the shell commands allowed always in this workspace; revoke one"),
    ("helper start|stop|status", "the background helper that keeps the model layer warm for -p runs"),
    ("helper unit systemd|launchd", "print a login service that starts the helper"),
    ("eval TASKS", "A/B-run a task file: cold (no skills) against warm (the skills it learned)"),
    ("acp", "serve an editor (Zed, Neovim...) over the Agent Client Protocol on stdin and stdout"),
)


def tui_parser() -> argparse.ArgumentParser:
    width = max(len(usage) for usage, _ in SUBCOMMANDS) + 2
    parser = argparse.ArgumentParser(
        prog="hermes-tui",
        description="Hermes, a self-improving AI agent. Without -p: the full-screen app.",
        epilog="commands:\n" + "\n".join(f"  hermes-tui {usage:<{width}}{what}" for usage, what in SUBCOMMANDS)
               + "\n\n'hermes-tui COMMAND --help' says more.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-p", "--prompt", metavar="TEXT",
                        help="run one turn headless and exit ('-' reads the prompt from stdin)")
    parser.add_argument("--json", action="store_true", help="with -p: write every event as a JSON line to stdout")
    parser.add_argument("--session", type=int, metavar="ID", help="continue the session with this id")
    parser.add_argument("-c", "--continue", dest="continue_last", action="store_true",
                        help="continue the last session of this workspace (HERMES_WORKSPACE)")
    parser.add_argument("--provider", help="override HERMES_PROVIDER")
    parser.add_argument("--model", help="override HERMES_MODEL")
    parser.add_argument("--yes", action="store_true", help="with -p: allow run_bash, write_file and MCP tools without asking")
    parser.add_argument("--plan", action="store_true",
                        help="with -p: plan mode, read-only tools only; the answer is a plan, nothing is changed")
    parser.add_argument("--image", action="append", metavar="PATH",
                        help="with -p: attach an image (PNG, JPEG, GIF or WebP) to the prompt; repeatable")
    parser.add_argument("--version", action="version", version=f"hermes-tui {__version__}")
    return parser


def tui_main(argv: Sequence[str] | None = None) -> int:
    """The ``hermes-tui`` program; called with ``argv`` (tests, other code) it only returns."""
    as_program = argv is None  # then a headless run ends the process itself (_exit_now)
    if as_program:  # no child of this process (shell, helpers) ever inherits a key
        withhold_from_environment()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and (run := COMMANDS.get(argv[0])) is not None:
        heap.loaded()
        return run(argv[1:])
    args = tui_parser().parse_args(argv)
    if args.continue_last and args.session is not None:
        print("hermes: -c continues this workspace's last session and --session ID a given one: "
              "use one of them.", file=sys.stderr)
        return EXIT_ERROR
    if args.prompt is None and (problem := _needs_headless(args)):
        print(f"hermes: {problem}", file=sys.stderr)
        return EXIT_ERROR
    try:
        config = Config.load().with_overrides(provider=args.provider, model=args.model)
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for line in config.warnings:
        print(f"hermes: {line}", file=sys.stderr)
    if args.prompt is None:
        from hermes_tui.tui.app import run_app

        code = run_app(config, session_id=args.session, continue_last=args.continue_last)
        _tell_pending(config)
        return code
    from hermes_tui.headless import exit_code, run_headless

    try:
        code = run_headless(config, args)
    except KeyboardInterrupt as exc:  # before or after the turn itself: nothing to cancel
        code = exit_code(exc)
    if as_program:  # end the process now that everything is stored and written
        _exit_now(code)
    return code


def _needs_headless(args: argparse.Namespace) -> str | None:
    """Why the full-screen app cannot start for these arguments, if it cannot.

    Flags that only mean something for one headless turn need -p; and the app draws on a
    terminal, so on a pipe it refuses at once instead of spinning unseen.
    """
    if flags := [flag for flag, on in (("--json", args.json), ("--yes", args.yes),
                                                          ("--plan", args.plan), ("--image", args.image)) if on]:
        return f"{' and '.join(flags)} only work with -p; add -p \"TEXT\" to run one headless turn."
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        return "the full-screen app needs a terminal; use -p \"TEXT\" (or -p - to read stdin) to run one turn."
    return None


def _exit_now(code: int) -> None:
    """End a headless process at once, skipping the interpreter's teardown.

    By now the turn is stored and the database closed; what remains is flushing our own output
    and log. Tearing down litellm's thousands of modules and objects would only add a few tenths
    of a second between the answer and the shell prompt (bench/headless_turn.py measures it).
    """
    import logging
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it anyway
            pass
    logging.shutdown()
    os._exit(code)


def _tell_pending(config: Config) -> None:
    """After the TUI: say once which summaries did not finish before it closed."""
    from hermes_tui.learning import pending
    from hermes_tui.memory.store import MemoryStore, StoreError

    if not config.db_path.exists():
        return
    try:
        with MemoryStore(config.db_path) as memory:
            line = None if memory.read_only else pending.tell(memory)
    except (StoreError, OSError):
        return
    if line:
        print(f"hermes: {line}", file=sys.stderr)


def helper_main(argv: Sequence[str]) -> int:
    """``hermes-tui helper start|stop|status|unit KIND``: the warm helper of ``-p`` runs (hermes_tui/warm.py)."""
    from hermes_tui import helper_units

    parser = argparse.ArgumentParser(prog="hermes-tui helper",
                                     description="The background helper that keeps the model layer warm for -p.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("start", help="start it unless it runs, and wait until it is ready")
    commands.add_parser("stop", help="stop it")
    commands.add_parser("status", help="its pid, version and socket")
    unit = commands.add_parser("unit", help="print a login service (systemd user unit, launchd agent) that starts it")
    unit.add_argument("kind", choices=tuple(helper_units.UNITS))
    args = parser.parse_args(argv)
    from hermes_tui import warm

    if args.command == "unit":
        print(helper_units.UNITS[args.kind](helper_units.program()), end="")
        return EXIT_OK
    if args.command == "start":
        return _helper_start()
    if args.command == "stop":
        pid = warm.stop()
        print(f"stopped the helper (pid {pid})" if pid is not None else "no helper is running")
        return EXIT_OK
    found = warm.status()
    if found is None:
        print(f"no helper is running (its socket would be {warm.folder() / 'socket'})")
    else:
        pid, version = found
        print(f"helper running: pid {pid}, version {version}, socket {warm.folder() / 'socket'}")
    return EXIT_OK


def _helper_start() -> int:
    from hermes_tui import warm

    try:
        config: Config | None = Config.load()
    except ConfigError:  # the helper needs none of it: it warms up without a model then
        config = None
    try:
        pid, seconds = warm.start(config)
    except warm.Unavailable as exc:
        print(f"hermes: the helper could not start: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"helper running: pid {pid}" + (f", started and ready in {seconds:.1f} s" if seconds is not None
                                           else " (it was running already)"))
    return EXIT_OK


def skills_main(argv: Sequence[str]) -> int:
    """``hermes-tui skills import DIR|list|show NAME|stats [NAME]|archive NAME|restore NAME|pin NAME`` (hermes_tui/skills/)."""
    parser = argparse.ArgumentParser(prog="hermes-tui skills", description="Manage the skill library.")
    commands = parser.add_subparsers(dest="command", required=True)
    importing = commands.add_parser("import", help="copy a folder of skills (any layout) into the library")
    importing.add_argument("folder", type=Path)
    commands.add_parser("list", help="every skill with its state, uses and success rate")
    stats = commands.add_parser("stats", help="uses, outcomes and mean cost per use against the turn it was learned from")
    stats.add_argument("name", nargs="?")
    for command, text in (("show", "a skill's state, outcomes and instructions"),
                          ("archive", "move a skill Hermes wrote to the archive folder"),
                          ("restore", "bring an archived skill back"),
                          ("pin", "keep a skill from ageing (--off to let it age again)")):
        sub = commands.add_parser(command, help=text)
        sub.add_argument("name")
        if command == "pin":
            sub.add_argument("--off", action="store_true", help="unpin")
    args = parser.parse_args(argv)
    from hermes_tui.skills.commands import run_skill_command
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.skills.schema import SkillError

    try:
        config = Config.load()
        lines = run_skill_command(SkillManager.for_config(config, for_stderr(sys.stderr)), args.command, vars(args),
                                  _skills_review)
    except (ConfigError, SkillError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(lines))
    return EXIT_OK


def inbox_main(argv: Sequence[str]) -> int:
    """``hermes-tui inbox list|accept N|reject N``: skills and facts learned under HERMES_LEARN=review."""
    parser = argparse.ArgumentParser(prog="hermes-tui inbox",
                                     description="What Hermes learned under HERMES_LEARN=review, waiting for you.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the waiting items, numbered, and skills flagged as failing")
    for command, text in (("accept", "offer item N to the model from now on"), ("reject", "delete item N")):
        commands.add_parser(command, help=text).add_argument("number", type=int, metavar="N")
    args = parser.parse_args(argv)
    from hermes_tui.learning.review import run_inbox_command
    from hermes_tui.memory.facts import FactError
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.skills.schema import SkillError

    try:
        config = Config.load()
        lines = run_inbox_command(config, SkillManager.for_config(config, for_stderr(sys.stderr)), args.command,
                                  getattr(args, "number", None))
    except (ConfigError, SkillError, FactError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(lines))
    return EXIT_OK


def _skills_review(name: str, subject: str) -> str:
    """Where a quarantined skill is approved or deleted (keys from the TUI's action table)."""
    from hermes_tui.tui import actions, panes

    pane = panes.BY_NAME["skills"].keys[0].upper()
    keys = {a.action: a.key_text for a in actions.in_scope("skills")}
    return (f"Review {subject} in the TUI's Skills pane ({pane}, under “Held back”: {keys['approve']} "
            f"approves, {keys['delete']} deletes) or with `hermes-tui skills show {name}`")


def checkpoints_main(argv: Sequence[str]) -> int:
    from hermes_tui.checkpoints_cli import checkpoints_main as main

    return main(argv)


def permissions_main(argv: Sequence[str]) -> int:
    from hermes_tui.permissions_cli import permissions_main as main

    return main(argv)


def facts_main(argv: Sequence[str]) -> int:
    """``hermes-tui facts``: the curated facts of this workspace and the user, and the ones waiting."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui facts",
        description="What Hermes remembers (HERMES_HOME/memory). Facts the model proposes about you (every "
                    "workspace), and under HERMES_LEARN=review every fact the curator proposes, wait for your "
                    "approval and reach no prompt until then (`hermes-tui inbox` lists them too).")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="every fact, the waiting ones marked")
    for name, what in (("approve", "let a waiting fact into the prompts (of every session, or of its project)"),
                       ("remove", "take a fact out of use (its line stays under Earlier versions)")):
        commands.add_parser(name, help=what).add_argument("id")
    args = parser.parse_args(argv)
    from hermes_tui.memory import facts
    from hermes_tui.textsafe import printable

    try:
        store = facts.for_config(Config.load())
        if args.command == "approve":
            kept = store.approve(args.id)
            print(f"Approved {kept.id}: {printable(kept.text)}")
        elif args.command == "remove":
            gone = store.remove(args.id)
            print(f"Removed {gone.id} (kept under Earlier versions in {store.path(gone.scope)}): {printable(gone.text)}")
        else:
            for fact in store.facts() + store.pending():
                waiting = "  [waiting for approval: hermes-tui facts approve " + fact.id + "]" if fact.pending else ""
                print(f"{fact.id}  {fact.scope:<7}  {printable(fact.text)}{waiting}")
    except (ConfigError, facts.FactError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def context_main(argv: Sequence[str]) -> int:
    """``hermes-tui context``: what a new session here would send before any message, part by part."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui context",
        description="Show the fixed prompt of a new session in this folder (system rules, tools, skills "
                    "index, instruction files) with token counts.")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--approve", metavar="PATH", type=Path,
                        help="let this held-back instruction file into later sessions (this exact content)")
    args = parser.parse_args(argv)
    from hermes_tui.agent import instructions
    from hermes_tui.agent.runtime import context_report, headless_surface
    from hermes_tui.memory.store import MemoryStore, StoreError
    from hermes_tui.skills.manager import SkillManager
    from hermes_tui.textsafe import printable

    try:
        config = Config.load()
        if args.approve is not None:
            wanted = args.approve.resolve()
            held = [f for f in instructions.load(config.home, config.workspace).held_back if f.path == wanted]
            if not held:
                print(f"hermes: {args.approve} is not a held-back instruction file here "
                      "(hermes-tui context lists them)", file=sys.stderr)
                return EXIT_ERROR
            instructions.approve(config.home, held[0])
            print(f"Approved {printable(held[0].label)}: later sessions read it while its content stays the same.")
            return EXIT_OK
        with MemoryStore(config.db_path) as memory:
            report = context_report(config, memory, SkillManager.for_config(config), headless_surface(None))
    except (ConfigError, StoreError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        print("\n".join(printable(line) for line in report.lines()))
    return EXIT_OK


def mcp_main(argv: Sequence[str]) -> int:
    """``hermes-tui mcp list|approve|enable|disable`` (hermes_tui/agent/mcp/)."""
    parser = argparse.ArgumentParser(prog="hermes-tui mcp", description="The MCP servers of mcp.json and .mcp.json.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="start the servers; show each one's status, tools and schema tokens")
    for name, what in (("approve", "show what a server of the workspace's .mcp.json runs, then allow it "
                                   "(this exact entry and the workspace code it runs)"),
                       ("enable", "start this server again from now on"), ("disable", "do not start this server")):
        command = commands.add_parser(name, help=what)
        command.add_argument("server")
        if name == "approve":
            command.add_argument("--yes", action="store_true", help="approve without asking (scripts)")
    args = parser.parse_args(argv)
    from hermes_tui.agent.mcp import report
    from hermes_tui.agent.mcp.code import TooLarge
    from hermes_tui.agent.mcp.config import McpState, declared
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.textsafe import printable

    try:
        config = Config.load()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.command in (None, "list"):
        manager = McpManager(config.home, config.workspace)
        manager.subscribe(lambda line: print(f"hermes: {printable(line)}", file=sys.stderr))
        manager.start()
        manager.wait_ready(config.mcp_wait)
        statuses = manager.statuses()
        manager.close(timeout=3.0)
        if not statuses:
            print(f"No MCP servers declared: add them to {config.home / 'mcp.json'} or the workspace's .mcp.json.")
        for status in statuses:  # the entries and the servers' words are the repository's: never raw
            print(printable(report.summary(status)))
        return EXIT_OK
    found = {spec.name: spec for spec in declared(config.home, config.workspace).specs}
    spec = found.get(args.server)
    if spec is None:
        print(printable(f"hermes: no MCP server {args.server!r}; declared: {', '.join(found) or 'none'}."),
              file=sys.stderr)
        return EXIT_ERROR
    state = McpState(config.home, config.workspace)
    if args.command == "approve":
        print(printable(f"{report.entry(spec)} It runs with your rights, outside the shell sandbox."))
        if not args.yes:
            print("Approve it? [y/N] ", end="", flush=True)
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print("Not approved.")
                return EXIT_ERROR
        try:
            state.approve(spec)
        except TooLarge as exc:
            print(f"hermes: {spec.name} cannot be approved: {exc}.", file=sys.stderr)
            return EXIT_ERROR
        print(f"Approved {spec.name}.")
    else:
        state.set_enabled(spec, args.command == "enable")
        print(f"{spec.name} is {args.command}d.")
    return EXIT_OK


def hooks_main(argv: Sequence[str]) -> int:
    """``hermes-tui hooks list|approve`` (hermes_tui/agent/hooks/)."""
    parser = argparse.ArgumentParser(prog="hermes-tui hooks", description="The hooks of HERMES_HOME/settings.json "
                                     "and the workspace's .hermes/settings.json and .claude/settings.json.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="each settings file's hooks and whether they run")
    approve = commands.add_parser("approve", help="show a project settings file's hooks, then allow them "
                                                  "(this exact file and the workspace code its commands run)")
    approve.add_argument("file", nargs="?", help="e.g. .claude/settings.json (default: every file that waits)")
    approve.add_argument("--yes", action="store_true", help="approve without asking (scripts)")
    args = parser.parse_args(argv)
    from hermes_tui.agent.hooks import config as hooks_config
    from hermes_tui.agent.hooks import report
    from hermes_tui.textsafe import printable

    try:
        config = Config.load()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    found = hooks_config.declared(config.home, config.workspace)
    if args.command in (None, "list"):
        print("\n".join(printable(line) for line in report.lines(found)))  # the repository's words: never raw
        return EXIT_OK
    chosen = [f for f in found.files if f.project and f.hooks and (args.file is None or args.file in (f.label, str(f.path)))]
    chosen = [f for f in chosen if not f.approved] if args.file is None else chosen
    if not chosen:
        print(printable(f"hermes: no project hooks {'in ' + args.file if args.file else 'wait for approval'} "
                        "(hermes-tui hooks list shows them)."), file=sys.stderr)
        return EXIT_ERROR if args.file else EXIT_OK
    for file in chosen:
        if not file.binding:
            print(printable(f"hermes: {file.label} cannot be approved: {'; '.join(file.problems)}"), file=sys.stderr)
            return EXIT_ERROR
        print("\n".join(printable(line) for line in report.file_lines(file)))
        print("These commands run with your rights, outside the shell sandbox, in this workspace.")
        if not args.yes:
            print("Approve them? [y/N] ", end="", flush=True)
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print("Not approved.")
                return EXIT_ERROR
        hooks_config.approve(config.home, file)
        print(f"Approved {file.label}: its hooks run while it and the files its commands name stay the same.")
    return EXIT_OK


def doctor_main(argv: Sequence[str]) -> int:
    """``hermes-tui doctor``: say which packages lack compiled bytecode (hermes_tui/bytecode.py);
    check the memory database and, when damaged, back it up and rebuild a new one from every
    readable row (hermes_tui/memory/doctor.py)."""
    argparse.ArgumentParser(
        prog="hermes-tui doctor",
        description="Say which packages lack compiled bytecode (slow starts); check the memory "
                    "database, and if it is damaged, move it aside and rebuild it from every readable row.",
    ).parse_args(argv)
    try:
        config = Config.load()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from hermes_tui import bytecode
    from hermes_tui.memory.doctor import repair
    from hermes_tui.memory.errors import StoreError

    for line in bytecode.report_lines():
        print(line)
    try:
        report = repair(config.db_path, for_stderr(sys.stderr))
    except (StoreError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for line in report.lines():
        print(line)
    if report.healthy or report.backup is not None:
        _write_pending(config)
        return EXIT_OK
    return EXIT_ERROR


def _write_pending(config: Config) -> None:
    """``doctor`` writes the session summaries still pending (learning/pending.py), now."""
    from hermes_tui.learning import pending
    from hermes_tui.llm import LLMClient
    from hermes_tui.memory.errors import StoreError
    from hermes_tui.memory.store import MemoryStore

    try:
        with MemoryStore(config.db_path, progress=for_stderr(sys.stderr)) as memory:
            waiting = [] if memory.read_only else pending.pending(memory)
            if not waiting:
                return
            if not config.has_api_key:
                print(f"{len(waiting)} session summaries pending: set {config.key_variable} to write them")
                return
            llm = LLMClient(config)
            outcomes = [pending.write(memory, llm, session_id)[0] for session_id in waiting]
    except (StoreError, OSError) as exc:
        print(f"hermes: pending summaries not written: {exc}", file=sys.stderr)
        return
    written = outcomes.count(pending.Outcome.WRITTEN)
    left = outcomes.count(pending.Outcome.LEFT)
    print(f"pending session summaries: wrote {written} of {len(waiting)}"
          + (f"; {left} still pending (the model did not answer: see the log)" if left else ""))


def eval_main(argv: Sequence[str]) -> int:
    """``hermes-tui eval TASKS``: each task cold and warm in temporary homes (hermes_tui/learning/eval.py)."""
    from hermes_tui.learning import eval as evaluation

    parser = argparse.ArgumentParser(
        prog="hermes-tui eval",
        description="Run each task of TASKS (YAML) as headless turns with tools approved, twice: cold (a fresh home, "
                    "no skills, no memory) and warm (only the skills the cold turns learned), and print success, "
                    "model and tool calls, tokens and seconds per arm. Uses your provider, model and key; never "
                    "your HERMES_HOME.")
    parser.add_argument("tasks", type=Path, metavar="TASKS", help="the task file (see evals/tasks.yaml)")
    parser.add_argument("--runs", type=int, default=1, metavar="N", help="repeat both arms N times (default 1)")
    parser.add_argument("--library", choices=("learned", "current"), default="learned",
                        help="the warm arm's skills: what the cold turns learned (default), or a copy of your "
                             "own library")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every turn as a JSON object to OUT")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the temporary homes and workspaces in a new folder inside DIR")
    parser.add_argument("--check-timeout", type=float, default=evaluation.CHECK_TIMEOUT, metavar="S",
                        help="seconds a check may take (default %(default)g)")
    parser.add_argument("--turn-timeout", type=float, default=evaluation.TURN_TIMEOUT, metavar="S",
                        help="seconds a turn may take (default %(default)g)")
    args = parser.parse_args(argv)
    import shutil
    import tempfile

    from hermes_tui.cli_lines import say, warn
    from hermes_tui.headless import EXIT_INTERRUPTED

    if args.runs < 1:
        print("hermes: --runs must be at least 1.", file=sys.stderr)
        return EXIT_ERROR
    try:
        tasks = evaluation.load_tasks(args.tasks)
        config = Config.load()
        config.require_api_key()
    except evaluation.TaskFileError as exc:
        for line in exc.problems:
            warn(line)
        return EXIT_ERROR
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="hermes-eval-", dir=args.keep))
    except OSError as exc:
        print(f"hermes: cannot make the evaluation folder: {exc}", file=sys.stderr)
        return EXIT_ERROR
    run = evaluation.Eval(config, tasks, root, runs=args.runs, check_timeout=args.check_timeout,
                          turn_timeout=args.turn_timeout, on_row=lambda row: warn(evaluation.progress_line(row)))
    if args.library == "current":
        run.library = evaluation.copy_library(config.skills_dir, root)
    turns = args.runs * sum(1 + len(task.prompts) for task in tasks)
    warn(f"evaluating {len(tasks)} task(s), {turns} turns with {config.provider}/{config.model}"
         + (f"; folders kept in {root}" if args.keep is not None else ""))
    code = EXIT_OK
    try:
        run.run()
    except (evaluation.Interrupted, KeyboardInterrupt):  # Ctrl-C between two children, or during one
        warn(f"interrupted: the table holds the {len(run.rows)} turn(s) that finished")
        code = EXIT_INTERRUPTED
    except OSError as exc:
        warn(f"evaluation stopped: {exc}")
        code = EXIT_ERROR
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    for line in evaluation.render(run.rows, tasks):
        say(line)
    if args.json is not None:
        try:
            args.json.write_text(json.dumps([row.to_dict() for row in run.rows], indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            warn(f"--json {args.json}: {exc}")
            return EXIT_ERROR
    return code


def acp_main(argv: Sequence[str]) -> int:
    """``hermes-tui acp``: an ACP agent on stdin/stdout for an editor (hermes_tui/acp/)."""
    argparse.ArgumentParser(
        prog="hermes-tui acp",
        description="Speak the Agent Client Protocol on stdin and stdout, for an editor that starts this "
                    "command (Zed's agent_servers, Neovim's CodeCompanion or avante). The editor's working "
                    "directory is the workspace; sessions, memory and skills are Hermes' own.").parse_args(argv)
    import asyncio

    from hermes_tui.acp.server import serve

    try:
        from hermes_tui.logs import setup_logging

        setup_logging(Config.load())
    except (ConfigError, OSError) as exc:  # every session/new then says what is wrong, in the editor
        print(f"hermes: {exc}", file=sys.stderr)
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return EXIT_OK


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "doctor": doctor_main, "skills": skills_main, "inbox": inbox_main, "facts": facts_main,
    "context": context_main, "checkpoints": checkpoints_main, "mcp": mcp_main, "hooks": hooks_main,
    "permissions": permissions_main, "helper": helper_main, "eval": eval_main, "acp": acp_main,
}
"""What runs ``hermes-tui NAME ...``: one entry per first word of ``SUBCOMMANDS`` (a test checks)."""


def web_main(argv: Sequence[str] | None = None) -> int:
    """``hermes-web``: the dashboard under gunicorn (see hermes_tui.web.serve)."""
    from hermes_tui.memory.errors import StoreError
    from hermes_tui.web.serve import serve

    if argv is None:  # the program itself: no child ever inherits a key
        withhold_from_environment()
    try:
        serve(argv)
    except (ConfigError, StoreError) as exc:
        print(f"hermes-web: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK
