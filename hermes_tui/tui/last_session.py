"""At the start of the app: ``-c`` resumes this workspace's last session; otherwise an empty chat
names that session in one line, so it is one command away (``/resume N``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.memory.last_session import title_of
from hermes_tui.memory.store import SessionInfo
from hermes_tui.tui.format import short_path
from hermes_tui.tui.workers import in_thread

if TYPE_CHECKING:
    from hermes_tui.tui.app import HermesApp


def hint(info: SessionInfo) -> str:
    """The line an empty start shows (``title_of`` makes the stored title printable)."""
    title = title_of(info)
    named = f" “{title}”" if title else ""
    return f"Last session here: #{info.id}{named} · /resume {info.id} or hermes-tui -c"


async def at_start(app: HermesApp, *, continue_last: bool) -> None:
    info = await in_thread(app, app.memory.last_session, str(app.config.workspace))
    if continue_last:
        if info is None:
            await app.chat.add_notice(f"No earlier session in {short_path(app.config.workspace)} to continue: "
                                      "your first message starts a new one.")
        else:
            await app.sessions.resume(info.id)
        return
    if info is not None and app.session.session_id is None:  # nothing was sent meanwhile
        await app.chat.add_notice(hint(info))
