"""Built-in tools. Importing this package is cheap, and so is naming the tools: a session's tool set
holds `DeferredTool`s, which import their module the first time the tool itself is needed (the
model's tool list, a call). Opening a session thus imports none of the tool modules (figures:
docs/performance.md, Figures that used to live in the code)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Tool

# The default tool set, in the order the model sees it (the reference agent's order):
# name, module in this package, class.
BUILTIN_TOOLS: tuple[tuple[str, str, str], ...] = (
    ("Agent", "subagent", "Agent"),
    ("AskUserQuestion", "question", "AskUserQuestion"),
    ("SetTodoList", "todo", "SetTodoList"),
    ("Shell", "shell", "Shell"),
    ("TaskList", "tasks", "TaskList"),
    ("TaskOutput", "tasks", "TaskOutput"),
    ("TaskStop", "tasks", "TaskStop"),
    ("ReadFile", "read", "ReadFile"),
    ("ReadMediaFile", "media", "ReadMediaFile"),
    ("Glob", "glob", "Glob"),
    ("Grep", "grep", "Grep"),
    ("WriteFile", "write", "WriteFile"),
    ("StrReplaceFile", "replace", "StrReplaceFile"),
    ("SearchWeb", "search", "SearchWeb"),
    ("FetchURL", "fetch", "FetchURL"),
    ("ExitPlanMode", "plan", "ExitPlanMode"),
    ("EnterPlanMode", "plan", "EnterPlanMode"),
)
BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in BUILTIN_TOOLS)


class DeferredTool:
    """A built-in tool not created yet: its name now, the tool on `create()` (a new instance)."""

    __slots__ = ("_class", "_module", "name")

    def __init__(self, name: str, module: str, class_name: str) -> None:
        self.name = name
        self._module = module
        self._class = class_name

    def create(self) -> Tool[Any]:
        module = importlib.import_module(f"{__name__}.{self._module}")
        tool: Tool[Any] = getattr(module, self._class)()
        return tool

    def __repr__(self) -> str:
        return f"DeferredTool({self.name!r})"


def deferred_builtin_tools() -> list[DeferredTool]:
    """The default tool set, each tool created when its session first needs it."""
    return [DeferredTool(*entry) for entry in BUILTIN_TOOLS]


def builtin_tools() -> list[Tool[Any]]:
    """The default tool set, created now."""
    return [deferred.create() for deferred in deferred_builtin_tools()]
