"""``tui/workers``: the TUI's one way to do I/O off the app thread. With ``off_thread`` a job's
result or one readable line comes back on the app thread (the error table decides which line);
``in_thread`` is awaited and raises the job's own exception."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from textual.app import App
from textual.worker import WorkerCancelled

from hermes_tui.skills.schema import SkillError
from hermes_tui.tui.workers import in_thread, off_thread


def test_results_and_errors_come_back_on_the_app_thread_as_one_line() -> None:
    seen: list[tuple[object, str | None, bool]] = []

    def broken() -> None:
        raise KeyError("row")

    def refused() -> None:
        raise SkillError("a skill named deploy already exists")

    def full_disk() -> None:
        raise OSError(28, "No space left on device")

    async def main() -> None:
        app = App[None]()
        async with app.run_test() as pilot:
            main_thread = threading.get_ident()

            def then(result: object, error: str | None) -> None:
                seen.append((result, error, threading.get_ident() == main_thread))

            for job in (lambda: 42, refused, full_disk, broken):
                await off_thread(app, job, then, what="a test job", group="test").wait()
            await pilot.pause()

    asyncio.run(main())
    assert seen == [
        (42, None, True),
        (None, "a skill named deploy already exists", True),  # expected: its own words
        (None, "[Errno 28] No space left on device", True),
        (None, "KeyError: 'row'", True),  # a bug: named by its type (the log has the traceback)
    ]


def test_a_newer_job_of_an_exclusive_group_drops_the_older_ones_result() -> None:
    seen: list[object] = []
    started, release, returned = threading.Event(), threading.Event(), threading.Event()

    async def main() -> None:
        app = App[None]()
        async with app.run_test() as pilot:
            def old_job() -> str:
                started.set()
                release.wait(30)
                returned.set()
                return "old"

            old = off_thread(app, old_job, lambda r, e: seen.append(r), what="old", group="search", exclusive=True)
            assert await asyncio.to_thread(started.wait, 30)  # running when the newer one comes
            new = off_thread(app, lambda: "new", lambda r, e: seen.append(r), what="new", group="search",
                             exclusive=True)
            await new.wait()
            release.set()
            with pytest.raises(WorkerCancelled):  # its result is dropped, not shown over the newer one
                await old.wait()
            assert await asyncio.to_thread(returned.wait, 30)
            await pilot.pause()
            await pilot.pause()

    asyncio.run(main())
    assert seen == ["new"]


def test_in_thread_returns_or_raises_the_jobs_own_exception_off_the_app_thread() -> None:
    who = contextvars.ContextVar("who", default="nobody")
    seen: list[object] = []

    def job(a: int, *, b: int) -> tuple[int, bool, str]:
        return a + b, threading.get_ident() == main_thread, who.get()

    def missing() -> None:
        raise KeyError("no session 7")

    async def main() -> None:
        app = App[None]()
        async with app.run_test():
            who.set("the caller")
            seen.append(await in_thread(app, job, 1, b=2))
            with pytest.raises(KeyError, match="no session 7"):  # itself, not a WorkerFailed
                await in_thread(app, missing)
            seen.append(app.is_running)  # a failed job never ends the app

    main_thread = threading.get_ident()
    asyncio.run(main())
    assert seen == [(3, False, "the caller"), True]  # on a worker thread, in the caller's context


def test_an_app_that_exits_while_in_thread_waits_cancels_the_waiting_task_not_the_quit() -> None:
    """Quitting never waits for a blocked store read: the task awaiting it is cancelled."""
    outcome: list[str] = []
    job_started, release = threading.Event(), threading.Event()

    def blocked() -> None:
        job_started.set()
        release.wait(60)

    class Quitting(App[None]):
        def on_mount(self) -> None:
            self.run_worker(self.flow(), group="flow")

        async def flow(self) -> None:
            try:
                await in_thread(self, blocked)
                outcome.append("returned")
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise

    async def main() -> None:
        app = Quitting()
        async with app.run_test() as pilot:
            assert await asyncio.to_thread(job_started.wait, 30)
            app.exit()
            await pilot.pause()
        outcome.append("exited" if not release.is_set() else "exited late")
        release.set()  # the job's thread ends too (asyncio.run joins it on the way out)

    try:
        asyncio.run(main())
    finally:
        release.set()
    assert outcome == ["cancelled", "exited"]
