"""The full-screen Textual app. Importing it must stay cheap: nothing here imports litellm.

``app`` composes the screen and routes messages; ``actions`` is the one table of keys, footer,
help and palette; ``chat`` (with ``answer``, ``blocks``, ``lists``, ``tables``) draws the
conversation, ``commands``/``command_runner`` the slash commands, ``panes`` and ``*_pane`` the
browsers, ``*_screen`` the modal questions; ``session``, ``stores``, ``usage``, ``undo`` and
``tuidb`` hold the app's state."""
