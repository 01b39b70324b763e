"""A session's MCP servers as a core `TurnService`: what the front ends attach to an AgentCore.

`attach(core, resolved)` builds the manager, keeps the session's toolset in step with it and adds
it to `core.services`, so every turn waits for servers still connecting (with the Wire loading
events) and closing the session closes them. Sessions without servers get nothing: no manager,
nothing of the SDK imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.agent_core import AgentCore
from .config import McpClientSettings, ResolvedServers
from .events import wait_for_servers
from .manager import McpManager
from .status import McpStatus, ServerStatus


class McpService:
    def __init__(self, manager: McpManager) -> None:
        self.manager = manager
        self._announced: dict[str, tuple[str, str | None]] = {}  # server -> (status, error) last told

    async def before_turn(self, send: Callable[[Any], None]) -> None:
        await wait_for_servers(self.manager, send)

    async def aclose(self) -> None:
        await self.manager.aclose()

    def start(self) -> None:
        """Connect in the background now (the session just opened); idempotent."""
        self.manager.start()

    async def update(self, resolved: ResolvedServers) -> None:
        """The session was opened again with another server list."""
        await self.manager.update(resolved.servers, resolved.problems)

    def status(self) -> McpStatus:
        return self.manager.status()

    def unannounced(self) -> list[str]:
        """One line per server whose settled state (connected / failed) the user was not told yet."""
        lines = []
        for server in self.manager.status().servers:
            if server.status not in ("connected", "failed"):
                continue
            state = (server.status, server.error)
            if self._announced.get(server.name) != state:
                self._announced[server.name] = state
                lines.append(server.describe())
        return lines

    def on_change(self, callback: Callable[[McpStatus, ServerStatus | None], None]) -> Callable[[], None]:
        return self.manager.on_change(callback)


def settings_of(core: AgentCore) -> McpClientSettings:
    """`[mcp.client]` of the session's config.toml (validated: raises McpConfigError)."""
    return McpClientSettings.from_config((core.config.model_extra or {}).get("mcp"))


def attach(core: AgentCore, resolved: ResolvedServers) -> McpService | None:
    """Give `core` its MCP servers; None (and nothing done) when there are none to show."""
    if not resolved.servers and not resolved.problems:
        return None

    def capabilities() -> frozenset[str]:
        model = core.resolved_model()
        return frozenset(model.capabilities) if model is not None else frozenset()

    manager = McpManager(
        resolved.servers,
        problems=resolved.problems,
        settings=settings_of(core),
        work_dir=core.work_dir,
        capabilities=capabilities,
    )
    manager.bind_toolset(core.toolset)
    service = McpService(manager)
    core.services.append(service)
    return service

