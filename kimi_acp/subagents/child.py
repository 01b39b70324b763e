"""A subagent's own core: an AgentCore that works for the model, never in the user's name.

Its prompts come from the model (the Agent tool's `prompt`, the summary request), so they are text
for the child's model even when they look like a slash command; and every control that would
change the user's session — yolo, afk, plan mode, model, thinking, sandbox, directories, title —
refuses, whoever calls it. The child's context, todos and files are its own and work as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from ..core.agent_core import AgentCore, FromUser, TurnResult
from ..core.approvals import SUBAGENT_REFUSED
from ..errors import PermissionDenied
from ..wire.types import UserInput


def _refuse(what: str) -> NoReturn:
    raise PermissionDenied(SUBAGENT_REFUSED.format(what=what))


class SubagentCore(AgentCore):
    """The core the subagent runner builds (runner.py); see the module docstring."""

    async def run_turn(self, prompt: UserInput | FromUser) -> TurnResult:
        """A turn on the model's prompt: text, never a command (unwrapped if marked as typed)."""
        return await super().run_turn(prompt.user_input if isinstance(prompt, FromUser) else prompt)

    def set_yolo(self, on: bool, *, announce: bool = True) -> None:
        _refuse("yolo mode")

    def set_afk(self, on: bool) -> None:
        _refuse("afk mode")

    def set_plan_mode(self, on: bool, *, announce: bool = True) -> None:
        _refuse("plan mode")

    async def set_model(self, alias: str, thinking: bool | None, *, announce: bool = False) -> None:
        _refuse("its model")

    async def set_thinking(self, on: bool | None, *, announce: bool = False) -> None:
        _refuse("thinking")

    def set_sandbox(self, mode: str, *, announce: bool = False) -> None:
        _refuse("the sandbox")

    def set_extra_dirs(self, dirs: Sequence[Path]) -> None:
        _refuse("its directories")

    def rename(self, title: str) -> None:
        _refuse("its title")
