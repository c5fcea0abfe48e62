"""The full-screen Textual app. Importing it must stay cheap: nothing here imports litellm.

``app`` composes the screen and routes messages (``startup``: after the first frame,
``session_controller``: resume, /new, forget, undo, retry; ``editor``); ``actions`` is the one table of keys, footer, help
and palette; ``chat`` (with ``conversation_view``, ``answer``, ``blocks``, ``lists``,
``tables``) draws the conversation, ``commands``/``command_runner`` the slash commands, ``panes``
and ``*_pane`` the browsers (``skill_preview``: the Skills pane's preview), ``*_screen`` the modal questions; ``session`` and ``stores`` hold the app's state
(usage, undo, exports and forgetting are the core's: ``hermes_tui/memory``)."""
