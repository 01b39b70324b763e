"""Tools a Wire client registers at `initialize`: the model calls them, the client runs them.

`SchemaTool` is their JSON-Schema-validated base, shared with MCP tools (`kimi_acp/mcp/tool.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..llm.types import ToolSpec
from ..wire.types import ToolCallRequest, ToolResult, ToolReturnValue
from .base import ToolContext, ToolEnv, tool_error

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_VALIDATOR_CLASS: type[Draft202012Validator] | None = None


def _validator_class() -> type[Draft202012Validator]:
    global _VALIDATOR_CLASS
    if _VALIDATOR_CLASS is None:
        from jsonschema import Draft202012Validator  # lazy: a slow import, only for external tools

        _VALIDATOR_CLASS = Draft202012Validator
    return _VALIDATOR_CLASS


class InvalidToolSchema(ConfigError, ValueError):
    """The `parameters` of an external tool is not a usable JSON Schema."""


class SchemaTool:
    """A tool described by a JSON Schema rather than a params model (client tools, MCP tools).

    Arguments are checked against the schema before `run` sees them. `lenient` keeps a tool whose
    schema does not check (some MCP servers publish sloppy ones): it then runs unvalidated and the
    server judges the arguments.
    """

    def __init__(self, name: str, description: str, parameters: dict[str, Any], *, lenient: bool = False) -> None:
        if not isinstance(parameters, dict):
            raise InvalidToolSchema("parameters must be a JSON Schema object")
        cls = _validator_class()
        from jsonschema.exceptions import SchemaError

        self._validator: Draft202012Validator | None = None
        try:
            cls.check_schema(parameters)
            self._validator = cls(parameters)
        except SchemaError as exc:
            if not lenient:
                raise InvalidToolSchema(f"invalid JSON Schema: {exc.message}") from None
        self.name = name
        self.description = description
        self.parameters = parameters

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """Always offered: the session's front end and model do not change what it is."""
        return self.spec()

    def validation_error(self, arguments: Any) -> str | None:
        """A one-line reason the arguments do not match the schema, or None."""
        if self._validator is None:
            return None
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        if not errors:
            return None
        first = errors[0]
        where = "/".join(str(p) for p in first.path)
        return f"{where}: {first.message}" if where else first.message

    async def run(self, arguments_json: str, ctx: ToolContext) -> ToolReturnValue:
        raise NotImplementedError


class ExternalTool(SchemaTool):
    """A client-side tool. Arguments are checked against its schema before the client sees them."""

    async def run(self, arguments_json: str, ctx: ToolContext) -> ToolReturnValue:
        if ctx.send_request is None:
            return tool_error(f"External tool `{self.name}` has no client to run it.", brief="No client")
        request = ToolCallRequest(id=ctx.tool_call_id, name=self.name, arguments=arguments_json)
        answer = await ctx.send_request(request)
        if isinstance(answer, ToolResult):
            return answer.return_value
        if isinstance(answer, ToolReturnValue):
            return answer
        if isinstance(answer, BaseException):
            return tool_error(str(answer) or "External tool error", brief="External tool error")
        return tool_error("Invalid tool result payload from client.", brief="Invalid tool result")
