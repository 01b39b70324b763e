"""MCP client: the servers of one session, their tools as model tools, `kimi mcp` commands.

Nothing here imports the `mcp` SDK at module level. A session without MCP servers never loads it;
only `connection.py` does, inside the functions that open a transport. Import the submodules
directly (`kimi_acp.mcp.config`, `kimi_acp.mcp.manager`, ...): this file stays empty on purpose so
that importing the package costs nothing.
"""
