"""``hermes-tui acp``: an Agent Client Protocol agent over stdio, for editors, on the same core.

* ``server``: the ACP ``Agent`` (initialize, sessions, prompts, cancel) and ``serve``.
* ``session``: one ACP session = one Hermes session; its turns, and its approvals put to the editor.
* ``updates``: Hermes' events and stored messages as ACP session updates (one table).
* ``pipes``: stdin/stdout as the protocol's streams, stray output sent to stderr.
"""
