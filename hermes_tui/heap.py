"""Python's collector while Hermes loads: paused while modules load, what they made frozen after.

Loading makes objects by the ten thousand (Hermes' classes, functions and tables; litellm's by
the hundred thousand) that live as long as the process. The collections their allocations
trigger only walk them again and again; a frozen heap is never walked at all. Two kinds of pause
share the collector, so this module alone turns it off and on:

* the program's start: ``hermes-tui`` pauses before its first import (``program.main``) and each
  way it goes on resumes once its start is done (``loaded``): a ``-p`` run before its turn, the
  app once its first frame is on screen, every other command at once (~10 ms of a warm ``-p``
  run's ~250, ~14 ms of the app's first frame: bench/tui_startup.py);
* a large import on any thread (``importing``: litellm's, ``llm._lib``), which may overlap it.

The collector runs again when neither holds it, if it ran before the first pause: code that
calls Hermes in its own process (tests, another program) keeps its collector as it was.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_program = False  # between ``pause`` and ``loaded``
_imports = 0  # ``importing`` blocks running
_was_on = True  # whether the collector ran before the first of them


def _hold() -> None:
    global _was_on
    if not _program and not _imports:
        _was_on = gc.isenabled()
    gc.disable()


def _release() -> None:
    gc.freeze()
    if not _program and not _imports and _was_on:
        gc.enable()


def pause() -> None:
    """The program starts: no collection until ``loaded``."""
    global _program
    with _lock:
        if not _program:
            _hold()
            _program = True


def loaded() -> None:
    """The program's start is done: freeze what exists and collect again (nothing unless ``pause``
    ran)."""
    global _program
    with _lock:
        if _program:
            _program = False
            _release()


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """No collection while the block imports; what it made is frozen after."""
    global _imports
    with _lock:
        _hold()
        _imports += 1
    try:
        yield
    finally:
        with _lock:
            _imports -= 1
            _release()
