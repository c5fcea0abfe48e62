"""DismissOnce: a screen that closes once, however many answers reach it.

Textual's ``Screen.dismiss`` calls the result callback and pops whatever screen is on top. Keys typed
faster than a screen closes (a paste, a burst of raw bytes, a double click) still reach it while its
pop is on the way, so a second Enter answered again and popped the screen underneath: the chat itself,
which ended the app with "Can't pop screen". Every screen that dismisses itself mixes this in first.
"""

from __future__ import annotations

from typing import Any

from textual.await_complete import AwaitComplete


class DismissOnce:
    """Mixed in before ``Screen``/``ModalScreen``: the first ``dismiss`` answers, later ones do nothing."""

    _dismissed = False

    def dismiss(self, result: Any = None) -> AwaitComplete:
        if self._dismissed:
            return AwaitComplete.nothing()
        self._dismissed = True
        return super().dismiss(result)  # type: ignore[misc]  # the Screen this is mixed into has dismiss
