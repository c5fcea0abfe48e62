"""The one runner of a surface's background work (``hermes_tui.background``): real threads, an
injected clock, no sleeps."""

from __future__ import annotations

import logging
import threading

import pytest

from hermes_tui.background import Background
from hermes_tui.clock import wait_for


def test_shutdown_waits_for_kept_jobs_only_and_only_until_its_deadline(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    background = Background(lambda: now[0])
    summary_may_end, warm_up_may_end = threading.Event(), threading.Event()
    background.start("hermes-close-1", summary_may_end.wait, keep=True)
    warm_up = background.start("hermes-markdown", warm_up_may_end.wait)  # never waited for at exit
    assert background.running() == ["hermes-close-1"]

    now[0] = 10.0
    assert background.shutdown(deadline=5.0) == ["hermes-close-1"]  # past the deadline: no wait at all
    summary_may_end.set()
    assert background.shutdown(deadline=20.0) == []  # waited for it to end
    assert warm_up.is_alive()
    warm_up_may_end.set()
    warm_up.join()

    with caplog.at_level(logging.ERROR, logger="hermes_tui.background"):
        background.start("hermes-usage", lambda: 1 / 0).join()  # a failure is logged, never raised
    assert "hermes-usage failed" in caplog.text and "ZeroDivisionError" in caplog.text


def test_shutdown_cancels_cancellable_jobs_and_waits_on_the_injected_clock() -> None:
    now = [0.0]
    background = Background(lambda: now[0])
    stop, never = threading.Event(), threading.Event()
    turn = background.start("hermes-turn-1", stop.wait, cancel=stop.set)
    stuck = background.start("hermes-close-2", never.wait, keep=True)
    assert background.running() == ["hermes-turn-1", "hermes-close-2"]

    def move_the_clock() -> None:  # another thread moves time past the deadline once the turn ended
        turn.join()
        now[0] = 100.0

    mover = threading.Thread(target=move_the_clock)
    mover.start()
    assert background.shutdown(deadline=50.0) == ["hermes-close-2"]  # cancelled the turn; gave up on the stuck one
    assert not turn.is_alive() and stuck.is_alive()
    mover.join()
    never.set()
    stuck.join()


def test_wait_cancels_nothing_and_gives_up_at_its_deadline() -> None:
    """``wait`` (the web's drain) waits for the kept and cancellable jobs as they are; only
    ``shutdown`` cancels."""
    now = [0.0]
    background = Background(lambda: now[0])
    stop, summary_may_end = threading.Event(), threading.Event()
    turn = background.start("hermes-turn-1", stop.wait, cancel=stop.set)
    summary = background.start("hermes-web-summary-1", summary_may_end.wait, keep=True)

    now[0] = 10.0
    assert background.wait(deadline=5.0) == ["hermes-turn-1", "hermes-web-summary-1"]
    assert not stop.is_set()  # the turn was not cancelled
    summary_may_end.set()
    summary.join()
    assert background.wait(deadline=5.0) == ["hermes-turn-1"]
    stop.set()
    assert background.wait(deadline=20.0) == [] and not turn.is_alive()


def test_wait_for_counts_its_seconds_on_the_injected_clock() -> None:
    now = [0.0]
    never, set_soon = threading.Event(), threading.Event()

    def move() -> None:
        now[0] = 59.0
        set_soon.set()  # not yet at the deadline: the wait sees the event
    mover = threading.Timer(0.01, move)
    mover.start()
    assert wait_for(set_soon, 60.0, lambda: now[0]) is True
    mover.join()
    now[0] = 0.0
    threading.Timer(0.01, lambda: now.__setitem__(0, 3_600.0)).start()
    assert wait_for(never, 600.0, lambda: now[0]) is False  # an hour passed on the clock: given up
