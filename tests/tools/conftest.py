"""Real files in a tmp work dir, LocalKaos, and recording fakes for approval and todos."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.kaos.local import LocalKaos
from kimi_acp.llm.types import ToolSpec
from kimi_acp.tools.base import Tool, ToolContext, ToolEnv
from kimi_acp.wire.types import TodoDisplayItem, ToolReturnValue
from tests.support.approver import ApprovalCall, FakeApprover  # noqa: F401  (tests import them from here)
from tests.support.processes import pid_alive


@dataclass
class MemoryTodos:
    items: list[TodoDisplayItem] = field(default_factory=list)

    def get_todos(self) -> list[TodoDisplayItem]:
        return list(self.items)

    def set_todos(self, items: list[TodoDisplayItem]) -> None:
        self.items = list(items)


class InSession:
    """A tool run as a session's toolset runs it: each call's context carries the session's
    `ToolEnv` (the front end's support, the model's capabilities, the config's services)."""

    def __init__(self, tool: Tool[Any], env: ToolEnv) -> None:
        self.tool, self.env = tool, env
        self.name, self.params = tool.name, tool.params

    @property
    def offered(self) -> ToolSpec | None:
        return self.tool.offer(self.env)

    async def run(self, params: Any, ctx: ToolContext) -> ToolReturnValue:
        return await self.tool.run(params, dataclasses.replace(ctx, env=self.env))


@pytest.fixture
def approver() -> FakeApprover:
    return FakeApprover()


@pytest.fixture
def todos() -> MemoryTodos:
    return MemoryTodos()


@pytest.fixture
def ctx(work_dir: Path, approver: FakeApprover, todos: MemoryTodos) -> ToolContext:
    return ToolContext(
        work_dir=work_dir,
        kaos=LocalKaos(),
        tool_call_id="call-1",
        approver=approver,
        todos=todos,
        tool_name="TestTool",
    )


Call = Callable[..., Awaitable[ToolReturnValue]]


@pytest.fixture
def call(ctx: ToolContext) -> Call:
    """Validate arguments like the dispatcher does (aliases included), then run the tool."""

    async def _call(tool: Tool[Any], **arguments: Any) -> ToolReturnValue:
        params = tool.params.model_validate(arguments)
        return await tool.run(params, ctx)

    return _call


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return pid_alive
