"""The MCP bridge's two tool names, and the argument a one-line display of a call to each shows.

Apart from ``bridge``, which imports the ``mcp`` SDK: the chat and the web's transcript name a
stored call (``tools.summary_argument``) without connecting to any server.
"""

SEARCH = "mcp_search"
CALL = "mcp_call"
SUMMARY_ARGS = {SEARCH: "query", CALL: "name"}
