"""The MCP servers of one session: start them in the background, wait for them (bounded), keep
the session's tool list and status in step with them, and close them all.

Servers are never shared between sessions: twenty sessions with the same stdio entry start twenty
processes, each dying with its own session. A manager with no servers imports nothing of the SDK
and is ready at once.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Protocol

from ..tools.base import MAX_OUTPUT_CHARS
from ..tools.external import SchemaTool
from .config import McpClientSettings, McpConfigError, McpServerConfig
from .connection import McpConnection
from .naming import assign_names
from .status import McpStatus, ServerStatus
from .tool import McpTool

log = logging.getLogger(__name__)

ChangeCallback = Callable[[McpStatus, ServerStatus | None], None]
_open: weakref.WeakSet[McpManager] = weakref.WeakSet()


class ToolsetLike(Protocol):
    """What the manager needs of `core.toolset.Toolset` (it must not import the core)."""

    def reserved_names(self) -> frozenset[str]: ...

    def set_mcp_tools(self, tools: Sequence[SchemaTool]) -> None: ...


class McpManager:
    def __init__(
        self,
        servers: Sequence[McpServerConfig] = (),
        *,
        problems: Sequence[McpConfigError] = (),
        settings: McpClientSettings | None = None,
        work_dir: Path | None = None,
        capabilities: Callable[[], Collection[str]] = lambda: (),
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        """`servers` from `config.resolve_servers`; `problems` (bad mcp.json entries) show as failed.

        `capabilities` returns the current model's capabilities (`image_in` lets images through);
        `work_dir` is the stdio servers' working directory and the root they are offered.
        """
        self.settings = settings or McpClientSettings()
        self.work_dir = work_dir
        self.capabilities = capabilities
        self.max_output_chars = max_output_chars
        self.loading_reported = False  # see events.wait_for_servers
        self._connections: dict[str, McpConnection] = {}
        self._problems: list[McpConfigError] = list(problems)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._callbacks: list[ChangeCallback] = []
        self._toolset: ToolsetLike | None = None
        self._tool_cache: dict[tuple[str, str, str], McpTool] = {}
        self._started = False
        self._closed = False
        for cfg in servers:
            self._connections[cfg.name] = self._connection(cfg)
        _open.add(self)

    def _connection(self, cfg: McpServerConfig) -> McpConnection:
        return McpConnection(
            cfg,
            connect_timeout=self.settings.connect_timeout,
            call_timeout=self.settings.tool_call_timeout,
            cwd=self.work_dir,
            on_change=self._changed,
            max_message_bytes=self.settings.max_message_bytes,
        )

    # ------------------------------------------------------------------ lifecycle

    @property
    def configs(self) -> list[McpServerConfig]:
        return [c.config for c in self._connections.values()]

    @property
    def configured(self) -> bool:
        """Anything to show: servers, or mcp.json entries that could not be used."""
        return bool(self._connections or self._problems)

    def start(self) -> None:
        """Connect every server in the background (call from the event loop; idempotent)."""
        if self._started or self._closed:
            return
        self._started = True
        for name, conn in self._connections.items():
            self._spawn(name, conn)

    def _spawn(self, name: str, conn: McpConnection) -> None:
        self._tasks[name] = conn.start()

    async def wait_ready(self, timeout: float | None = None) -> McpStatus:
        """Return once no server is still connecting, or after `timeout` seconds.

        The default bound is the connect timeout plus a second, which no server attempt outlives.
        Never raises (but for cancellation); a late server's tools arrive through `on_change`.
        """
        self.start()
        pending = [t for t in self._tasks.values() if not t.done()]
        if pending:
            bound = self.settings.connect_timeout + 1.0 if timeout is None else timeout
            await asyncio.wait(pending, timeout=bound)
        return self.status()

    async def update(
        self, servers: Sequence[McpServerConfig], problems: Sequence[McpConfigError] = ()
    ) -> bool:
        """A session reopened with another server list: close what went or changed, start what is new.

        An entry equal to the running one (same transport, command, env, URL, headers) keeps its
        connection. Returns whether anything changed.
        """
        wanted = {cfg.name: cfg for cfg in servers}
        changed = [n for n, c in self._connections.items() if n not in wanted or wanted[n] != c.config]
        added = [n for n in wanted if n not in self._connections or n in changed]
        problems_changed = [str(p) for p in problems] != [str(p) for p in self._problems]
        if not changed and not added and not problems_changed:
            return False
        closing = [self._connections.pop(n) for n in changed]
        for name in changed:
            self._tasks.pop(name, None)
        await asyncio.gather(*(c.aclose() for c in closing))
        order = {name: i for i, name in enumerate(wanted)}
        for name in added:
            self._connections[name] = self._connection(wanted[name])
            if self._started:
                self._spawn(name, self._connections[name])
        self._connections = dict(sorted(self._connections.items(), key=lambda kv: order.get(kv[0], 0)))
        self._problems = list(problems)
        self.loading_reported = False
        log.info("MCP servers updated: closed %s, started %s", changed or "none", added or "none")
        self._changed(None)
        return True

    async def aclose(self) -> None:
        """Close every server (stdio: the whole process group). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(*(c.aclose() for c in self._connections.values()), return_exceptions=True)
        _open.discard(self)

    # ------------------------------------------------------------------ tools and status

    def tools(self, reserved: Collection[str] = ()) -> list[McpTool]:
        """Model tools for every tool of every server that has connected, named clash-free."""
        offers = {
            name: [t.name for t in conn.tools]
            for name, conn in self._connections.items()
            if conn.ever_connected
        }
        names = assign_names(offers, reserved)
        tools: list[McpTool] = []
        cache: dict[tuple[str, str, str], McpTool] = {}
        for server, conn in self._connections.items():
            if not conn.ever_connected:
                continue
            for remote in conn.tools:
                key = (server, remote.name, names[(server, remote.name)])
                tool = self._tool_cache.get(key)
                if tool is None or tool.remote != remote:
                    tool = McpTool(
                        key[2],
                        remote,
                        conn,
                        capabilities=self.capabilities,
                        secrets=conn.config.secrets(),
                        max_output_chars=self.max_output_chars,
                    )
                cache[key] = tool
                tools.append(tool)
        self._tool_cache = cache
        return tools

    def bind_toolset(self, toolset: ToolsetLike) -> None:
        """Keep `toolset`'s MCP tools in step with the servers from now on (installs them now)."""
        self._toolset = toolset
        self._install()

    def _install(self) -> None:
        if self._toolset is not None:
            self._toolset.set_mcp_tools(self.tools(self._toolset.reserved_names()))

    def status(self) -> McpStatus:
        reserved = self._toolset.reserved_names() if self._toolset is not None else frozenset()
        by_server: dict[str, list[str]] = {}
        for tool in self.tools(reserved):
            by_server.setdefault(tool.server.name, []).append(tool.name)
        servers = [conn.status(tuple(by_server.get(name, ()))) for name, conn in self._connections.items()]
        servers.extend(
            ServerStatus(name=p.entry or p.source, status="failed", error=str(p), origin=p.source)
            for p in self._problems
        )
        return McpStatus(tuple(servers))

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call `callback(status, changed)` on every change; `changed` is the server that changed
        (None when the list itself changed). Returns a function that unsubscribes."""
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe

    def _changed(self, conn: McpConnection | None) -> None:
        if self._closed:
            return
        self._install()
        status = self.status()
        changed = status.get(conn.name) if conn is not None else None
        for callback in list(self._callbacks):
            try:
                callback(status, changed)
            except Exception:
                log.exception("MCP change callback failed")


async def close_all() -> None:
    """Close every manager still open (process shutdown). Stdio groups left over die at exit anyway."""
    await asyncio.gather(*(m.aclose() for m in list(_open)), return_exceptions=True)
