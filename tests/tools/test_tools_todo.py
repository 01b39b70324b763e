from __future__ import annotations

from typing import TYPE_CHECKING

import pydantic
import pytest

from kimi_acp.tools.todo import SetTodoList
from kimi_acp.wire.types import TodoDisplayBlock, TodoDisplayItem

if TYPE_CHECKING:
    from .conftest import Call, MemoryTodos


async def test_read_empty(call: Call) -> None:
    result = await call(SetTodoList())
    assert not result.is_error and result.output == "Todo list is empty."


async def test_set_then_read(call: Call, todos: MemoryTodos) -> None:
    items = [{"title": "Write code", "status": "done"}, {"title": "Test it", "status": "in_progress"}]
    result = await call(SetTodoList(), todos=items)
    expected = [
        TodoDisplayItem(title="Write code", status="done"),
        TodoDisplayItem(title="Test it", status="in_progress"),
    ]
    assert result.output == "Todo list updated" and result.message == "Todo list updated"
    assert result.display == [TodoDisplayBlock(items=expected)]
    assert todos.items == expected
    result = await call(SetTodoList(), todos=None)
    assert result.output == "Current todo list:\n- [done] Write code\n- [in_progress] Test it"


async def test_set_empty_list_clears(call: Call, todos: MemoryTodos) -> None:
    todos.items = [TodoDisplayItem(title="x", status="pending")]
    await call(SetTodoList(), todos=[])
    assert todos.items == []


@pytest.mark.parametrize("item", [{"title": "", "status": "done"}, {"title": "x", "status": "blocked"}])
def test_invalid_items(item: dict[str, str]) -> None:
    with pytest.raises(pydantic.ValidationError):
        SetTodoList.params.model_validate({"todos": [item]})
