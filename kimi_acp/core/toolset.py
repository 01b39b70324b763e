"""The tools of one session and the dispatch of one tool call: parse, validate, run, report.

Whatever the model sends, the outcome is a ToolReturnValue the model can act on: unknown tool,
unparsable or invalid arguments, a refused approval and a crashing tool all become precise tool
errors, never an exception out of the turn.

Every result, from any tool (built-in, MCP, plugin, a Wire client's), leaves `handle` without a
secret the process knows (util/secrets.py): the model, the client, the hooks and the session
files all see it after that.

A call that runs is announced once, through its context's `started` (the core sends `ToolStarted`):
before a tool that never asks (core/tool_facts.py), when the approval of one that may ask lets it
go on (tools/base.py `ToolContext.approve`), or when one that had nothing to ask returns.

While plan mode is on, an edit may only touch the plan file; a successful one carries the plan as
the file then holds it in its result's `extras` (core/plan_file.py `plan_extras`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from ..errors import PermissionDenied
from ..llm.types import ToolSpec
from ..permissions.redaction import scrubbed
from ..tools import DeferredTool
from ..tools.base import (
    DEFAULT_TOOL_ENV,
    Permit,
    Tool,
    ToolContext,
    ToolEnv,
    ToolRejectedError,
    real_path,
    tool_error,
)
from ..tools.external import ExternalTool, SchemaTool
from ..util import secrets
from ..wire.serde import describe_validation_error
from ..wire.types import ToolCall, ToolReturnValue
from .hook_points import NO_HOOKS, HookRunner
from .plan_file import plan_extras
from .tool_facts import ToolFacts, tool_facts

log = logging.getLogger(__name__)

REJECTED_MESSAGE = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to tell you how "
    "to proceed."
)
CANCELLED_MESSAGE = "The tool call was cancelled by the user before it finished."
CANCELLED_EXTRA = "cancelled"  # in ToolReturnValue.extras (kept in wire.jsonl): the fact, not the message's words


def cancelled_result() -> ToolReturnValue:
    """What a call the user cancelled before it finished returns (the model reads the message)."""
    value = tool_error(CANCELLED_MESSAGE, brief="Cancelled")
    value.extras = {CANCELLED_EXTRA: True}
    return value


def was_cancelled(value: ToolReturnValue) -> bool:
    """Whether a tool result is a call the user cancelled (`cancelled_result`)."""
    return value.is_error and value.extras is not None and value.extras.get(CANCELLED_EXTRA) is True


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


class ToolsetHost(Protocol):
    """What a session's tools depend on besides one call (AgentCore implements it); read at each
    use, so the toolset is built once and never pointed anywhere afterwards."""

    @property
    def plan_mode(self) -> bool: ...

    @property
    def hooks(self) -> HookRunner: ...

    def plan_file_path(self) -> Path | None: ...

    def tool_env(self) -> ToolEnv:
        """The front end's support, the model's capabilities, the config's `[services]` now."""
        ...


@dataclass
class FixedHost:
    """A `ToolsetHost` of plain values: a toolset outside a session (tests, a tool run alone)."""

    plan_mode: bool = False
    plan_file: Path | None = None
    hooks: HookRunner = NO_HOOKS
    env: ToolEnv = field(default=DEFAULT_TOOL_ENV)

    def plan_file_path(self) -> Path | None:
        return self.plan_file

    def tool_env(self) -> ToolEnv:
        return self.env


class Toolset:
    """A session's tools by name. Built-ins may come as `DeferredTool`s: each is created the
    first time it is needed (`get`, `specs`), so opening a session imports no tool module.

    `host` is the session (plan mode, the plan file, the hooks, the `ToolEnv`); a toolset without
    one is outside any session."""

    def __init__(self, tools: Iterable[Tool[Any] | DeferredTool], host: ToolsetHost | None = None) -> None:
        self._tools: dict[str, Tool[Any] | SchemaTool | DeferredTool] = {t.name: t for t in tools}
        self._builtin_names = frozenset(self._tools)
        self._mcp_names: set[str] = set()
        self._host: ToolsetHost = host if host is not None else FixedHost()
        self.hidden: set[str] = set()

    def get(self, name: str) -> Tool[Any] | SchemaTool | None:
        tool = self._tools.get(name)
        if isinstance(tool, DeferredTool):
            tool = self._tools[name] = tool.create()
        return tool

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is offered: each tool's `offer` for the session's `ToolEnv`. A tool not
        offered (its front end cannot serve it, e.g. AskUserQuestion for a Wire client without
        questions) stays callable, so a call gets the tool's own answer; a `hidden` one is gone
        altogether."""
        env = self._host.tool_env()
        tools = [self.get(name) for name in list(self._tools) if name not in self.hidden]
        return [spec for t in tools if t is not None and (spec := t.offer(env)) is not None]

    def offers(self, name: str) -> bool:
        """Whether the model is offered the tool `name` now (`specs`)."""
        tool = self.get(name) if name not in self.hidden else None
        return tool is not None and tool.offer(self._host.tool_env()) is not None

    def replace(self, tool: Tool[Any]) -> None:
        """Swap a built-in for another implementation with the same name (e.g. a client terminal)."""
        self._tools[tool.name] = tool

    def add(self, tool: Tool[Any] | SchemaTool | DeferredTool) -> None:
        self._tools[tool.name] = tool

    def facts(self, name: str) -> ToolFacts:
        """What the tool called `name` is (core/tool_facts.py); a Wire client's tool never asks: the
        client runs it."""
        if isinstance(self._tools.get(name), ExternalTool):
            return _CLIENT_TOOL
        return tool_facts(name)

    def has(self, name: str) -> bool:
        """Whether a tool (of any kind, created or not) has this name."""
        return name in self._tools

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
        """One call between its hooks. A PreToolUse block is a tool error the model reads, and the
        call never runs nor asks for approval; PostToolUse / PostToolUseFailure run in the
        background. An unknown tool or unparsable arguments fail before any hook (as in Kimi)."""
        name = call.function.name
        tool_input = self._hook_input(call)
        if tool_input is None:
            return _redacted(await self._handle(call, make_context))
        hooks = self._host.hooks
        fields: dict[str, Any] = {"tool_name": name, "tool_input": tool_input, "tool_call_id": call.id}
        verdict = await hooks.run("PreToolUse", name, fields)
        if verdict.blocked:
            blocked = tool_error(verdict.reason or "Blocked by PreToolUse hook", brief="Hook blocked")
            return _redacted(ToolOutcome(call, blocked))
        outcome = _redacted(await self._handle(call, make_context))
        result = outcome.result
        if result.is_error:
            error = result.message or _output_text(result)
            hooks.fire("PostToolUseFailure", name, {**fields, "error": error})
        else:
            hooks.fire("PostToolUse", name, {**fields, "tool_output": _output_text(result)})
        return outcome

    def _hook_input(self, call: ToolCall) -> dict[str, Any] | None:
        """The call's arguments for the hooks, or None when it will fail before running."""
        if self._tools.get(call.function.name) is None or call.function.name in self.hidden:
            return None
        try:
            arguments = json.loads(call.function.arguments or "{}", strict=False)
        except ValueError:
            return None
        return arguments if isinstance(arguments, dict) else None

    async def _handle(self, call: ToolCall, make_context: Callable[[str], ToolContext]) -> ToolOutcome:
        name = call.function.name
        tool = self.get(name)
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
        ctx = dataclasses.replace(make_context(name), env=self._host.tool_env())
        facts = self.facts(name)
        plan: Path | None = None  # the plan file, when this call writes it
        if facts.kind == "edit" and self._host.plan_mode:  # while plan mode is on, only the plan file changes
            refusal = self._plan_mode_gate(arguments, ctx)
            if refusal is not None:
                return ToolOutcome(call, refusal)
            plan = self._host.plan_file_path()
        try:
            if isinstance(tool, SchemaTool):
                reason = tool.validation_error(arguments)
                if reason:
                    return ToolOutcome(
                        call, tool_error(f"Error validating JSON arguments: {reason}", brief="Invalid arguments")
                    )
                if not facts.asks:
                    ctx.started()
                result = await tool.run(call.function.arguments or "{}", ctx)
            else:
                try:
                    params = tool.params.model_validate(arguments)
                except ValidationError as exc:
                    return ToolOutcome(
                        call,
                        tool_error(f"Error validating JSON arguments: {describe_validation_error(exc, limit=5)}", brief="Invalid arguments"),
                    )
                if not facts.asks:
                    ctx.started()
                result = await tool.run(params, ctx)
        except ToolRejectedError as exc:
            result = exc.result if exc.result is not None else rejection_result(exc.feedback)
            return ToolOutcome(call, result, rejected=True, feedback=exc.feedback)
        except PermissionDenied as exc:  # a rule or --afk refused it: the model is told and goes on
            return ToolOutcome(call, tool_error(str(exc), brief="Not permitted"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            ctx.started()  # it ran, and failed
            return ToolOutcome(call, tool_error(f"Error running tool: {exc}", brief="Tool error"))
        ctx.started()  # a no-op unless it had nothing to ask
        if plan is not None and not result.is_error:
            result = await _with_plan(result, ctx, plan)
        return ToolOutcome(call, result)


    def _plan_mode_gate(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolReturnValue | None:
        """Plan mode: a write to the plan file runs, approved without asking (as in Kimi); any other
        file change is refused with where the plan belongs."""
        plan = self._host.plan_file_path()
        raw = arguments.get("path")
        if plan is not None and isinstance(raw, str) and raw and real_path(ctx.resolve(raw)) == real_path(plan):
            ctx.approver = _PLAN_FILE_APPROVER
            return None
        where = f" except the plan file `{plan}`" if plan is not None else ""
        return tool_error(
            f"Plan mode is on: no file may be changed{where}. Investigate with read-only tools, write your plan "
            "to the plan file, then present it for approval (ExitPlanMode).",
            brief="Blocked by plan mode",
        )


_CLIENT_TOOL = ToolFacts(asks=False)


async def _with_plan(result: ToolReturnValue, ctx: ToolContext, plan: Path) -> ToolReturnValue:
    """A plan write's result, carrying the plan as the file now holds it (core/plan_file.py)."""
    try:
        content = await ctx.kaos.read_text(plan)  # the agent's own file: always on local disk
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("cannot read the plan file %s after writing it: %s", plan, exc)
        return result
    return result.model_copy(update={"extras": {**(result.extras or {}), **plan_extras(plan, content)}})


class _PlanFileApprover:
    """Approves the plan file write without asking: it is what plan mode is for."""

    async def request(self, **_: Any) -> Permit:
        return "not_needed"


_PLAN_FILE_APPROVER = _PlanFileApprover()


def _redacted(outcome: ToolOutcome) -> ToolOutcome:
    """`outcome` with no known secret in its output text, message, display blocks or extras."""
    if not secrets.any_registered():
        return outcome
    result = outcome.result
    clean = result.model_copy(
        update={
            "output": scrubbed(result.output),
            "message": secrets.redact(result.message),
            "display": scrubbed(result.display),
            "extras": scrubbed(result.extras),
        }
    )
    outcome.result = clean
    return outcome


def _output_text(result: ToolReturnValue) -> str:
    if isinstance(result.output, str):
        return result.output
    return "".join(getattr(part, "text", "") for part in result.output)
