"""MCP client: servers declared in mcp.json / .mcp.json, their tools offered to the model.

``config`` reads the declarations and the user's decisions, ``client`` holds one server's
session (the ``mcp`` SDK), ``manager`` runs them all on one background event loop with a sync
facade, ``bridge`` turns their tools into ``Tool`` records (``names``: its two tools' names, light).
"""
