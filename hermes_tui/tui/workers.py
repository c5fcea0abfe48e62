"""The TUI's one way to read or change its stores off the app thread: Textual thread workers.

``off_thread`` runs a job on a thread worker and hands its result, or one readable line of what
went wrong, back on the app thread: the job never touches a widget, and the widget's callback
never runs on the worker. Which failures are the user's to read and which are bugs is declared
once, in ``expected_errors``. ``in_thread`` is the same worker for a coroutine that awaits the
result and handles the job's own exceptions where its flow needs them.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.worker import WorkerCancelled, WorkerFailed, get_current_worker

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.worker import Worker

log = logging.getLogger(__name__)

T = TypeVar("T")


def expected_errors() -> tuple[type[Exception], ...]:
    """Failures a user can meet and act on (a full disk, a locked or damaged file, a refused skill
    or fact change): shown as their own message, logged without a traceback. Anything else is a
    bug: logged with its traceback, shown with its type. (Imported here, not at start-up.)"""
    import sqlite3

    from hermes_tui.memory.facts import FactError
    from hermes_tui.skills.schema import SkillError

    return (OSError, sqlite3.Error, SkillError, FactError)


def describe(exc: Exception, what: str) -> str:
    """One line for ``exc`` raised while ``what`` (which is logged with it)."""
    if isinstance(exc, expected_errors()):
        log.warning("%s failed: %s", what, exc)
        return str(exc) or type(exc).__name__
    log.exception("%s failed", what)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def off_thread(owner: DOMNode, job: Callable[[], T], then: Callable[[T | None, str | None], object], *,
               what: str, group: str, exclusive: bool = False) -> Worker[None]:
    """Run ``job`` on a thread worker of ``owner``; then, on the app thread, ``then(result, None)``
    or ``then(None, error line)``. ``exclusive``: a newer job of the group cancels this one, whose
    result is then dropped."""

    def run() -> None:
        worker = get_current_worker()
        try:
            result, error = job(), None
        except Exception as exc:  # noqa: BLE001 - the table above says how it is told
            result, error = None, describe(exc, what)
        if not worker.is_cancelled:
            owner.app.call_from_thread(then, result, error)

    return owner.run_worker(run, thread=True, group=group, exclusive=exclusive)


class WorkerOwner(Protocol):
    """What can run a worker: a widget, a screen, the app, or the app seen as ``Controls``."""

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...


async def in_thread(owner: WorkerOwner, job: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``job(*args, **kwargs)`` on a thread worker of ``owner``, awaited: its result, or the job's
    own exception raised here. A worker cancelled (the app exits) cancels the awaiting task too.
    The job runs in a copy of the caller's context, as ``asyncio.to_thread`` would run it."""
    context = contextvars.copy_context()
    worker = owner.run_worker(functools.partial(context.run, job, *args, **kwargs), thread=True,
                              exit_on_error=False, group="in-thread",
                              description=getattr(job, "__qualname__", "job"))
    try:
        return await worker.wait()
    except WorkerFailed as failed:
        raise failed.error from None
    except WorkerCancelled:
        raise asyncio.CancelledError from None
