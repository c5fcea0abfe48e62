"""Messages the panes post to the app, so panes never reach into the chat or screens directly."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message


class UseSkill(Message):
    """Insert "use the skill <name>: " into the chat prompt and switch to chat."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class ResumeSession(Message):
    """Resume the given session in the chat."""

    def __init__(self, session_id: int) -> None:
        super().__init__()
        self.session_id = session_id


class OpenTranscript(Message):
    """Push the transcript screen for a session, optionally scrolled to one message."""

    def __init__(self, session_id: int, message_id: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.message_id = message_id


class ForgetSession(Message):
    """Ask, then delete a session for good (Sessions pane ``x``)."""

    def __init__(self, session_id: int) -> None:
        super().__init__()
        self.session_id = session_id


class EditFile(Message):
    """Suspend the app and open $EDITOR on a file Hermes keeps (a memory file); then ``refresh`` the pane."""

    def __init__(self, path: Path, pane: str) -> None:
        super().__init__()
        self.path = path
        self.pane = pane


class EditSkill(Message):
    """Suspend the app, open $EDITOR on the skill's SKILL.md, then reload the skills."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class McpLine(Message):
    """An MCP server failed or needs the user (posted from the MCP manager's thread)."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class JobsChanged(Message):
    """A background job started (``line`` None) or ended (its one-line notice); posted from its thread."""

    def __init__(self, line: str | None) -> None:
        super().__init__()
        self.line = line
