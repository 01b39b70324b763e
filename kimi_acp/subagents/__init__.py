"""Subagents: the Agent tool's child agents (kimi_acp/tools/subagent.py asks, this package runs them).

A front end calls `attach(core, spec)` on a root session's core: the Agent tool is then offered,
listing the session's subagent types (the agent file's `subagents`, or Kimi's coder / explore /
plan). A subagent's core gets no launcher, so it cannot start subagents of its own. Attaching is
cheap (it is on the path of every new session); the runner loads at the first Agent call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .kinds import SubagentKind, kinds_for

if TYPE_CHECKING:
    from ..agent_file import AgentSpec
    from ..core.agent_core import AgentCore
    from ..tools.base import ToolContext
    from ..tools.subagent import AgentParams, SubagentTypeInfo
    from ..wire.types import ToolReturnValue
    from .runner import SubagentRunner

__all__ = ["attach"]


class Launcher:
    """The root session's `SubagentLauncher`: lists the types, runs them through a SubagentRunner."""

    def __init__(self, core: AgentCore, kinds: dict[str, SubagentKind]) -> None:
        self.core = core
        self.kinds = kinds
        self._runner: SubagentRunner | None = None

    def types(self) -> Sequence[SubagentTypeInfo]:
        from ..tools import BUILTIN_TOOL_NAMES

        available = list(BUILTIN_TOOL_NAMES)
        return [kind.info(available) for kind in self.kinds.values()]

    def has_model(self, alias: str) -> bool:
        return alias in self.core.config.models

    @property
    def runner(self) -> SubagentRunner:
        if self._runner is None:
            from .runner import SubagentRunner

            self._runner = SubagentRunner(self.core, self.kinds)
        return self._runner

    async def run(self, params: AgentParams, ctx: ToolContext) -> ToolReturnValue:
        return await self.runner.run(params, ctx)

    def running(self, agent_id: str) -> bool:
        """Whether that subagent runs in this process now."""
        return self._runner is not None and self._runner.running(agent_id)

    async def stop(self, agent_id: str) -> bool:
        """Stop that subagent's current work (the user asked); False when it runs nothing here."""
        return self._runner is not None and await self._runner.stop(agent_id)


def attach(core: AgentCore, spec: AgentSpec | None = None) -> Launcher | None:
    """Offer the Agent tool on `core` (a root session); None when its agent has no Agent tool."""
    tool: Any = core.toolset.get("Agent")
    if tool is None:  # an agent file without it
        return None
    launcher = Launcher(core, kinds_for(spec))
    describe = getattr(tool, "describe_types", None)
    if describe is not None:
        describe(launcher.types())
    core.subagents = launcher
    core.toolset.hidden.discard("Agent")
    return launcher
