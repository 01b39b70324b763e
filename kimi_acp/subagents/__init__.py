"""Subagents: the Agent tool's child agents (kimi_acp/tools/agent.py asks, this package runs them).

A front end calls `attach(core, spec)` on a root session's core: the Agent tool is then offered,
listing the session's subagent types (the agent file's `subagents`, or Kimi's coder / explore /
plan). A subagent's core gets no launcher, so it cannot start subagents of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .kinds import kinds_for
from .runner import SubagentRunner

if TYPE_CHECKING:
    from ..agents import AgentSpec
    from ..core.agent import AgentCore

__all__ = ["SubagentRunner", "attach"]


def attach(core: AgentCore, spec: AgentSpec | None = None) -> SubagentRunner | None:
    """Offer the Agent tool on `core` (a root session); None when its agent has no Agent tool."""
    tool = core.toolset.get("Agent")
    if tool is None:  # an agent file without it
        return None
    runner = SubagentRunner(core, kinds_for(spec))
    describe = getattr(tool, "describe_types", None)
    if describe is not None:
        describe(runner.types())
    core.subagents = runner
    core.toolset.hidden.discard("Agent")
    return runner
