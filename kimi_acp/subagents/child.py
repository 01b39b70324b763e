"""A subagent's own core: an AgentCore that works for the model, never in the user's name.

Its prompts come from the model (the Agent tool's `prompt`, the summary request), so they are text
for the child's model even when they look like a slash command; and its session controls
(core/session_controls.py) refuse every change of the user's session — yolo, afk, always-ask,
plan mode, model, thinking, sandbox, directories, title — whoever calls them. The child's context,
todos and files are its own and work as usual.
"""

from __future__ import annotations

from typing import ClassVar

from ..core.agent_core import AgentCore, FromUser, TurnResult
from ..wire.types import UserInput


class SubagentCore(AgentCore):
    """The core the subagent runner builds (runner.py); see the module docstring."""

    refuses_settings: ClassVar[bool] = True

    async def run_turn(self, prompt: UserInput | FromUser) -> TurnResult:
        """A turn on the model's prompt: text, never a command (unwrapped if marked as typed)."""
        return await super().run_turn(prompt.user_input if isinstance(prompt, FromUser) else prompt)
