"""The agent: ``loop`` runs a turn (model call, tools, repeat), ``runtime`` builds it per surface and
runs it off the caller's thread; ``toolkit`` declares a tool's record, ``tools`` and the other tool
modules (edit, reading, search, shell, memory_tools, skill_tools, mcp/) hold the records, ``paths``
and ``sandbox`` keep them inside the workspace; ``context``, ``history``, ``fixed_prompt`` and
``instructions`` make what is sent; ``checkpoints`` and ``permissions`` remember for the user."""
