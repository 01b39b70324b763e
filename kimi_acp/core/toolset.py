"""The tools of one session and the dispatch of one tool call: parse, validate, run, report.

Whatever the model sends, the outcome is a ToolReturnValue the model can act on: unknown tool,
unparsable or invalid arguments, a refused approval and a crashing tool all become precise tool
errors, never an exception out of the turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..llm.types import ToolSpec
from ..tools.base import Tool, ToolContext, ToolRejectedError, tool_error
from ..tools.external import ExternalTool, SchemaTool
from ..wire.serde import describe_validation_error
from ..wire.types import ToolCall, ToolReturnValue

log = logging.getLogger(__name__)

REJECTED_MESSAGE = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to tell you how "
    "to proceed."
)
CANCELLED_MESSAGE = "The tool call was cancelled by the user before it finished."
# Tools that change files are refused while plan mode is on.
PLAN_MODE_BLOCKED = frozenset({"WriteFile", "StrReplaceFile"})


@dataclass
class ToolOutcome:
    call: ToolCall
    result: ToolReturnValue
    rejected: bool = False
    feedback: str | None = None


def rejection_result(feedback: str | None) -> ToolReturnValue:
    if feedback:
        return tool_error(f"The tool call is rejected by the user. User feedback: {feedback}", brief=f"Rejected: {feedback}")
    return tool_error(REJECTED_MESSAGE, brief="Rejected by user")


class Toolset:
    def __init__(self, tools: list[Tool]) -> None:
        self._tools: dict[str, Tool | SchemaTool] = {t.name: t for t in tools}
        self._builtin_names = frozenset(self._tools)
        self._mcp_names: set[str] = set()
        self.hidden: set[str] = set()
        self.plan_mode = lambda: False  # the core points this at the session's plan mode

    def get(self, name: str) -> Tool | SchemaTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for name, t in self._tools.items() if name not in self.hidden]

    def replace(self, tool: Tool) -> None:
        """Swap a built-in for another implementation with the same name (e.g. a client terminal)."""
        self._tools[tool.name] = tool

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def register_external(self, name: str, description: str, parameters: Any) -> None:
        """Add (or replace) a client tool; raises ValueError with the reason when refused."""
        if not isinstance(name, str) or not name:
            raise ValueError("a tool name is required")
        if name in self._mcp_names:
            raise ValueError("conflicts with MCP tool")
        if name in self._builtin_names or (name in self._tools and not isinstance(self._tools[name], ExternalTool)):
            raise ValueError("conflicts with builtin tool")
        self._tools[name] = ExternalTool(name, description, parameters)

    def reserved_names(self) -> frozenset[str]:
        """Names MCP tools must not take: the built-in and client tools."""
        return frozenset(n for n in self._tools if n not in self._mcp_names)

    def set_mcp_tools(self, tools: Iterable[SchemaTool]) -> None:
        """Replace the session's MCP tools with `tools` (the MCP layer names them clash-free)."""
        for name in self._mcp_names:
            self._tools.pop(name, None)
        self._mcp_names = set()
        for tool in tools:
            if tool.name in self._tools:
                log.warning("MCP tool %s skipped: the name is taken", tool.name)
                continue
            self._tools[tool.name] = tool
            self._mcp_names.add(tool.name)

    async def handle(self, call: ToolCall, make_context: Callable[[str], ToolContext]) -> ToolOutcome:
        name = call.function.name
        tool = self._tools.get(name)
        if tool is None or name in self.hidden:
            msg = f"Tool `{name}` not found"
            return ToolOutcome(call, tool_error(msg, brief=msg))
        try:
            arguments = json.loads(call.function.arguments or "{}", strict=False)
        except ValueError as exc:
            return ToolOutcome(call, tool_error(f"Error parsing JSON arguments: {exc}", brief="Invalid arguments"))
        if not isinstance(arguments, dict):
            return ToolOutcome(
                call, tool_error("Error parsing JSON arguments: expected a JSON object", brief="Invalid arguments")
            )
        if name in PLAN_MODE_BLOCKED and self.plan_mode():
            return ToolOutcome(
                call,
                tool_error(
                    "Plan mode is on: files cannot be changed. Investigate, then present your plan to the user "
                    "and wait for them to turn plan mode off.",
                    brief="Blocked by plan mode",
                ),
            )
        ctx = make_context(name)
        try:
            if isinstance(tool, SchemaTool):
                reason = tool.validation_error(arguments)
                if reason:
                    return ToolOutcome(
                        call, tool_error(f"Error validating JSON arguments: {reason}", brief="Invalid arguments")
                    )
                result = await tool.run(call.function.arguments or "{}", ctx)
            else:
                try:
                    params = tool.params.model_validate(arguments)
                except ValidationError as exc:
                    return ToolOutcome(
                        call,
                        tool_error(f"Error validating JSON arguments: {describe_validation_error(exc, limit=5)}", brief="Invalid arguments"),
                    )
                result = await tool.run(params, ctx)
        except ToolRejectedError as exc:
            return ToolOutcome(call, rejection_result(exc.feedback), rejected=True, feedback=exc.feedback)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            return ToolOutcome(call, tool_error(f"Error running tool: {exc}", brief="Tool error"))
        return ToolOutcome(call, result)
