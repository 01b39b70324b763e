"""What the front ends show about a session's MCP servers: one immutable snapshot.

`McpStatus.to_wire()` is exactly Wire 1.10's `StatusUpdate.mcp_status` (Kimi's
`MCPStatusSnapshot`): `{loading, connected, total, tools, servers: [{name, status, tools}]}`.
The error of a failed server is not part of that shape; it is here for the ACP message and logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ServerState = Literal["pending", "connecting", "connected", "failed"]


@dataclass(frozen=True)
class ServerStatus:
    name: str
    status: ServerState
    tools: tuple[str, ...] = ()  # the names the model sees
    error: str | None = None  # redacted: never a header or env value
    transport: str = ""
    origin: str = ""  # which source the entry came from

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "tools": list(self.tools)}

    def describe(self) -> str:
        """One human line, e.g. for an ACP agent message."""
        if self.status == "connected":
            count = len(self.tools)
            listed = f": {', '.join(self.tools)}" if self.tools else ""
            return f"MCP server `{self.name}` connected ({count} tool{'s' if count != 1 else ''}{listed})"
        if self.status == "failed":
            return f"MCP server `{self.name}` failed: {self.error or 'unknown error'}"
        return f"MCP server `{self.name}` is connecting…"


@dataclass(frozen=True)
class McpStatus:
    servers: tuple[ServerStatus, ...] = ()

    @property
    def loading(self) -> bool:
        return any(s.status in ("pending", "connecting") for s in self.servers)

    @property
    def connected(self) -> int:
        return sum(1 for s in self.servers if s.status == "connected")

    @property
    def total(self) -> int:
        return len(self.servers)

    @property
    def tool_count(self) -> int:
        return sum(len(s.tools) for s in self.servers if s.status == "connected")

    def get(self, name: str) -> ServerStatus | None:
        return next((s for s in self.servers if s.name == name), None)

    def to_wire(self) -> dict[str, Any]:
        """`StatusUpdate.mcp_status` of the Wire protocol."""
        return {
            "loading": self.loading,
            "connected": self.connected,
            "total": self.total,
            "tools": self.tool_count,
            "servers": [s.to_wire() for s in self.servers],
        }

    def describe(self) -> str:
        """Several lines, one per server (empty when there are no servers)."""
        return "\n".join(s.describe() for s in self.servers)
