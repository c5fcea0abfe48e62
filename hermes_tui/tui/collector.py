"""When Python's garbage collector may pause the app.

A collection stops every thread for as long as it takes to walk the objects of the generations it
collects. After litellm's import, ``tune()`` freezes what exists (a huge, long-lived heap nothing
needs to walk again). Then, while a turn runs, only the youngest generation is collected: often,
about 5 ms each. The older generations hold what Textual keeps of the conversation on screen (its
rendered lines and their caches), which takes hundreds of ms to walk once an 80k-character answer
is showing; they are collected after the turn, once the user has not typed (or moved the mouse)
for QUIET seconds: a key pressed during that pause would wait for it.
bench/stream_render.py measures both.
"""

from __future__ import annotations

import gc
import threading

YOUNG = 10_000  # allocations between collections of the youngest generation (~5 ms each)
IDLE = (YOUNG, 100, 100)
TURN = (YOUNG, 1_000_000_000, 100)  # the older generations wait for the end of the turn
QUIET = 1.0  # seconds without input before the collection after a turn

_lock = threading.Lock()
_tuned = False
_turn = False
_last_input = float("-inf")  # the app's clock at the last key or mouse event
after_turns = 0  # collections done after a turn (what tests and the debug log look at)


def _apply() -> None:
    if _tuned:
        gc.set_threshold(*(TURN if _turn else IDLE))


def tune() -> None:
    """Any thread, once litellm is imported: freeze the heap and pace collections from now on."""
    global _tuned
    with _lock:
        gc.freeze()
        _tuned = True
        _apply()


def turn_started() -> None:
    global _turn
    with _lock:
        _turn = True
        _apply()


def turn_ended() -> None:
    global _turn
    with _lock:
        _turn = False
        _apply()


def input_seen(now: float) -> None:
    """The app's thread: a key or mouse event arrived at ``now`` (the app's clock)."""
    global _last_input
    _last_input = now


def quiet_left(now: float) -> float:
    """Seconds until the user will have been quiet for QUIET seconds (0: they have)."""
    return max(0.0, _last_input + QUIET - now)


def collect_after_turn() -> bool:
    """Collect what the turn left behind (call once its last words are on screen); nothing if
    the next turn has started meanwhile (a queued message)."""
    global after_turns
    with _lock:
        if not _tuned or _turn:
            return False
        gc.collect(1)
        after_turns += 1
        return True
