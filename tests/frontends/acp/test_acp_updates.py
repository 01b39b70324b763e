"""UpdateMapper's tool card statuses and ReadFile content, message by message (no process).

The end-to-end view of the same rules is tests/e2e/test_acp_cards.py; here the orders a scripted
model cannot easily produce (a call that starts while the next one streams, answers to other
requests) and cards too long for the UI. A card goes `in_progress` on the core's `ToolStarted`,
nothing else (tests/core/test_tool_started.py: when the core sends it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.core.turn import ToolStarted
from kimi_acp.frontends.acp.convert import UI_TEXT_MAX, code_content, result_content
from kimi_acp.frontends.acp.updates import UpdateMapper
from kimi_acp.wire.types import (
    ApprovalRequest,
    ApprovalResponse,
    FunctionBody,
    ShellDisplayBlock,
    StatusUpdate,
    ToolCall,
    ToolCallPart,
    ToolResult,
    ToolReturnValue,
)
from tests.support.acp_client import load_schemas

CWD = Path("/work/project")


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


@pytest.mark.parametrize("name", ["Shell", "WriteFile", "ReadFile", "SetTodoList", "mcp__server__tool"])
def test_a_card_is_in_progress_when_its_call_starts_and_not_before(name):
    client = Client(UpdateMapper(CWD))
    client.send(call("s1", name, SHELL), StatusUpdate())
    assert client.events == ["pending"]  # complete, yet not running: whether it will ask is not guessed
    client.send(ToolStarted("s1"), ToolResult(tool_call_id="s1", return_value=ok("x")))
    assert client.events == ["pending", "in_progress", "completed"]


def test_a_call_that_never_started_goes_from_pending_to_its_end():
    client = Client(UpdateMapper(CWD))  # e.g. blocked by a PreToolUse hook, or refused by a deny rule
    client.send(call("s1", "Shell", SHELL), ToolResult(tool_call_id="s1", return_value=ToolReturnValue(is_error=True, message="no")))
    assert client.events == ["pending", "failed"]


def test_a_call_that_starts_while_its_arguments_are_open_says_so_with_them():
    client = Client(UpdateMapper(CWD))
    client.send(call("r1", "ReadFile", {}), ToolCallPart(arguments_part=""), ToolStarted("r1"))
    start, started = client.updates
    assert start["status"] == "pending" and started["status"] == "in_progress" and "rawInput" in started


def test_approved_call_runs_only_after_the_answer():
    client = Client(UpdateMapper(CWD))
    client.send(call("s1", "Shell", SHELL), ask("s1"))
    assert client.events == ["pending", "ask"]
    client.send(ApprovalResponse(request_id="q1", response="approve"))
    assert client.events == ["pending", "ask"]  # approved is not yet running: the core says when it starts
    client.send(ToolStarted("s1"))
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


def test_a_call_that_asks_although_approved_for_the_session_is_never_running_before_the_answer():
    """Once, a call the mapper expected to run unasked went `in_progress` and back to `pending`
    when it asked after all (an ask rule, a credentials warning): now nothing is expected."""
    client = Client(UpdateMapper(CWD))
    client.send(call("w1", "WriteFile", {"path": "a.txt", "content": "x"}), StatusUpdate())
    client.send(ask("w1"), ApprovalResponse(request_id="q1", response="approve_for_session"), ToolStarted("w1"))
    assert client.events == ["pending", "ask", "in_progress"]


def test_answers_and_repeated_starts_do_not_move_the_card_again():
    client = Client(UpdateMapper(CWD))
    client.send(call("s1", "Shell", SHELL), ask("s1", "q1"), ApprovalResponse(request_id="other", response="approve"))
    client.send(ApprovalResponse(request_id="q1", response="approve"), ApprovalResponse(request_id="q1", response="approve"))
    client.send(ToolStarted("s1"), ToolStarted("s1"), ToolStarted("unknown"), ToolStarted("s1", agent_id="a1"))
    assert client.events == ["pending", "ask", "in_progress"]


def test_a_call_that_starts_while_the_next_streams_leaves_the_next_one_open():
    """Calls run as soon as their arguments are complete, often while the model still writes the
    next one: that one's card keeps taking its arguments."""
    client = Client(UpdateMapper(CWD))
    client.send(call("a", "Shell", {"command": "ls"}), ToolCall(id="b", function=FunctionBody(name="Shell", arguments='{"comm')))
    client.send(ToolStarted("a"), ToolCallPart(arguments_part='and": "make"}'), ToolStarted("b"))
    b_updates = [u for u in client.updates if u["toolCallId"].endswith("/b")]
    assert b_updates[-1]["status"] == "in_progress" and b_updates[-1]["title"] == "Shell: make"
    assert b_updates[-1]["rawInput"] == {"command": "make"}
    a_updates = [u for u in client.updates if u["toolCallId"].endswith("/a") and "status" in u]
    assert [u["status"] for u in a_updates] == ["pending", "in_progress"]


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
