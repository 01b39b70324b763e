"""Built-in tools. Importing this package is cheap; `builtin_tools()` imports the tool modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Tool


def builtin_tools() -> list[Tool]:
    """The default tool set, in the order the model sees it (the reference agent's order)."""
    from .agent import Agent
    from .fetch import FetchURL
    from .glob import Glob
    from .grep import Grep
    from .media import ReadMediaFile
    from .plan import EnterPlanMode, ExitPlanMode
    from .question import AskUserQuestion
    from .read import ReadFile
    from .replace import StrReplaceFile
    from .search import SearchWeb
    from .shell import Shell
    from .tasks import TaskList, TaskOutput, TaskStop
    from .todo import SetTodoList
    from .write import WriteFile

    return [Agent(), AskUserQuestion(), SetTodoList(), Shell(), TaskList(), TaskOutput(), TaskStop(),
            ReadFile(), ReadMediaFile(), Glob(), Grep(), WriteFile(), StrReplaceFile(),
            SearchWeb(), FetchURL(), ExitPlanMode(), EnterPlanMode()]
