"""One headless turn (``hermes-tui -p TEXT``): the answer on stdout, activity on stderr (or JSON
lines), Ctrl-C, SIGTERM and SIGHUP as cancels with their own exit codes, and the session's
summary left for later. ``cli`` parses the arguments and calls ``run_headless``."""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
from typing import TYPE_CHECKING, TextIO

from hermes_tui import heap
from hermes_tui.cli_lines import EXIT_ERROR, EXIT_OK, fail, warn
from hermes_tui.config import Config, ConfigError
from hermes_tui.events import (
    Error,
    Event,
    FilesChanged,
    Notice,
    Receipt,
    SkillLearned,
    Subagent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Unsent,
)
from hermes_tui.progress import for_stderr, is_terminal

if TYPE_CHECKING:
    from hermes_tui.agent.loop import AgentLoop
    from hermes_tui.agent.mcp.manager import McpManager
    from hermes_tui.agent.runtime import EventQueue
    from hermes_tui.conversation import ImageRef
    from hermes_tui.warm import WarmHost

# Documented in docs/headless.md ("Exit codes"); scripts rely on them (EXIT_OK and EXIT_ERROR: cli_lines).
EXIT_MAX_STEPS = 3  # the turn reached the step cap (MAX_STEPS model calls) without a final answer
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_SIGHUP = 128 + signal.SIGHUP  # 129: the terminal went away (headless: treated like Ctrl-C)
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143: asked to stop (kill, systemd, docker stop)
HEADLESS_DENIAL = "Denied: headless mode cannot ask for approval. The user must rerun with --yes to allow {name}."


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP in headless mode: handled exactly like Ctrl-C, with its own exit code."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


def exit_code(interrupt: KeyboardInterrupt) -> int:
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
        return fail("the prompt is empty; pass some text to -p (or pipe it with -p -).")
    try:
        config.require_api_key()
    except ConfigError as exc:
        return fail(str(exc))
    from hermes_tui.logs import setup_logging

    setup_logging(config)
    images: list[ImageRef] = []
    if args.image:
        from hermes_tui.agent.attachments import AttachmentError, attach

        try:  # refused before anything is stored or sent
            images = [attach(config.home, given, config.provider_info) for given in args.image]
        except AttachmentError as exc:
            return fail(str(exc))
    from hermes_tui import warm

    # As early as the run is known to go ahead: a helper that must start takes seconds, and the
    # rest of this run's start-up (the notices, the store, the agent) runs meanwhile.
    host = warm.attach(config, asks_at_once=True)  # the turn's model calls, in the warm helper when it runs
    notices = _StartupNotices(config)
    from hermes_tui.agent.approvals import DENY, ApprovalPolicy, PendingCall
    from hermes_tui.agent.runtime import EventQueue, build_agent, headless_surface
    from hermes_tui.memory.store import MemoryStore, StoreError
    from hermes_tui.skills.manager import SkillManager
    notices.say()
    _stop_on_signals()
    out = _Output(sys.stdout, sys.stderr, as_json=args.json)
    events = EventQueue()

    def deny(call: PendingCall) -> str:
        """Nobody can answer: what no lasting rule allows is denied (``--yes``: no policy at all)."""
        # Queued behind the call's own event, so it prints after the call it denies.
        asker = f" ({call.agent})" if call.agent else ""  # which sub-agent's call, when several run
        events.put(Notice(f"{call.name}{asker} denied: rerun with --yes to allow shell commands and file writes."))
        return DENY

    progress = for_stderr(sys.stderr)  # the reindex of an upgrade, a first skills index
    try:
        memory = MemoryStore(config.db_path, on_upgrade=warn,
                             progress=progress)
    except StoreError as exc:
        return fail(str(exc))
    session_id = args.session
    if args.continue_last:
        from hermes_tui.memory.last_session import continued, title_of

        last, problem = continued(memory, config.workspace)
        if last is None:
            memory.close()
            return fail(problem)
        session_id = last.id
        out.notice(f"hermes: continuing session {last.id} ({title_of(last)})")
    approver = None if args.yes else ApprovalPolicy.for_workspace(
        deny, config.home, config.workspace, denial=HEADLESS_DENIAL, on_warning=warn)
    mcp = _start_mcp(config, out)
    try:
        agent = build_agent(config, memory, SkillManager.for_config(config, progress),
                            headless_surface(approver, mcp), session_id=session_id,
                            host=host)
    except ValueError as exc:
        memory.close()
        return fail(str(exc))
    agent.plan = args.plan
    agent.attached.extend(images)
    agent.tools.jobs.listener = lambda line: _job_ended(events, line)
    try:
        if mcp is not None:
            _wait_for_mcp(mcp, out, config.mcp_wait)
        heap.loaded()  # what the run loaded is frozen; the turn's garbage is collected
        code = _drive(agent, text, out, events)
        if running := len(agent.tools.jobs.running()):  # nothing a run started outlives it
            agent.end_jobs()
            out.notice(f"hermes: stopped {running} background job(s) at the end of the run")
        if code not in (EXIT_INTERRUPTED, EXIT_SIGHUP, EXIT_SIGTERM):
            _leave_summary(agent, config, host, out, continued=session_id is not None)
        return code
    finally:
        agent.end_jobs()
        memory.close()
        if mcp is not None:
            mcp.close(timeout=3.0)


class _StartupNotices:
    """What the app says on screen at start, as stderr lines: no sandbox, hooks that wait.

    Made with the run's start: bubblewrap's probe (a process start, ~6 ms) runs while this run
    imports the rest of Hermes; ``say`` waits for it and prints the lines."""

    def __init__(self, config: Config) -> None:
        from hermes_tui.agent.sandbox import unavailable_reason

        self._config = config
        self._probe: threading.Thread | None = None
        if config.sandbox:  # HERMES_SANDBOX=off: nothing to probe
            self._probe = threading.Thread(target=unavailable_reason, name="hermes-bwrap-probe", daemon=True)
            self._probe.start()

    def say(self) -> None:
        from hermes_tui.agent.hooks.config import declared as declared_hooks
        from hermes_tui.agent.sandbox import startup_notice

        if self._probe is not None:
            self._probe.join()  # its answer is cached: ``startup_notice`` reads it
        if notice := startup_notice(self._config):
            warn(notice)
        if waiting := declared_hooks(self._config.home, self._config.workspace).start_line():
            warn(waiting)


def _job_ended(events: EventQueue, line: str | None) -> None:
    """A background job that ends during the turn says so on stderr."""
    if line:
        events.put(Notice(line))


def _start_mcp(config: Config, out: _Output) -> McpManager | None:
    """The declared MCP servers, starting in the background (None when none are declared)."""
    from hermes_tui.agent.mcp.config import declared

    found = declared(config.home, config.workspace)
    if not found.specs and not found.problems:  # the usual case: no asyncio, no manager to import
        return None
    from hermes_tui.agent.mcp.manager import McpManager

    manager = McpManager(config.home, config.workspace)
    manager.subscribe(out.notice)
    manager.start()
    return manager if manager.statuses() else None


def _wait_for_mcp(manager: McpManager, out: _Output, seconds: float) -> None:
    """Before the first request: wait (bounded, ``HERMES_MCP_WAIT``) for the servers; name those still starting."""
    for name in manager.wait_ready(seconds):
        out.notice(f"MCP server {name} is not ready after {seconds:g} s: this turn runs without its tools.")


def _leave_summary(agent: AgentLoop, config: Config, host: WarmHost | None, out: _Output, *,
                   continued: bool) -> None:
    """A one-shot session's summary is written later, not while the user waits: by the warm helper
    once it is idle, else at the next start of the TUI, the web or ``doctor`` (learning/pending.py).
    A continued session (--session) is closed now, helper or not: its summary and the memory
    curator, as every surface closes a session (the calls run in the helper when it is on)."""
    from hermes_tui.learning import pending

    if continued:
        agent.close(timeout=20.0)
        line = pending.tell(agent.memory)
        if line:
            out.notice(line)
        return
    pending.mark(agent.memory, agent.session_id, told=True)
    if host is not None and host.ensure():
        host.hand_over(config, config.db_path)


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
            interrupted = exit_code(exc)
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
        elif isinstance(event, Subagent) and isinstance(event.event, ToolCallStarted):
            inner = event.event
            self._err(f"  ↳ sub-agent {event.session_id} → {inner.name} "
                      f"{json.dumps(inner.arguments, ensure_ascii=False)[:140]}")
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
