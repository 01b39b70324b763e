"""Who a turn comes from, what it ends with (a slash command's too), and the internal signals that ride the message stream beside it.

Kept apart from `agent_core.py` so the modules the turn loop calls (slash commands, compaction) can name
these without importing the agent itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from ..wire.types import UserInput

TurnStatus = Literal["finished", "cancelled", "max_steps_reached"]


@dataclass(frozen=True)
class FromUser:
    """A prompt the user typed into a front end (Wire `prompt`, ACP `session/prompt`, the web page,
    the Python API). Only such a turn may run a slash command; any other input (a subagent's
    prompt, a flow node) is text for the model, whatever it starts with: the model never runs the
    user's commands (/yolo, /export, /import, ...)."""

    user_input: UserInput


@dataclass
class TurnResult:
    status: TurnStatus
    steps: int | None = None  # set for max_steps_reached


@dataclass(frozen=True)
class SlashPrompt:
    """A slash command expands into a prompt: the turn goes on with this user message for the model."""

    user_input: UserInput


@dataclass(frozen=True)
class NestedTurn:
    """What a turn run inside a slash command reports (a flow node): how it ended and the model's
    last reply."""

    result: TurnResult
    final_text: str
    rejected: bool = False  # it ended on a tool call the user refused (a flow stops there)


@dataclass(frozen=True)
class ModeChanged:
    """Internal (not a Wire message): a mode changed (yolo, plan, always-ask or afk), whoever
    changed it (core/session_controls.py); the fields are the modes now."""

    yolo: bool
    plan_mode: bool
    always_ask: bool = False
    afk: bool = False


@dataclass(frozen=True)
class TitleChanged:
    """Internal (not a Wire message): the session got its title."""

    title: str


@dataclass(frozen=True)
class CommandsChanged:
    """Internal (not a Wire message): the session's slash commands changed (a skill was added, …)."""


@dataclass(frozen=True)
class ModelChanged:
    """Internal (not a Wire message): the session's model or thinking changed (`/model`, `/thinking`,
    a picker), so a front end that shows pickers shows the new choice."""

    alias: str | None
    thinking: bool | None


@dataclass(frozen=True)
class SandboxChanged:
    """Internal (not a Wire message): the session's sandbox mode changed (`/sandbox`, a picker), so
    a front end that shows pickers shows the new choice."""

    mode: str


@dataclass(frozen=True)
class PlanCleared:
    """Internal (not a Wire message): the plan file of the current planning round was deleted
    (`/plan clear`), so a front end that shows the plan as an object of its own takes it away.

    Its writes need no signal: their ToolResult carries the plan (core/plan_file.py, `plan_extras`)."""

    path: str


class ToolStarted(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~0.5 ms more at start-up
    """Internal (not a Wire message): a tool call runs now, its approval (if it needed one) given.

    Sent once per call that runs, before its ToolResult, by the core that runs it (core/toolset.py):
    a tool that never asks when it starts, one that may ask when its approval check lets it go on
    (or, had it nothing to ask, when it returns). A call refused (rejected, denied by a rule,
    blocked by a hook, unknown, with invalid arguments) gets none. A subagent's reaches the root's
    stream with its `agent_id` (subagents/runner.py), as its requests do. An ACP card goes
    `in_progress` on it (frontends/acp/updates.py)."""

    tool_call_id: str
    agent_id: str | None = None


INTERNAL_SIGNALS = (ModeChanged, TitleChanged, CommandsChanged, ModelChanged, SandboxChanged, ToolStarted, PlanCleared)
