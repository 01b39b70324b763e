"""The first step of a turn waits for the session's MCP servers, and says so on the stream.

Kimi Code CLI's order (Wire 1.10), on the first turn with MCP servers while they still load:
`StatusUpdate{mcp_status: loading}` → `MCPLoadingBegin` → (wait) → `StatusUpdate{mcp_status}` →
`MCPLoadingEnd`. When they are already up, one `StatusUpdate{mcp_status}` tells the client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..wire.types import MCPLoadingBegin, MCPLoadingEnd, StatusUpdate
from .manager import McpManager
from .status import McpStatus


async def wait_for_servers(
    manager: McpManager, send: Callable[[Any], None], *, timeout: float | None = None
) -> McpStatus:
    """Await the servers (bounded, see `McpManager.wait_ready`); the events go out once per server list."""
    if not manager.configured:
        return manager.status()
    if manager.loading_reported:
        return await manager.wait_ready(timeout)
    manager.loading_reported = True
    manager.start()
    status = manager.status()
    if not status.loading:
        send(StatusUpdate(mcp_status=status.to_wire()))
        return status
    send(StatusUpdate(mcp_status=status.to_wire()))
    send(MCPLoadingBegin())
    try:
        status = await manager.wait_ready(timeout)
        send(StatusUpdate(mcp_status=status.to_wire()))
    finally:
        send(MCPLoadingEnd())  # a cancelled turn still closes what it opened
    return status
