"""ChildSessions message by message (no process): the orders a scripted model cannot choose.

A background subagent's first event and its Agent call's "started" result race (the job may start
before the result is sent, or after), and a replay meets them in the recorded order but learns the
task's end only from the task table. Each order must announce the child once, before its traffic,
and end its run once, with the report its task returned. The end-to-end view is
tests/e2e/test_acp_child_sessions.py. Every update is checked against the vendored schema.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kimi_acp.frontends.acp.children import ChildSessions, refuse_child_request, split_child_id
from kimi_acp.kaos.tasks import TaskTable
from kimi_acp.wire.serde import to_envelope
from kimi_acp.wire.types import (
    BackgroundTaskDisplayBlock,
    SubagentEvent,
    TextPart,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    WireEnvelope,
)
from tests.support.acp_client import load_schemas

PARENT = "parent-session"
REPORT = "The project has one file."


def wrapped(message: Any) -> SubagentEvent:
    envelope = WireEnvelope.model_validate(to_envelope(message))
    return SubagentEvent(parent_tool_call_id="call-1", agent_id="a1234567", subagent_type="explore", event=envelope)


def started(task_id: str) -> ToolResult:
    block = BackgroundTaskDisplayBlock(task_id=task_id, kind="agent", status="running", description="look around")
    return ToolResult(tool_call_id="call-1", return_value=ToolReturnValue(is_error=False, output="started", message="", display=[block]))


class Client:
    """What the session would send, as (session id, update), each checked against the schema."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.schemas = load_schemas()

    def send(self, session_id: str, update: Any) -> None:
        assert self.schemas.validate("SessionNotification", {"sessionId": session_id, "update": update}) == []
        self.sent.append((session_id, update))

    def states(self) -> list[str]:
        return [":".join(filter(None, (u["state"]["state"], u["state"].get("stopReason"))))
                for sid, u in self.sent if u["sessionUpdate"] == "subagent_update" and "state" in u]


async def background_run(tmp_path: Path, *, result_first: bool, replay: bool) -> tuple[Client, ChildSessions, str]:
    tasks = TaskTable(tmp_path / "tasks")
    core = SimpleNamespace(work_dir=tmp_path, session=SimpleNamespace(dir=tmp_path), subagents=None, tasks=tasks)
    client = Client()
    children = ChildSessions(PARENT, core, client.send, card_id=lambda llm_id: f"turn/{llm_id}", replay=replay)  # type: ignore[arg-type]
    task = await tasks.launch_job(
        lambda: asyncio.sleep(0, REPORT), kind="agent", description="look around", command="explore", timeout_s=10
    )
    first_event = wrapped(TurnBegin(user_input="Describe the project."))
    order = [started(task.id), first_event] if result_first else [first_event, started(task.id)]
    for message in [*order, wrapped(TextPart(text=REPORT))]:
        children.take(message, 1_700_000_000.25)
    await tasks.wait(task.id, 5)
    if replay:
        children.finish()
    else:
        children.task_ended(task)
    return client, children, task.id


@pytest.mark.parametrize("result_first", [True, False], ids=["result-first", "event-first"])
@pytest.mark.parametrize("replay", [False, True], ids=["live", "replay"])
async def test_a_background_run_is_announced_once_and_ends_once_with_its_report(tmp_path: Path, result_first: bool, replay: bool):
    client, _, _ = await background_run(tmp_path, result_first=result_first, replay=replay)
    child = f"{PARENT}/subagents/a1234567"
    (announce,) = [(i, u) for i, (_, u) in enumerate(client.sent) if u["sessionUpdate"] == "subagent_update" and "title" in u]
    assert announce[0] == 0 and announce[1]["sessionId"] == child  # before any of the child's traffic
    assert client.states() == ["running", "idle:end_turn"]
    messages = [(u["senderSessionId"], u["recipientSessionId"], u["content"][0]["text"]) for sid, u in client.sent
                if sid == child and u["sessionUpdate"] == "session_message"]
    assert messages == [(PARENT, child, "Describe the project."), (child, PARENT, REPORT)]
    ids = [u["messageId"] for _, u in client.sent if u["sessionUpdate"] == "session_message"]
    assert ids == ["60a2418221090-task", "60a2418221090-result"]  # from the recorded time: a replay repeats them


def test_child_ids_and_the_one_method_a_child_takes() -> None:
    assert split_child_id("p1/subagents/a1") == ("p1", "a1")
    for other in ("p1", "p1/subagents/", "/subagents/a1", "p1/subagents/a1/x", None, 7):
        assert split_child_id(other) is None
    refuse_child_request("session/cancel", {"sessionId": "p1/subagents/a1"})
    refuse_child_request("session/prompt", {"sessionId": "p1"})
    for method in ("session/prompt", "session/load", "session/set_mode", "session/close"):
        with pytest.raises(Exception) as refused:
            refuse_child_request(method, {"sessionId": "p1/subagents/a1"})
        assert getattr(refused.value, "code", None) == -32602 and "only session/cancel applies" in str(refused.value.data)
