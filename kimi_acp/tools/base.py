"""What a tool is, what it gets to work with, and how it reports back."""

from __future__ import annotations

import json
import os.path
import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict

from ..errors import ToolError
from ..front_end import DEFAULT_FRONT_END, FrontEnd
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


# How a call came to run (what `Approver.request` returns): the user approved it ("asked"), a rule
# allowed it, yolo or afk, a session approval covered it, it only reads ("read_only": a Shell
# command of the read-only table, unless the session asks always), or it needed no approval.
Permit = Literal["asked", "rule", "yolo", "session", "read_only", "not_needed"]


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
        reads_only: bool = False,
    ) -> Permit:
        """Return (how it may run) when the call may run; raise ToolRejectedError when rejected or
        cancelled, PermissionDenied when refused without asking (core/approvals.py has the order).
        `sandbox`: what the card says about the OS sandbox the call runs in (or leaves);
        `reads_only`: the call provably only reads, so it runs unasked unless the session asks
        always (permissions/read_only.py)."""
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
    """Plan mode as EnterPlanMode / ExitPlanMode drive it (the session's controls implement it,
    core/session_controls.py)."""

    @property
    def stream(self) -> _MessageSink: ...  # for PlanDisplay

    @property
    def approvals(self) -> _YoloState: ...

    @property
    def plan_mode(self) -> bool: ...

    def set_plan_mode(self, on: bool) -> None: ...

    def plan_file_path(self) -> Path: ...


@dataclass(frozen=True)
class ToolEnv:
    """The session as its tools see it, read afresh for each list of tools offered and each call:
    what the front end supports (`kimi_acp/front_end.py`), what the session's model takes, and the
    config's `[services]`. A tool that depends on them reads them here (`Tool.offer`,
    `ToolContext.env`); nothing is set on a tool after it is made."""

    front_end: FrontEnd = DEFAULT_FRONT_END
    model_capabilities: frozenset[str] = frozenset()
    services: Any = None  # config.Services, or None (no Kimi web services)


DEFAULT_TOOL_ENV = ToolEnv()


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
    send_request: Callable[[Request[Any]], Awaitable[Any]] | None = None
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
    env: ToolEnv = DEFAULT_TOOL_ENV  # the front end's support, the model's capabilities, [services] (the toolset sets it)
    # Called once when the call runs, its approval given (the core sends `ToolStarted`); see `started`.
    on_start: Callable[[], None] | None = None

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
        return any(is_within(real, real_path(root)) for root in (self.work_dir, *self.additional_dirs))

    def may_read(self, path: Path) -> bool:
        """Whether reading `path` needs no approval: inside the workspace, a skill directory, the
        plan file or the system temp dir (decided on real paths, as `in_workspace`)."""
        if self.in_workspace(path):
            return True
        real = real_path(path)
        return any(is_within(real, real_path(root)) for root in (*self.readable, Path(tempfile.gettempdir())))

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
        reads_only: bool = False,
    ) -> Permit:
        """Ask for approval of this call, unless the user's rules, yolo or a session approval of
        `scope` allow it (or `needed` is False, or it `reads_only`, and no rule asks); a `warning`
        always asks, and so does a call whose arguments hold a secret the agent knows
        (`SECRET_IN_ARGUMENTS`). Returns how it came to run. Raises ToolRejectedError if the user
        refused, PermissionDenied if a rule or --afk did."""
        if warning is None and arguments_hold_secret(self.arguments):
            warning = SECRET_IN_ARGUMENTS
        permit = await self.approver.request(
            tool_call_id=self.tool_call_id,
            sender=self.tool_name,
            action=action,
            description=description,
            display=list(display),
            scope=scope,
            warning=warning,
            needed=needed,
            sandbox=sandbox,
            reads_only=reads_only,
        )
        self.started()
        return permit

    def started(self) -> None:
        """The call runs now: say so once (`on_start`). `approve` calls it when the call may go on;
        the toolset calls it before a tool that never asks, and after one that had nothing to ask."""
        on_start, self.on_start = self.on_start, None
        if on_start is not None:
            on_start()


def arguments_hold_secret(arguments: str) -> bool:
    """Whether a call's arguments (the model's JSON) hold a secret the agent knows, in any of
    their values as decoded (`\\u0073k-…` is `sk-…`), percent-decoded too (a URL's `%73k-…`)."""
    if not secrets.any_registered() or not arguments:
        return False
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return secrets.holds_secret(arguments)
    return any(secrets.holds_secret(text) or secrets.holds_secret(unquote(text)) for text in _strings(decoded))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def real_path(path: Path) -> Path:
    """Where `path` leads: every symlink of its existing prefix followed, a missing rest kept as is.

    So a new file under a symlinked directory resolves through the directory, and a dangling link
    resolves to the file it would create.
    """
    return Path(os.path.realpath(path))


def _normpath(p: Path) -> str:
    return os.path.normpath(str(p))


def is_within(path: Path, root: Path) -> bool:
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

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """What the model is offered in this session (`Toolset.specs` asks): the spec, a spec cut to
        what the front end can serve, or None when the tool is not offered (it stays callable, so
        a call gets the tool's own answer)."""
        return self.spec()

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


# What `str.splitlines` ends a line at, for reading a huge text a line at a time.
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def cap_output(text: str, *, max_chars: int = MAX_OUTPUT_CHARS, max_line: int = MAX_LINE_CHARS) -> tuple[str, bool]:
    """Cut over-long lines and the total; returns (text, truncated).

    A text much longer than the cap (an MCP server's 16 MiB answer) is read a line at a time and
    only as far as the cap, never split whole: millions of short lines would cost far more memory
    as a list than the text itself."""
    lines = text.splitlines(keepends=True) if len(text) <= 4 * max_chars else _lines(text, max_line)
    truncated = False
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


def _lines(text: str, max_line: int) -> Iterator[str]:
    """`text.splitlines(keepends=True)`, lazily; a line longer than `max_line` comes as its first
    `max_line + 1` characters plus its line ending (all `cap_output` looks at)."""
    pos, size = 0, len(text)
    while pos < size:
        found = _LINE_END.search(text, pos)
        end = found.end() if found is not None else size
        if end - pos > max_line + 2:
            yield text[pos : pos + max_line + 1] + (found.group() if found is not None else "")
        else:
            yield text[pos:end]
        pos = end
