"""What slash commands use of the session's agent: the `SlashHost` protocol (AgentCore implements it).

Apart from `slash_commands.py` so that module stays cheap to import (the early Wire `initialize`
answer reads its list of commands): this one names the core's heavier parts, and only type
checkers import it there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .compaction import CompactionHost

if TYPE_CHECKING:
    from ..config import ResolvedModel
    from ..kaos.tasks import TaskTable
    from ..llm.types import ChatProvider
    from ..sessions import Session
    from ..tools.base import ToolContext
    from ..wire.types import UserInput
    from .approvals import Approvals
    from .prompt import SkillSummary
    from .session_controls import SessionControls
    from .slash import CommandProvider, SlashCommand
    from .turn import NestedTurn
    from .undo import Checkpoints


class SessionCommands(Protocol):
    """The session's commands as the commands read them (`slash.SlashRegistry`)."""

    @property
    def providers(self) -> tuple[CommandProvider, ...]: ...

    def commands(self) -> list[SlashCommand]: ...

    def find(self, name: str) -> SlashCommand | None: ...

    def skills(self) -> list[SkillSummary]: ...

    def notes(self) -> list[str]: ...


class SlashHost(CompactionHost, Protocol):
    """What the commands use: the session's agent (AgentCore implements it)."""

    approvals: Approvals
    session: Session
    controls: SessionControls  # every setting a command changes goes through it

    @property
    def slash(self) -> SessionCommands: ...

    # What /undo uses besides (core/undo.py's `UndoHost`: the host is one too).
    @property
    def checkpoints(self) -> Checkpoints: ...

    @property
    def tasks(self) -> TaskTable: ...

    @property
    def plan_mode(self) -> bool: ...

    @property
    def max_context_size(self) -> int | None: ...

    @property
    def max_steps(self) -> int: ...

    def say(self, text: str) -> None: ...

    def require_provider(self) -> ChatProvider: ...

    def resolved_model(self) -> ResolvedModel | None: ...

    def workspace_dirs(self) -> list[Path]: ...

    def command_context(self, command: str) -> ToolContext:
        """What the command asks through: the tools' path checks, the card named after it."""
        ...

    async def run_nested_turn(self, user_input: UserInput) -> NestedTurn:
        """A turn inside this one (a flow node): TurnBegin, the model's steps, TurnEnd."""
        ...

