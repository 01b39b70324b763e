"""An MCP server's tool as one of the session's model tools.

It asks for approval with action `mcp:<name>` (sender: the tool's name), so yolo and
"approve for this session" apply as for any tool, then calls the server and maps the result.
Whatever goes wrong (refused connection, timeout, dead server, an `isError` result) comes back as
a tool error for the model, never as an exception out of the turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

from ..permissions.scope import action_scope
from ..tools.base import MAX_OUTPUT_CHARS, ToolContext, tool_error
from ..tools.external import SchemaTool
from ..util.visible_text import escapes_note, name_text
from ..wire.types import BriefDisplayBlock, ToolReturnValue
from .config import redact
from .connection import McpCallError, RemoteTool
from .results import convert_result

log = logging.getLogger(__name__)

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ToolCaller(Protocol):
    name: str

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> Any: ...


def mcp_description(server: str, description: str) -> str:
    """Kimi Code CLI's wording, so the model reads the same thing in both programs."""
    head = f"This is an MCP (Model Context Protocol) tool from MCP server `{server}`."
    return f"{head}\n\n{description}" if description else head


class McpTool(SchemaTool):
    def __init__(
        self,
        name: str,
        remote: RemoteTool,
        server: ToolCaller,
        *,
        capabilities: Callable[[], Collection[str]] = lambda: (),
        secrets: Collection[str] = (),
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        schema = remote.input_schema or EMPTY_SCHEMA
        super().__init__(name, mcp_description(server.name, remote.description), schema, lenient=True)
        self.remote = remote
        self.server = server
        self.action = f"mcp:{name}"
        server_name, tool_name = name_text(server.name), name_text(remote.name)  # one line, no backtick, bounded
        self.title = f"{server_name.text}: {tool_name.text}"  # what an IDE's tool card shows
        # What the approval card and its "Always allow" option say: the server first, so a tool's
        # name cannot claim to be another server's. The server's name comes from the user's config.
        self.card_label = f"MCP server `{server_name.text}`: tool `{tool_name.text}`"
        self._odd_name = server_name.escaped or tool_name.escaped
        self._capabilities = capabilities
        self._secrets = tuple(secrets)
        self._max_output_chars = max_output_chars

    async def run(self, arguments_json: str, ctx: ToolContext) -> ToolReturnValue:
        await ctx.approve(
            action=self.action,
            description=f"Call {self.card_label}.",
            display=[BriefDisplayBlock(text=escapes_note("request"))] if self._odd_name else [],
            scope=action_scope(self.action, self.card_label, rule_name=f"mcp:{self.server.name}:{self.remote.name}"),
        )
        arguments = json.loads(arguments_json or "{}", strict=False)
        try:
            result = await self.server.call_tool(self.remote.name, arguments)
        except asyncio.CancelledError:
            raise
        except McpCallError as exc:
            return self._failure(str(exc))
        except Exception as exc:  # the SDK's own errors (e.g. a result that breaks its schema)
            return self._failure(f"{type(exc).__name__}: {exc}")
        try:
            return convert_result(
                result, capabilities=set(self._capabilities()), max_chars=self._max_output_chars
            )
        except Exception as exc:
            return self._failure(f"unreadable result: {type(exc).__name__}: {exc}")

    def _failure(self, reason: str) -> ToolReturnValue:
        reason = redact(reason, self._secrets)
        log.warning("MCP tool %s failed: %s", self.name, reason)  # no traceback: it could hold secrets
        return tool_error(
            f"MCP tool `{self.remote.name}` of MCP server `{self.server.name}` failed: {reason}",
            brief="MCP error",
        )
