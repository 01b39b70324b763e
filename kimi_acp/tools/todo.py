"""SetTodoList: the model's visible plan for the current task."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..wire.types import TodoDisplayBlock, TodoDisplayItem, ToolReturnValue
from .base import Params, Tool, ToolContext, tool_ok


class Todo(Params):
    title: str = Field(min_length=1, description="What to do, in a few words.")
    status: Literal["pending", "in_progress", "done"] = Field(description="pending, in_progress or done.")


class SetTodoListParams(Params):
    todos: list[Todo] | None = Field(
        default=None,
        description=(
            "The complete new list (it replaces the old one). Omit or pass null to read the current list."
        ),
    )


class SetTodoList(Tool[SetTodoListParams]):
    name = "SetTodoList"
    description = (
        "Keep a todo list for multi-step work; the user sees it. Pass the complete list every time (it "
        "replaces the previous one), each item with a short `title` and a `status` (`pending`, "
        "`in_progress` or `done`). Keep at most one item `in_progress` and mark items `done` as soon as "
        "they are finished. Call with no `todos` to read the current list. Skip it for simple one-step tasks."
    )
    params = SetTodoListParams

    async def run(self, params: SetTodoListParams, ctx: ToolContext) -> ToolReturnValue:
        if params.todos is None:
            current = ctx.todos.get_todos()
            if not current:
                return tool_ok("Todo list is empty.", message="Todo list is empty.")
            listing = "\n".join(f"- [{item.status}] {item.title}" for item in current)
            return tool_ok(f"Current todo list:\n{listing}", message="Current todo list")
        items = [TodoDisplayItem(title=todo.title, status=todo.status) for todo in params.todos]
        ctx.todos.set_todos(items)
        return tool_ok(
            "Todo list updated",
            message="Todo list updated",
            display=[TodoDisplayBlock(items=items)],
        )
