"""`ToolStarted` (core/turn.py): the core says once when a call runs, after its approval if it asked,
and never for a call that did not run; it is internal, so no session file and no Wire client sees
it (tests/e2e/test_wire_tool_started.py: over a real `kimi --wire` process)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore, FromUser
from kimi_acp.core.toolset import Toolset
from kimi_acp.core.turn import INTERNAL_SIGNALS, ToolStarted
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.subagents.runner import _Forwarder
from kimi_acp.tools import builtin_tools
from kimi_acp.tools.base import Params, Tool, ToolContext, tool_ok
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    FunctionBody,
    SubagentEvent,
    ToolCall,
    ToolCallPart,
    ToolResult,
    ToolReturnValue,
)
from tests.support.wire_client import tool_call


def scripted_core(tmp_path: Path, work_dir: Path, scripts: list[str], **permissions: Any) -> AgentCore:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps(scripts))
    config = {
        "default_model": "a",
        "permissions": {"always_ask": True, **permissions},  # Shell commands ask, `echo` too
        "models": {"a": {"provider": "p", "model": "scripted_echo", "max_context_size": 100000}},
        "providers": {"p": {"type": "_scripted_echo", "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(path)}}},
    }
    session = sessions.create(work_dir)
    return AgentCore.open(session=session, loaded_config=load_config(config_text=json.dumps(config)), kaos=LocalKaos())


async def run_turn(core: AgentCore, answers: dict[str, str], on_start: Any = None) -> list[Any]:
    """One turn; approval requests are answered by call id (`answers`); every message is kept, and
    `on_start(message)` sees each ToolStarted as it is sent."""
    seen: list[Any] = []

    def on_message(message: Any) -> None:
        seen.append(message)
        if isinstance(message, ToolStarted) and on_start is not None:
            on_start(message)
        if isinstance(message, ApprovalRequest):
            answer = ApprovalResponse(request_id=message.id, response=answers[message.tool_call_id])  # type: ignore[arg-type]
            asyncio.get_running_loop().call_soon(message.resolve, answer)

    unsubscribe = core.stream.subscribe(on_message)
    try:
        await core.run_turn(FromUser("go"))
    finally:
        unsubscribe()
        await core.close()
    return seen


def timeline(seen: list[Any], call_id: str) -> list[str]:
    """What happened to one call, in order: asked, answered, started, ended."""
    asked = {m.id for m in seen if isinstance(m, ApprovalRequest) and m.tool_call_id == call_id}
    events = []
    for message in seen:
        if isinstance(message, ApprovalRequest) and message.tool_call_id == call_id:
            events.append("asked")
        elif isinstance(message, ApprovalResponse) and message.request_id in asked:
            events.append(message.response)
        elif isinstance(message, ToolStarted) and message.tool_call_id == call_id:
            events.append("started")
        elif isinstance(message, ToolResult) and message.tool_call_id == call_id:
            events.append("failed" if message.return_value.is_error else "done")
    return events


async def test_each_call_that_runs_starts_once_after_its_approval_and_no_other_does(tmp_path: Path, work_dir: Path) -> None:
    (work_dir / "notes.txt").write_text("hello\n")
    (work_dir / ".env").write_text("TOKEN=abc\n")
    calls = "\n".join([
        tool_call("approved", "Shell", {"command": "touch ran.txt"}),
        tool_call("rejected", "Shell", {"command": "echo no"}),
        tool_call("todo", "SetTodoList", {"todos": [{"title": "a", "status": "done"}]}),  # never asks
        tool_call("read", "ReadFile", {"path": "notes.txt"}),  # may ask; inside the workspace it need not
        tool_call("secret", "ReadFile", {"path": ".env"}),  # asks with a warning; rejected
        tool_call("denied", "Shell", {"command": "rm -rf build"}),  # refused by a rule, unasked
        tool_call("invalid", "ReadFile", {"nope": 1}),
        tool_call("unknown", "NoSuchTool", {}),
        tool_call("empty", "Shell", {"command": " "}),  # ran, and had nothing to ask: an error of its own
    ])  # fmt: skip
    core = scripted_core(tmp_path, work_dir, [calls, "text: done"], deny=["Shell(rm:*)"])
    ran_before_start: list[bool] = []

    def on_start(message: ToolStarted) -> None:
        if message.tool_call_id == "approved":
            ran_before_start.append((work_dir / "ran.txt").exists())

    seen = await run_turn(core, {"approved": "approve", "rejected": "reject", "secret": "reject"}, on_start)
    assert ran_before_start == [False] and (work_dir / "ran.txt").exists()  # said before it ran, not after
    assert timeline(seen, "approved") == ["asked", "approve", "started", "done"]
    assert timeline(seen, "rejected") == ["asked", "reject", "failed"]
    assert timeline(seen, "todo") == ["started", "done"]
    assert timeline(seen, "read") == ["started", "done"]
    assert timeline(seen, "secret") == ["asked", "reject", "failed"]
    for call_id in ("denied", "invalid", "unknown"):
        assert timeline(seen, call_id) == ["failed"], call_id
    assert timeline(seen, "empty") == ["started", "failed"]
    assert all(m.agent_id is None for m in seen if isinstance(m, ToolStarted))


async def test_a_call_cancelled_while_asking_never_starts(tmp_path: Path, work_dir: Path) -> None:
    core = scripted_core(tmp_path, work_dir, [tool_call("c1", "Shell", {"command": "echo hi"}), "text: unused"])
    seen: list[Any] = []

    def on_message(message: Any) -> None:
        seen.append(message)
        if isinstance(message, ApprovalRequest):
            asyncio.get_running_loop().call_soon(core.cancel)

    core.stream.subscribe(on_message)
    assert (await core.run_turn(FromUser("go"))).status == "cancelled"
    await core.close()
    assert timeline(seen, "c1") == ["asked", "reject", "failed"]


async def test_tool_started_is_internal_and_never_recorded(tmp_path: Path, work_dir: Path) -> None:
    core = scripted_core(tmp_path, work_dir, [tool_call("t1", "SetTodoList", {"todos": []}), "text: done"])
    seen = await run_turn(core, {})
    assert [m for m in seen if isinstance(m, ToolStarted)] == [ToolStarted("t1")]
    assert ToolStarted in INTERNAL_SIGNALS
    recorded = core.session.wire_file.read_text()
    assert "SetTodoList" in recorded and "ToolStarted" not in recorded and '"t1"' in recorded


# --------------------------------------------------------------------------- the toolset alone


class Boom(Tool[Params]):
    name = "Boom"
    description = "fails"
    params = Params

    async def run(self, params: Params, ctx: ToolContext) -> ToolReturnValue:
        raise RuntimeError("boom")


class Quiet(Tool[Params]):
    name = "Quiet"
    description = "asks nothing, and no facts say it never asks"
    params = Params

    async def run(self, params: Params, ctx: ToolContext) -> ToolReturnValue:
        return tool_ok("fine")


async def test_the_toolset_starts_a_call_once_whatever_its_tool_does(tmp_path: Path) -> None:
    started: list[str] = []

    def context(name: str) -> ToolContext:
        ctx = ToolContext(work_dir=tmp_path, kaos=LocalKaos(), tool_call_id="x", approver=None, todos=None)  # type: ignore[arg-type]
        ctx.on_start = lambda: started.append(name)
        return ctx

    toolset = Toolset([Boom(), Quiet()])
    for name in ("Boom", "Quiet"):
        outcome = await toolset.handle(ToolCall(id=name, function=FunctionBody(name=name, arguments="{}")), context)
        assert outcome.result.is_error is (name == "Boom")
    assert started == ["Boom", "Quiet"]  # a crash ran too; a tool of unknown facts that never asked: at its end
    toolset.register_external("ClientTool", "the client runs it", {"type": "object"})
    assert not toolset.facts("ClientTool").asks and toolset.facts("Quiet").asks


def test_every_builtin_tool_that_never_asks_is_started_before_it_runs() -> None:
    toolset = Toolset(builtin_tools())
    never = {name for name in toolset.names() if not toolset.facts(name).asks}
    assert never == {"Agent", "AskUserQuestion", "SetTodoList", "TaskList", "TaskOutput", "EnterPlanMode", "ExitPlanMode"}


# --------------------------------------------------------------------------- a subagent's calls


class FakeRoot:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.stream = self

    def send(self, message: Any) -> None:
        self.sent.append(message)


def _call(call_id: str, arguments: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name="Shell", arguments=arguments))


@pytest.mark.parametrize("next_streams", [False, True])
def test_a_subagents_call_starts_on_the_roots_stream_after_the_whole_call(next_streams: bool) -> None:
    root = FakeRoot()
    forward = _Forwarder(root, "parent", "a1", "explore")  # type: ignore[arg-type]
    forward(_call("c1", '{"command":'))
    forward(ToolCallPart(arguments_part=' "ls"}'))
    if next_streams:  # the next call is being written while c1 starts: it is not cut short
        forward(_call("c2", '{"comm'))
    forward(ToolStarted("c1"))
    forward(ToolCallPart(arguments_part='and": "make"}'))
    forward.flush()
    kinds = [type(m).__name__ for m in root.sent]
    assert kinds == ["SubagentEvent", "ToolStarted", "SubagentEvent"] if next_streams else ["SubagentEvent", "ToolStarted"]
    first = root.sent[0]
    assert isinstance(first, SubagentEvent) and first.event.payload["function"]["arguments"] == '{"command": "ls"}'
    assert root.sent[1] == ToolStarted("c1", agent_id="a1")
    if next_streams:
        assert root.sent[2].event.payload["function"]["arguments"] == '{"command": "make"}'
