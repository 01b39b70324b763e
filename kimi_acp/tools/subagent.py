"""Agent: the model hands a task to a subagent, a child agent with its own context and tools.

The tool only checks the call and words the result; running the child is the job of whoever the
core attached as `ctx.subagents` (`kimi_acp/subagents/`, which builds child cores — a tool must
not import the core). Without a launcher (inside a subagent) the tool is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from ..llm.types import ToolSpec
from ..wire.types import ToolReturnValue
from .base import Params, SubagentLauncher, Tool, ToolContext, tool_error

__all__ = ["Agent", "AgentParams", "SubagentLauncher", "SubagentTypeInfo"]

NAME = "Agent"
MAX_TIMEOUT_S = 3600


@dataclass(frozen=True)
class SubagentTypeInfo:
    """What the model is told of a subagent type."""

    name: str
    description: str
    tools: tuple[str, ...]


class AgentParams(Params):
    description: str = Field(description="A short (3-5 word) description of the task.")
    prompt: str = Field(description="The task for the agent to perform, with all the context it needs.")
    subagent_type: str = Field(default="coder", description="The agent type to use. Defaults to `coder`.")
    model: str | None = Field(
        default=None, description="Optional model alias from the config; by default the current model."
    )
    resume: str | None = Field(
        default=None, description="Optional agent_id of an earlier subagent to continue instead of starting a new one."
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Run the agent as a background task and return at once (see TaskList/TaskOutput). Prefer false "
            "unless the task can go on independently and its result is not needed right away."
        ),
    )
    timeout: int | None = Field(
        default=None,
        ge=0,
        le=MAX_TIMEOUT_S,
        description=(
            "Seconds after which the agent is stopped. Foreground: 300 by default (0: no limit); "
            "background: 900 by default."
        ),
    )


DESCRIPTION = """\
Launch a subagent to work on a task on its own: it has its own context and tools, cannot see this
conversation, and returns only its final message, which becomes this tool's result. Give it a
complete, self-contained prompt. Several Agent calls in one reply run in parallel.

Agent types:
{types}

The result starts with the subagent's `agent_id`; pass it as `resume` to continue that agent with
its context kept. Subagents cannot start subagents of their own."""


class Agent(Tool[AgentParams]):
    name = NAME
    description = DESCRIPTION.format(types="- `coder`: general software engineering")
    params = AgentParams

    def __init__(self) -> None:
        self._spec: ToolSpec | None = None
        self._types: tuple[SubagentTypeInfo, ...] = ()

    def describe_types(self, types: Sequence[SubagentTypeInfo]) -> None:
        """The launcher's types, listed in the description the model sees."""
        self._types = tuple(types)
        self._spec = None

    def spec(self) -> ToolSpec:
        if self._spec is None:
            base = super().spec()
            lines = [f"- `{t.name}`: {t.description} (tools: {', '.join(t.tools) or 'none'})" for t in self._types]
            text = DESCRIPTION.format(types="\n".join(lines)) if lines else base.description
            self._spec = ToolSpec(base.name, text, base.parameters)
        return self._spec

    async def run(self, params: AgentParams, ctx: ToolContext) -> ToolReturnValue:
        launcher = ctx.subagents
        if launcher is None:
            return tool_error("Subagents cannot launch other subagents.", brief="Agent unavailable")
        if params.model is not None and not launcher.has_model(params.model):
            return tool_error(f"Unknown model alias: {params.model}", brief="Invalid model alias")
        known = [t.name for t in launcher.types()]
        if params.resume is None and params.subagent_type not in known:
            return tool_error(
                f"Unknown subagent type {params.subagent_type!r} (available: {', '.join(known)})",
                brief="Unknown subagent type",
            )
        if params.run_in_background and params.timeout == 0:
            return tool_error(
                "A background agent needs a timeout greater than 0 (or none, for the default).",
                brief="Invalid background timeout",
            )
        return await launcher.run(params, ctx)
