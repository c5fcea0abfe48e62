"""Command lines: ``hermes-tui`` (full-screen app, or one headless turn with ``-p``)."""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hermes_tui import __version__
from hermes_tui.config import Config, ConfigError
from hermes_tui.events import (
    Error,
    Event,
    FilesChanged,
    Notice,
    Receipt,
    SkillLearned,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Unsent,
)
from hermes_tui.progress import for_stderr, is_terminal
from hermes_tui.redaction import withhold_from_environment

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.agent.runtime import EventQueue

# Documented in the README ("Exit codes"); scripts rely on them.
EXIT_OK = 0
EXIT_ERROR = 1  # a provider or input problem; one line on stderr says what
EXIT_MAX_STEPS = 3  # the turn reached the step cap (MAX_STEPS model calls) without a final answer
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_SIGHUP = 128 + signal.SIGHUP  # 129: the terminal went away (headless: treated like Ctrl-C)
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143: asked to stop (kill, systemd, docker stop)
HEADLESS_DENIAL = "Denied: headless mode cannot ask for approval. The user must rerun with --yes to allow {name}."


# hermes-tui NAME ...: run by NAME_main below; --help lists them with these lines.
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("doctor", "check the memory database; if damaged, back it up and rebuild it"),
    ("skills import DIR", "copy a folder of skills (any layout) into the library"),
    ("skills list|show|archive|restore|pin", "the skills' states, uses and success rates; archive, restore, pin"),
    ("context", "show the fixed part of the prompt, part by part, with token counts"),
    ("checkpoints list|restore N", "this workspace's file checkpoints; put the files back as before a turn"),
    ("mcp list|approve|enable|disable", "the MCP servers: status, tools, approval, on and off"),
    ("permissions list|revoke N", "the shell commands allowed always in this workspace; revoke one"),
    ("helper stop|status", "the background helper that keeps the model layer warm for -p runs"),
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
    parser.add_argument("--version", action="version", version=f"hermes-tui {__version__}")
    return parser


def tui_main(argv: Sequence[str] | None = None) -> int:
    """The ``hermes-tui`` program; called with ``argv`` (tests, other code) it only returns."""
    as_program = argv is None  # then a headless run ends the process itself (_exit_now)
    if as_program:  # no child of this process (shell, helpers) ever inherits a key
        withhold_from_environment()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in {usage.split()[0] for usage, _ in SUBCOMMANDS}:
        return globals()[f"{argv[0]}_main"](argv[1:])  # type: ignore[no-any-return]
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
    if args.prompt is not None:  # the app says it on screen
        from hermes_tui.agent.sandbox import startup_notice

        if line := startup_notice(config):
            print(f"hermes: {line}", file=sys.stderr)
    if args.prompt is None:
        from hermes_tui.tui.app import run_app

        code = run_app(config, session_id=args.session, continue_last=args.continue_last)
        _tell_pending(config)
        return code
    try:
        code = run_headless(config, args)
    except KeyboardInterrupt as exc:  # before or after the turn itself: nothing to cancel
        code = _exit_code(exc)
    if as_program:  # end the process now that everything is stored and written
        _exit_now(code)
    return code


def _needs_headless(args: argparse.Namespace) -> str | None:
    """Why the full-screen app cannot start for these arguments, if it cannot.

    Flags that only mean something for one headless turn need -p; and the app draws on a
    terminal, so on a pipe it refuses at once instead of spinning unseen.
    """
    if flags := [flag for flag, on in (("--json", args.json), ("--yes", args.yes)) if on]:
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


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP in headless mode: handled exactly like Ctrl-C, with its own exit code."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


def _exit_code(interrupt: KeyboardInterrupt) -> int:
    return interrupt.exit_code if isinstance(interrupt, Signalled) else EXIT_INTERRUPTED


def _raise_signalled(signum: int, _frame: object) -> None:
    raise Signalled(signum)


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise ``Signalled`` in the main thread, where Ctrl-C is handled."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_signalled)


def run_headless(config: Config, args: argparse.Namespace) -> int:
    """One turn without a screen: answer on stdout, activity on stderr; a learned skill before exit."""
    text = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not text.strip():
        print("hermes: the prompt is empty; pass some text to -p (or pipe it with -p -).", file=sys.stderr)
        return EXIT_ERROR
    try:
        config.require_api_key()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from hermes_tui.logs import setup_logging

    setup_logging(config)
    host = _warm_host(config)  # the turn's model calls, in the warm helper when it runs
    from hermes_tui.agent.runtime import EventQueue, build_agent, headless_surface
    from hermes_tui.memory.store import MemoryStore, StoreError
    from hermes_tui.skills.manager import SkillManager
    _stop_on_signals()
    out = _Output(sys.stdout, sys.stderr, as_json=args.json)
    events = EventQueue()

    def deny(name: str, arguments: dict[str, Any]) -> str:
        # Queued behind the call's own event, so it prints after the call it denies.
        events.put(Notice(f"{name} denied: rerun with --yes to allow shell commands and file writes."))
        return HEADLESS_DENIAL.format(name=name)

    progress = for_stderr(sys.stderr)  # the reindex of an upgrade, a first skills index
    try:
        memory = MemoryStore(config.db_path, on_upgrade=lambda line: print(f"hermes: {line}", file=sys.stderr),
                             progress=progress)
    except StoreError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    session_id = args.session
    if args.continue_last:
        from hermes_tui.memory.last_session import continued, title_of

        last, problem = continued(memory, config.workspace)
        if last is None:
            memory.close()
            print(f"hermes: {problem}", file=sys.stderr)
            return EXIT_ERROR
        session_id = last.id
        out.notice(f"hermes: continuing session {last.id} ({title_of(last)})")
    from hermes_tui.agent.permissions import headless_approver

    approver = headless_approver(config, None if args.yes else deny,
                                 on_warning=lambda line: print(f"hermes: {line}", file=sys.stderr))
    mcp = _start_mcp(config, out)
    try:
        agent = build_agent(config, memory, SkillManager.for_config(config, progress),
                            headless_surface(approver, mcp), session_id=session_id,
                            host=host)
    except ValueError as exc:
        memory.close()
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        if mcp is not None:
            _wait_for_mcp(mcp, out)
        code = _drive(agent, text, out, events)
        if code not in (EXIT_INTERRUPTED, EXIT_SIGHUP, EXIT_SIGTERM):
            _leave_summary(agent, config, host, out, continued=session_id is not None)
        return code
    finally:
        memory.close()
        if mcp is not None:
            mcp.close(timeout=3.0)


def _start_mcp(config: Config, out: _Output) -> McpManager | None:
    """The declared MCP servers, starting in the background (None when none are declared)."""
    from hermes_tui.agent.mcp.manager import McpManager

    manager = McpManager(config.home, config.workspace)
    manager.subscribe(out.notice)
    manager.start()
    return manager if manager.statuses() else None


def _wait_for_mcp(manager: McpManager, out: _Output) -> None:
    """Before the first request: wait (bounded) for the servers; name those still starting."""
    from hermes_tui.agent.mcp.config import wait_seconds

    seconds = wait_seconds()
    for name in manager.wait_ready(seconds):
        out.notice(f"MCP server {name} is not ready after {seconds:g} s: this turn runs without its tools.")


def _warm_host(config: Config) -> Any:
    """The warm helper's host (``hermes_tui.warm``), reached in the background; None when
    ``HERMES_HELPER=off``. When it cannot be reached, litellm is imported here instead."""
    from hermes_tui import llm, warm

    if not warm.enabled():
        llm.warm(config)  # the turn needs litellm: import it while the rest is set up
        return None
    host = warm.WarmHost(config)

    def reach() -> None:
        if not host.ensure():
            llm.warm(config)

    threading.Thread(target=reach, name="hermes-warm-reach", daemon=True).start()
    return host


def _leave_summary(agent: AgentLoop, config: Config, host: Any, out: _Output, *, continued: bool) -> None:
    """A one-shot session's summary is written later, not while the user waits: by the warm helper
    once it is idle, else at the next start of the TUI, the web or ``doctor`` (learning/pending.py).
    A continued session (--session) is summarized now when no helper takes it."""
    from hermes_tui.learning import pending

    if host is not None and host.ensure():
        pending.mark(agent.memory, agent.session_id, told=True)
        if host.hand_over(config, config.db_path):
            return
    if not continued:
        pending.mark(agent.memory, agent.session_id, told=True)
        return
    agent.close(timeout=20.0)
    line = pending.tell(agent.memory)
    if line:
        out.notice(line)


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
    """``hermes-tui helper stop|status``: the warm helper of ``-p`` runs (hermes_tui/warm.py)."""
    parser = argparse.ArgumentParser(prog="hermes-tui helper",
                                     description="The background helper that keeps the model layer warm for -p.")
    parser.add_argument("command", choices=("stop", "status"))
    args = parser.parse_args(argv)
    from hermes_tui import warm

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


def _drive(agent: AgentLoop, text: str, out: _Output, events: EventQueue) -> int:
    """Consume the turn on the main thread, so Ctrl-C lands here and cancels it cleanly."""
    from hermes_tui.agent.runtime import start_turn
    from hermes_tui.background import Background

    runner = Background()
    turn = start_turn(agent, text, events.put, runner, on_end=events.end)
    code = EXIT_OK
    interrupted: int | None = None  # the exit code of the interruption (Ctrl-C, SIGTERM, SIGHUP)
    unsent = False  # the turn failed before any answer: its message is out of the conversation
    while True:
        try:
            event = events.get(timeout=0.1)
            if event is None:
                break
            out.emit(event)
        except queue.Empty:
            continue
        except KeyboardInterrupt as exc:  # may land anywhere in this loop, emit included
            turn.cancel()
            interrupted = _exit_code(exc)
            out.notice("cancelled" if interrupted == EXIT_INTERRUPTED else f"cancelled ({exc})")
            continue
        if isinstance(event, Error):
            code = EXIT_ERROR
        elif isinstance(event, Unsent):
            unsent = True
        elif isinstance(event, TurnFinished):
            if event.stopped_reason == "cancelled" and interrupted is None:
                interrupted = EXIT_INTERRUPTED
            if event.stopped_reason == "max_steps" and code == EXIT_OK:
                code = EXIT_MAX_STEPS
    runner.shutdown(runner.clock() + 5)  # the turn's thread lets go of the agent (its curator too)
    code = interrupted if interrupted is not None else code
    # The last line names the session, so it can be continued (JSON: turn_started has its id). Not
    # after a failure before any answer: that one line says what went wrong, and nothing was done.
    if out.session_id is not None and not out.as_json and not (code == EXIT_ERROR and unsent):
        out.notice(session_line(out.session_id))
    return code


def session_line(session_id: int) -> str:
    """The last stderr line of a plain headless run."""
    return (f"hermes: session {session_id}; continue it with hermes-tui -c -p TEXT (this workspace's "
            f"last session) or hermes-tui -p TEXT --session {session_id}")


class _Output:
    """Renders events for a pipe: text to stdout, activity to stderr, or JSON lines.

    Text of separate model calls (before and after a tool call) is printed as separate
    paragraphs: one blank line between them, never glued together.
    """

    def __init__(self, stdout: TextIO, stderr: TextIO, *, as_json: bool) -> None:
        from hermes_tui.textsafe import StreamCleaner

        self.stdout, self.stderr, self.as_json = stdout, stderr, as_json
        # On a terminal, untrusted text is made inert (hermes_tui.textsafe); a pipe gets it verbatim.
        self._clean_text = StreamCleaner() if is_terminal(stdout) else None
        self._clean_err = is_terminal(stderr)
        self._tail = ""  # the last two characters written to stdout
        self._block_ended = False  # something other than text happened since the last text
        self._lock = threading.RLock()  # the approver reports from the turn's thread
        self.session_id: int | None = None  # from TurnStarted

    @property
    def _mid_line(self) -> bool:
        return bool(self._tail) and not self._tail.endswith("\n")

    def emit(self, event: Event) -> None:
        with self._lock:
            if self._clean_text is not None and not isinstance(event, TextDelta) and (held := self._clean_text.flush()):
                self._write_text(held)  # the end of a text block: what was held back is complete
            self._emit(event)
            if not isinstance(event, TextDelta):
                self._block_ended = True

    def _write_text(self, text: str) -> None:
        if self._clean_text is not None:
            text = self._clean_text.feed(text)
            if not text:
                return
        if self._block_ended and self._tail:
            trailing_newlines = len(self._tail) - len(self._tail.rstrip("\n"))
            text = "\n" * (2 - trailing_newlines) + text
        self._block_ended = False
        self.stdout.write(text)
        self.stdout.flush()
        self._tail = (self._tail + text)[-2:]

    def _emit(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self.session_id = event.session_id
        if self.as_json:
            self.stdout.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            self.stdout.flush()
            if isinstance(event, Error):
                self._err(f"hermes: {event.message}")
            return
        if isinstance(event, TextDelta):
            self._write_text(event.text)
        elif isinstance(event, ToolCallStarted):
            self._err(f"→ {event.name} {json.dumps(event.arguments, ensure_ascii=False)[:160]}")
        elif isinstance(event, ToolCallFinished):
            first = event.result.strip().splitlines()[0][:160] if event.result.strip() else ""
            mark = "✓" if event.ok else "✗"
            self._err(f"{mark} {event.name} ({event.seconds:.1f} s){': ' + first if not event.ok else ''}")
        elif isinstance(event, Notice):
            self._err(event.message)
        elif isinstance(event, FilesChanged):
            files = ", ".join(f"{f['path']} ({f['status']})" for f in event.files[:10])
            more = f" and {len(event.files) - 10} more" if len(event.files) > 10 else ""
            self._err(f"changed {len(event.files)} file(s): {files}{more}; 'hermes-tui checkpoints restore "
                      f"{event.checkpoint}' undoes them")
        elif isinstance(event, Receipt):
            self._err(event.text)
        elif isinstance(event, Error):
            self._err(f"hermes: {event.message}")
        elif isinstance(event, SkillLearned):
            verb = "learned skill" if event.created else "refined skill"
            self._err(f"{verb} {event.name} (v{event.version})")
        elif isinstance(event, TurnFinished) and self._mid_line:
            self.stdout.write("\n")
            self.stdout.flush()
            self._tail = self._tail[-1:] + "\n"

    def notice(self, message: str) -> None:
        if self.as_json:
            self.emit(Notice(message))
        else:
            self._err(message)

    def _err(self, line: str) -> None:
        if self._clean_err:
            from hermes_tui.textsafe import printable

            line = printable(line)
        with self._lock:
            self.stderr.write(line + "\n")
            self.stderr.flush()


def skills_main(argv: Sequence[str]) -> int:
    """``hermes-tui skills import DIR|list|show NAME|archive NAME|restore NAME|pin NAME`` (hermes_tui/skills/)."""
    parser = argparse.ArgumentParser(prog="hermes-tui skills", description="Manage the skill library.")
    commands = parser.add_subparsers(dest="command", required=True)
    importing = commands.add_parser("import", help="copy a folder of skills (any layout) into the library")
    importing.add_argument("folder", type=Path)
    commands.add_parser("list", help="every skill with its state, uses and success rate")
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
        lines = run_skill_command(SkillManager.for_config(config, for_stderr(sys.stderr)), args.command, vars(args))
    except (ConfigError, SkillError, OSError) as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(lines))
    return EXIT_OK


def checkpoints_main(argv: Sequence[str]) -> int:
    from hermes_tui.checkpoints_cli import checkpoints_main as main

    return main(argv)


def permissions_main(argv: Sequence[str]) -> int:
    from hermes_tui.permissions_cli import permissions_main as main

    return main(argv)


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
    for name, what in (("approve", "allow a server of the workspace's .mcp.json to run (this exact entry)"),
                       ("enable", "start this server again from now on"), ("disable", "do not start this server")):
        commands.add_parser(name, help=what).add_argument("server")
    args = parser.parse_args(argv)
    from hermes_tui.agent.mcp import report
    from hermes_tui.agent.mcp.config import McpState, declared, wait_seconds
    from hermes_tui.agent.mcp.manager import McpManager

    try:
        config = Config.load()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.command in (None, "list"):
        manager = McpManager(config.home, config.workspace)
        manager.subscribe(lambda line: print(f"hermes: {line}", file=sys.stderr))
        manager.start()
        manager.wait_ready(wait_seconds())
        statuses = manager.statuses()
        manager.close(timeout=3.0)
        if not statuses:
            print(f"No MCP servers declared: add them to {config.home / 'mcp.json'} or the workspace's .mcp.json.")
        for status in statuses:
            print(report.summary(status))
        return EXIT_OK
    found = {spec.name: spec for spec in declared(config.home, config.workspace).specs}
    spec = found.get(args.server)
    if spec is None:
        print(f"hermes: no MCP server {args.server!r}; declared: {', '.join(found) or 'none'}.", file=sys.stderr)
        return EXIT_ERROR
    state = McpState(config.home, config.workspace)
    if args.command == "approve":
        state.approve(spec)
        print(f"Approved: {report.entry(spec)}")
    else:
        state.set_enabled(spec, args.command == "enable")
        print(f"{spec.name} is {args.command}d.")
    return EXIT_OK


def doctor_main(argv: Sequence[str]) -> int:
    """``hermes-tui doctor``: check the memory database; when damaged, back it up and rebuild a
    new one from every readable row (hermes_tui/memory/doctor.py)."""
    argparse.ArgumentParser(
        prog="hermes-tui doctor",
        description="Check the memory database; if it is damaged, move it aside and rebuild it "
                    "from every readable row.",
    ).parse_args(argv)
    try:
        config = Config.load()
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from hermes_tui.memory.doctor import repair
    from hermes_tui.memory.errors import StoreError

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
