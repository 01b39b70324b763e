"""UpdateMapper's tool card statuses and ReadFile content, message by message (no process).

The end-to-end view of the same rules is tests/e2e/test_acp_cards.py; here the cases a scripted
model cannot easily produce: YOLO and session approvals known to the mapper, a call expected to run
unasked that asks after all, and cards too long for the UI.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.frontends.acp import convert
from kimi_acp.frontends.acp.convert import RUNS_WITHOUT_APPROVAL, UI_TEXT_MAX, code_content, result_content
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.tools import builtin_tools
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    FunctionBody,
    ShellDisplayBlock,
    StatusUpdate,
    ToolCall,
    ToolResult,
    ToolReturnValue,
)
from tests.support.acp_client import load_schemas

CWD = Path("/work/project")


@dataclass
class FakeApprovals:
    yolo: bool = False
    session_actions: frozenset[str] = field(default_factory=frozenset)
    always_ask: bool = False


def call(llm_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=llm_id, function=FunctionBody(name=name, arguments=json.dumps(arguments)))


def ask(llm_id: str, request_id: str = "q1") -> ApprovalRequest:
    return ApprovalRequest(
        id=request_id, tool_call_id=llm_id, sender="Shell", action="run command", description="Run command `ls`",
        display=[ShellDisplayBlock(language="bash", command="ls")],
    )


def ok(output: str = "", message: str = "") -> ToolReturnValue:
    return ToolReturnValue(is_error=False, output=output, message=message)


class Client:
    """Feeds the mapper like AcpSession does and keeps every update, checked against the schema."""

    def __init__(self, mapper: UpdateMapper) -> None:
        self.mapper = mapper
        self.updates: list[dict[str, Any]] = []
        self.events: list[str] = []  # statuses, and "ask" where a permission request would go out

    def _keep(self, updates: list[dict[str, Any]]) -> None:
        for update in updates:
            problems = load_schemas().validate("SessionNotification", {"sessionId": "s", "update": update})
            assert not problems, problems
            self.updates.append(update)
            if "status" in update:
                self.events.append(update["status"])

    def send(self, *messages: Any) -> None:
        for message in messages:
            if isinstance(message, ApprovalRequest):
                self._keep(self.mapper.approval_requested(message))
                assert self.mapper.permission_tool_call(message)["status"] == "pending"
                self.events.append("ask")
            else:
                self._keep(self.mapper.map(message))

    def terminal(self, llm_id: str) -> None:
        self._keep([self.mapper.terminal_attached(llm_id, "term-1")])


SHELL = {"command": "make"}


@pytest.mark.parametrize(
    ("approvals", "expected"),
    [
        (None, ["pending", "completed"]),  # may ask: not "running" before we know
        (FakeApprovals(yolo=True), ["pending", "in_progress", "completed"]),
        (FakeApprovals(session_actions=frozenset({"run command:exactly=make"})), ["pending", "in_progress", "completed"]),
        (FakeApprovals(session_actions=frozenset({"run command:make"})), ["pending", "completed"]),  # not a form: exact only
        (FakeApprovals(session_actions=frozenset({"run command"})), ["pending", "completed"]),  # covers nothing now
        (FakeApprovals(session_actions=frozenset({"edit file"})), ["pending", "completed"]),
    ],
)
def test_a_shell_call_that_is_not_asked_about(approvals, expected):
    client = Client(UpdateMapper(CWD, approvals=approvals))
    client.send(call("s1", "Shell", SHELL), StatusUpdate(), ToolResult(tool_call_id="s1", return_value=ok("x")))
    assert client.events == expected


@pytest.mark.parametrize(("always_ask", "expected"), [(False, ["pending", "in_progress", "completed"]), (True, ["pending", "completed"])])
def test_a_read_only_command_runs_at_once_unless_the_session_asks_always(always_ask, expected):
    client = Client(UpdateMapper(CWD, approvals=FakeApprovals(always_ask=always_ask)))
    client.send(call("s1", "Shell", {"command": "ls -la"}), StatusUpdate(), ToolResult(tool_call_id="s1", return_value=ok("x")))
    assert client.events == expected


def test_approved_call_runs_only_after_the_answer():
    client = Client(UpdateMapper(CWD))
    client.send(call("s1", "Shell", SHELL), ask("s1"))
    assert client.events == ["pending", "ask"]
    client.send(ApprovalResponse(request_id="q1", response="approve"))
    client.terminal("s1")
    client.send(ToolResult(tool_call_id="s1", return_value=ok()))
    assert client.events == ["pending", "ask", "in_progress", "in_progress", "completed"]


def test_rejected_call_fails_without_running():
    client = Client(UpdateMapper(CWD))
    client.send(
        call("s1", "Shell", SHELL),
        ask("s1"),
        ApprovalResponse(request_id="q1", response="reject"),
        ToolResult(tool_call_id="s1", return_value=ToolReturnValue(is_error=True, message="Rejected")),
    )
    assert client.events == ["pending", "ask", "failed"]


def test_a_call_expected_to_run_unasked_that_asks_goes_back_to_pending():
    approvals = FakeApprovals(yolo=True)
    client = Client(UpdateMapper(CWD, approvals=approvals))
    client.send(call("w1", "WriteFile", {"path": "a.txt", "content": "x"}), StatusUpdate())
    approvals.yolo = False  # turned off while the call was starting
    client.send(ask("w1"), ApprovalResponse(request_id="q1", response="approve_for_session"))
    assert client.events == ["pending", "in_progress", "pending", "ask", "in_progress"]


def test_answers_to_other_requests_do_not_move_the_card():
    client = Client(UpdateMapper(CWD))
    client.send(call("s1", "Shell", SHELL), ask("s1", "q1"), ApprovalResponse(request_id="other", response="approve"))
    client.send(ApprovalResponse(request_id="q1", response="approve"), ApprovalResponse(request_id="q1", response="approve"))
    assert client.events == ["pending", "ask", "in_progress"]


def test_replay_shows_no_intermediate_status():
    client = Client(UpdateMapper(CWD, replay=True))
    client.send(call("r1", "ReadFile", {"path": "a.txt"}), ToolResult(tool_call_id="r1", return_value=ok("     1\ta\n")))
    assert client.events == ["pending", "completed"]


def test_read_file_result_shows_the_numbered_lines_and_the_first_line_read():
    client = Client(UpdateMapper(CWD))
    output = "     8\tentry 8\n     9\tentry 9\n    10\tentry 10\n"
    client.send(
        call("r1", "ReadFile", {"path": "logs/../log.txt", "line_offset": -3}),
        ToolResult(tool_call_id="r1", return_value=ok(output, "Read 3 lines (8-10) of 10. End of file reached.")),
    )
    start, running, final = client.updates
    assert start["locations"] == [{"path": "/work/project/log.txt"}]  # a tail: the line is not known yet
    assert final["locations"] == [{"path": "/work/project/log.txt", "line": 8}]
    code, message = (c["content"]["text"] for c in final["content"])
    assert code == "```\n" + output.rstrip("\n") + "\n```"
    assert message == "Read 3 lines (8-10) of 10. End of file reached."


def test_read_file_errors_and_empty_files_show_the_message_only():
    error = ToolReturnValue(is_error=True, message="`/x` does not exist.")
    assert result_content("ReadFile", error, terminal_shown=False) == [
        {"type": "content", "content": {"type": "text", "text": "`/x` does not exist."}}
    ]
    empty = ok("", "The file is empty.")
    assert [c["content"]["text"] for c in result_content("ReadFile", empty, terminal_shown=False)] == ["The file is empty."]


def test_code_content_fence_is_longer_than_any_backtick_run():
    text = code_content("a ``` b\n`````\n")["content"]["text"]
    assert text == "``````\na ``` b\n`````\n``````"


def test_code_content_cuts_long_text_at_a_line_and_still_closes_the_fence():
    lines = [f"{n:6d}\t{'x' * 90}" for n in range(1, 1001)]
    text = code_content("\n".join(lines) + "\n")["content"]["text"]
    body, note = text.rsplit("\n```", 1)
    assert len(body) <= UI_TEXT_MAX + 4 and body.startswith("```\n")
    assert body.splitlines()[-1] in lines  # whole lines only
    shown = len(body.splitlines()) - 1
    assert note == f"\n[... {1000 - shown} more lines ({len(chr(10).join(lines[shown:]))} characters) not shown]"


def test_every_tool_that_asks_for_approval_stays_pending_until_approved():
    """A tool whose code always asks (`ctx.approve`, or the edit and fetch permits) must not be one
    that goes in_progress unasked; the readers (`permit_read`) ask only outside the workspace or
    for a credentials file, and may."""
    tools = builtin_tools()
    for tool in tools:
        module = inspect.getmodule(type(tool))
        shared = sum(inspect.getmodule(type(t)) is module for t in tools) > 1  # e.g. tools/tasks.py
        source = inspect.getsource(type(tool) if shared else module)
        asks = any(call in source for call in ("ctx.approve(", "permit_edit(", "permit_fetch("))
        assert asks == (tool.name not in RUNS_WITHOUT_APPROVAL), tool.name
        if asks:
            assert tool.name in convert.APPROVAL_ACTIONS, tool.name


# --------------------------------------------------------------------------- background subagents across turns

def _sub(event: Any, agent: str = "a1", parent: str = "bg") -> Any:
    from kimi_acp.wire.serde import to_envelope
    from kimi_acp.wire.types import SubagentEvent, WireEnvelope

    return SubagentEvent(parent_tool_call_id=parent, agent_id=agent, subagent_type="explore",
                         event=WireEnvelope.model_validate(to_envelope(event)))


def _started(task_id: str = "agent-1", status: str = "running") -> ToolReturnValue:
    from kimi_acp.wire.types import BackgroundTaskDisplayBlock

    block = BackgroundTaskDisplayBlock(task_id=task_id, kind="agent", status=status, description="look around")
    return ToolReturnValue(is_error=False, output="task_id: agent-1", message="Background agent started.", display=[block])


def _block(status: str) -> Any:
    from kimi_acp.wire.types import BackgroundTaskDisplayBlock

    return BackgroundTaskDisplayBlock(task_id="agent-1", kind="agent", status=status, description="look around")


def test_a_background_subagent_keeps_its_cards_and_parent_across_turns():
    from kimi_acp.wire.types import TextPart, TurnBegin

    mapper = UpdateMapper(CWD)
    client = Client(mapper)
    mapper.begin_turn()
    client.send(TurnBegin(user_input="go"), call("bg", "Agent", {"description": "look around", "prompt": "p",
                                                                 "run_in_background": True}),
                ToolResult(tool_call_id="bg", return_value=_started()))
    parent = client.updates[0]["toolCallId"]
    assert "**running**" in json.dumps(client.updates[-1]["content"])
    client.send(_sub(call("h1", "Shell", SHELL)))  # still in the turn that started it
    h1 = client.updates[-2]["toolCallId"]
    client.send(_sub(TextPart(text="Looking.")))
    progress = client.updates[-1]
    assert progress["toolCallId"] == parent and "Looking." in json.dumps(progress["content"])
    assert "**running**" in json.dumps(progress["content"])
    mapper.begin_turn()  # the next prompt: the root model reuses the id "bg" for a new call
    client.send(TurnBegin(user_input="again"), call("bg", "Glob", {"pattern": "*"}), call("h1", "Shell", SHELL))
    client.send(_sub(ToolResult(tool_call_id="h1", return_value=ok("done"))), _sub(call("h2", "Shell", SHELL)))
    assert [u["toolCallId"] for u in client.updates if u.get("status") == "completed"][-1] == h1
    (h2_card,) = [u for u in client.updates if u["sessionUpdate"] == "tool_call" and u.get("_meta")][1:]
    assert h2_card["_meta"]["kimi"]["parentToolCallId"] == parent  # not the new "bg" card
    assert mapper.task_ended(_block("completed")) == [{
        "sessionUpdate": "tool_call_update", "toolCallId": parent,
        "content": [{"type": "content", "content": {"type": "text", "text": "- look around (`agent-1`, agent): **completed**"}}],
    }]
    assert mapper.task_ended(_block("completed")) == []  # once
    client.send(_sub(TextPart(text="Late words.")))
    assert "Late words." not in json.dumps(client.updates)  # the card shows the task's end now


def test_a_task_that_ended_before_its_card_shows_its_end():
    mapper = UpdateMapper(CWD, task_state=lambda task_id: _block("failed"))
    client = Client(mapper)
    client.send(call("bg", "Agent", {"description": "look around", "prompt": "p"}),
                ToolResult(tool_call_id="bg", return_value=_started()))
    assert "**failed**" in json.dumps(client.updates[-1]["content"])
    assert mapper.task_ended(_block("failed")) == []


def test_after_a_replay_live_updates_use_the_replayed_ids():
    from kimi_acp.wire.types import TurnBegin

    live, replayed = UpdateMapper(CWD), UpdateMapper(CWD, replay=True)
    messages = [TurnBegin(user_input="go"), call("bg", "Agent", {"description": "look around", "prompt": "p"}),
                ToolResult(tool_call_id="bg", return_value=_started()), _sub(call("h1", "Shell", SHELL))]
    live.begin_turn()
    for message in messages:
        live.map(message)
    replay_updates = [u for message in messages for u in replayed.map(message)]
    live.follow(replayed)
    ids = {u["toolCallId"] for u in replay_updates if "toolCallId" in u}
    (result,) = live.map(_sub(ToolResult(tool_call_id="h1", return_value=ok("x"))))
    assert result["toolCallId"] in ids
    (end,) = live.task_ended(_block("completed"))
    assert end["toolCallId"] in ids
