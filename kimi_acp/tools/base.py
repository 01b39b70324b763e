"""What a tool is, what it gets to work with, and how it reports back."""

from __future__ import annotations

import os.path
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from ..errors import ToolError
from ..kaos.base import Kaos
from ..llm.types import ToolSpec
from ..permissions.scope import Scope
from ..util import secrets
from ..wire.types import (
    BriefDisplayBlock,
    ContentPart,
    DisplayBlock,
    Request,
    TodoDisplayItem,
    ToolReturnValue,
)

if TYPE_CHECKING:
    from ..kaos.tasks import TaskTable
    from ..sandbox.session import SessionSandbox

MAX_OUTPUT_CHARS = 50_000
MAX_LINE_CHARS = 2_000
TRUNCATED_MARK = "[...truncated]"


class ToolRejectedError(ToolError):
    """The user said no. `feedback` (if any) tells the model what to do instead; `result` (if any)
    is what the model is told in place of the standard rejection text (e.g. a rejected plan)."""

    def __init__(self, feedback: str | None = None, *, result: ToolReturnValue | None = None) -> None:
        super().__init__(feedback or "rejected")
        self.feedback = feedback
        self.result = result


class Approver(Protocol):
    async def request(
        self,
        *,
        tool_call_id: str,
        sender: str,
        action: str,
        description: str,
        display: Sequence[DisplayBlock],
        scope: Scope | None = None,
        warning: str | None = None,
        needed: bool = True,
        sandbox: str | None = None,
    ) -> None:
        """Return when the call may run; raise ToolRejectedError when rejected or cancelled,
        PermissionDenied when refused without asking (core/approvals.py has the order). `sandbox`:
        what the card says about the OS sandbox the call runs in (or leaves)."""
        ...


class TodoStore(Protocol):
    def get_todos(self) -> list[TodoDisplayItem]: ...

    def set_todos(self, items: list[TodoDisplayItem]) -> None: ...


class _MessageSink(Protocol):
    def send(self, message: Any) -> None: ...


class _YoloState(Protocol):
    @property
    def yolo(self) -> bool: ...


class SubagentLauncher(Protocol):
    """Runs the Agent tool's subagents for one root session (kimi_acp/subagents/, tools/subagent.py)."""

    def types(self) -> Sequence[Any]: ...

    def has_model(self, alias: str) -> bool: ...

    async def run(self, params: Any, ctx: ToolContext) -> ToolReturnValue: ...


class ChangeRecorder(Protocol):
    """Keeps what restores the workspace before a tool changes it, so /undo can take the turn
    back (core/undo.py implements it)."""

    async def before_edit(self, path: Path) -> None:
        """`path` is about to be written (WriteFile, StrReplaceFile)."""
        ...

    async def before_command(self) -> None:
        """A Shell command (foreground or background) is about to run."""
        ...


class PlanHost(Protocol):
    """Plan mode as EnterPlanMode / ExitPlanMode drive it (the core implements it)."""

    @property
    def stream(self) -> _MessageSink: ...  # for PlanDisplay

    @property
    def approvals(self) -> _YoloState: ...

    @property
    def plan_mode(self) -> bool: ...

    def set_plan_mode(self, on: bool, *, announce: bool = True) -> None: ...

    def plan_file_path(self) -> Path: ...


# Tool results never show the model a secret the agent knows (core/toolset.py redacts them), but a
# user may have typed one, or a file the agent may read may hold one: a call that would pass one on
# (in a URL, a command, a file) always asks, whatever was approved before, and the card says so
# (the card itself shows it redacted).
SECRET_IN_ARGUMENTS = (
    f"This call's arguments hold a secret this agent knows (an API key or a token, shown as {secrets.REDACTED}): "
    "approving passes it on as written."
)


@dataclass
class ToolContext:
    """Everything one tool call may use. Built per call by the core."""

    work_dir: Path
    kaos: Kaos
    tool_call_id: str
    approver: Approver
    todos: TodoStore
    # Sends a request (e.g. ToolCallRequest) to whoever drives the session and returns its answer.
    send_request: Callable[[Request], Awaitable[Any]] | None = None
    additional_dirs: list[Path] = field(default_factory=list)
    tool_name: str = ""  # the approval's `sender`
    plan: PlanHost | None = None  # plan mode, for the plan tools (tools/plan.py)
    tasks: TaskTable | None = None  # the session's background tasks (kimi_acp/kaos/tasks.py)
    subagents: SubagentLauncher | None = None  # runs the Agent tool's subagents (root sessions only)
    # Where reads need no approval besides the workspace: skill directories, the plan file (the
    # system temp dir is always there).
    readable: list[Path] = field(default_factory=list)
    sandbox: SessionSandbox | None = None  # the session's OS sandbox (kimi_acp/sandbox): where Shell commands run
    arguments: str = ""  # the call's arguments as the model wrote them (JSON), for `approve`'s secret check
    checkpoints: ChangeRecorder | None = None  # what /undo restores from (core/undo.py); None: nothing is recorded

    def resolve(self, path: str) -> Path:
        """A tool path argument as an absolute path (relative ones are taken from the work dir)."""
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.work_dir / p
        return Path(_normpath(p))

    def in_workspace(self, path: Path) -> bool:
        """Whether `path` really lies in the work dir or an additional dir.

        Decided on real paths (symlinks followed on both sides), so a link inside the project that
        points out of it is outside, and a project reached through a symlink is still inside.
        """
        real = real_path(path)
        return any(_is_within(real, real_path(root)) for root in (self.work_dir, *self.additional_dirs))

    def may_read(self, path: Path) -> bool:
        """Whether reading `path` needs no approval: inside the workspace, a skill directory, the
        plan file or the system temp dir (decided on real paths, as `in_workspace`)."""
        if self.in_workspace(path):
            return True
        real = real_path(path)
        return any(_is_within(real, real_path(root)) for root in (*self.readable, Path(tempfile.gettempdir())))

    async def approve(
        self,
        *,
        action: str,
        description: str,
        display: Sequence[DisplayBlock] = (),
        scope: Scope | None = None,
        warning: str | None = None,
        needed: bool = True,
        sandbox: str | None = None,
    ) -> None:
        """Ask for approval of this call, unless the user's rules, yolo or a session approval of
        `scope` allow it (or `needed` is False and no rule asks); a `warning` always asks, and so
        does a call whose arguments hold a secret the agent knows (`SECRET_IN_ARGUMENTS`).
        Raises ToolRejectedError if the user refused, PermissionDenied if a rule or --afk did."""
        if warning is None and secrets.holds_secret(self.arguments):
            warning = SECRET_IN_ARGUMENTS
        await self.approver.request(
            tool_call_id=self.tool_call_id,
            sender=self.tool_name,
            action=action,
            description=description,
            display=list(display),
            scope=scope,
            warning=warning,
            needed=needed,
            sandbox=sandbox,
        )


def real_path(path: Path) -> Path:
    """Where `path` leads: every symlink of its existing prefix followed, a missing rest kept as is.

    So a new file under a symlinked directory resolves through the directory, and a dangling link
    resolves to the file it would create.
    """
    return Path(os.path.realpath(path))


def _normpath(p: Path) -> str:
    return os.path.normpath(str(p))


def _is_within(path: Path, root: Path) -> bool:
    try:
        Path(_normpath(path)).relative_to(_normpath(root))
        return True
    except ValueError:
        return False


P = TypeVar("P", bound=BaseModel)
_SPECS: dict[type, ToolSpec] = {}


class Params(BaseModel):
    """Base for tool parameter models: unknown arguments are an error the model can fix."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Tool(ABC, Generic[P]):
    """A built-in tool: a name, a description for the model, a params model, and `run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[type[BaseModel]]

    def spec(self) -> ToolSpec:
        """What the model sees; built once per tool class (schema generation is not cheap)."""
        cls = type(self)
        cached = _SPECS.get(cls)
        if cached is None:
            schema = self.params.model_json_schema()
            schema.pop("title", None)
            cached = _SPECS[cls] = ToolSpec(self.name, self.description, schema)
        return cached

    @abstractmethod
    async def run(self, params: P, ctx: ToolContext) -> ToolReturnValue:
        """Do the work. Raise ToolRejectedError if the user refused; other errors become tool errors."""


def tool_ok(
    output: str | list[ContentPart] = "",
    *,
    message: str = "",
    brief: str = "",
    display: Sequence[DisplayBlock] = (),
) -> ToolReturnValue:
    blocks: list[Any] = [BriefDisplayBlock(text=brief)] if brief else []
    blocks.extend(display)
    return ToolReturnValue(is_error=False, output=output, message=message, display=blocks)


def tool_error(
    message: str,
    *,
    brief: str = "",
    output: str | list[ContentPart] = "",
    display: Sequence[DisplayBlock] = (),
) -> ToolReturnValue:
    blocks: list[Any] = [BriefDisplayBlock(text=brief)] if brief else []
    blocks.extend(display)
    return ToolReturnValue(is_error=True, output=output, message=message, display=blocks)


def cap_output(text: str, *, max_chars: int = MAX_OUTPUT_CHARS, max_line: int = MAX_LINE_CHARS) -> tuple[str, bool]:
    """Cut over-long lines and the total; returns (text, truncated)."""
    truncated = False
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    total = 0
    for line in lines:
        if len(line) > max_line:
            end = "\n" if line.endswith("\n") else ""
            line = line[:max_line] + TRUNCATED_MARK + end
            truncated = True
        if total + len(line) > max_chars:
            out.append(line[: max(0, max_chars - total)] + TRUNCATED_MARK)
            truncated = True
            break
        out.append(line)
        total += len(line)
    return "".join(out), truncated
