"""`kimi --wire` driven as a client would: turns, approvals, tools, steer, cancel, replay, sessions
(served in this process, tests/support/inmemory.py; an option error's exit code from a process)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from kimi_acp.sessions import find, work_dir_key
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import event_types, events, text_of, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def session_dir(share_dir: Path, work_dir: Path) -> Path:
    (directory,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return directory


def context_lines(share_dir: Path, work_dir: Path) -> list[dict]:
    path = session_dir(share_dir, work_dir) / "context.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def wire_records(share_dir: Path, work_dir: Path) -> list[dict]:
    path = session_dir(share_dir, work_dir) / "wire.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.smoke
async def test_text_turn_streams_chunks_and_records_them_merged(start_wire, share_dir, work_dir):
    wire = await start_wire(["text: Hello\ntext: , world\nusage: input_other=7 output=3 input_cache_read=2"])
    init, _ = await wire.call("initialize", INIT)
    assert init["result"]["protocol_version"] == "1.10"
    assert {c["name"] for c in init["result"]["slash_commands"]} >= {"clear", "yolo"}
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    assert event_types(seen) == ["TurnBegin", "StepBegin", "ContentPart", "ContentPart", "StatusUpdate", "TurnEnd"]
    assert text_of(seen) == "Hello, world"
    status = events(seen, "StatusUpdate")[0]["payload"]
    assert status["context_tokens"] == 9 and status["max_context_tokens"] == 100_000
    assert status["token_usage"] == {"input_other": 7, "output": 3, "input_cache_read": 2, "input_cache_creation": 0}
    records = wire_records(share_dir, work_dir)
    assert records[0] == {"type": "metadata", "protocol_version": "1.10"}
    parts = [r["message"] for r in records[1:] if r["message"]["type"] == "ContentPart"]
    assert parts == [{"type": "ContentPart", "payload": {"type": "text", "text": "Hello, world"}}]
    roles = [line["role"] for line in context_lines(share_dir, work_dir)]
    assert roles[0] == "_system_prompt" and "user" in roles and roles.count("assistant") == 1
    assert await wire.close() == 0


@pytest.mark.smoke
async def test_shell_call_approved_runs_and_continues(start_wire, share_dir, work_dir):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo approved-output"}), "text: done"])
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "run it"})
    request, before = await wire.next_request()
    assert "ToolCall" in event_types(before)
    payload = request["params"]["payload"]
    assert request["params"]["type"] == "ApprovalRequest"
    assert request["id"] == payload["id"]
    assert payload["sender"] == "Shell" and payload["action"] == "run command"
    assert payload["tool_call_id"] == "tc-1"
    assert payload["description"] == "Run command `echo approved-output`"
    assert payload["display"] == [{"type": "shell", "language": "bash", "command": "echo approved-output"}]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    assert events(seen, "ApprovalResponse")[0]["payload"]["response"] == "approve"
    result = events(seen, "ToolResult")[0]["payload"]
    assert result["tool_call_id"] == "tc-1" and not result["return_value"]["is_error"]
    assert "approved-output" in result["return_value"]["output"]
    assert [e["payload"]["n"] for e in events(seen, "StepBegin")] == [2]
    assert text_of(seen) == "done"
    tool_msgs = [line for line in context_lines(share_dir, work_dir) if line["role"] == "tool"]
    assert "approved-output" in json.dumps(tool_msgs)


async def test_rejection_without_feedback_ends_the_turn(start_wire, share_dir, work_dir):
    marker = work_dir / "should-not-exist"
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": f"touch {marker}"}), "text: never"])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "reject"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    assert "StepBegin" not in event_types(seen)  # no second step
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert result["is_error"] and "rejected by the user" in result["message"]
    assert not marker.exists()


async def test_rejection_with_feedback_lets_the_model_continue(start_wire, share_dir, work_dir):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "rm -rf build"}), "text: ok, using ls"])
    prompt_id = await wire.request("prompt", {"user_input": "clean"})
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "reject", "feedback": "use ls instead"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    assert events(seen, "ApprovalResponse")[0]["payload"]["feedback"] == "use ls instead"
    assert [e["payload"]["n"] for e in events(seen, "StepBegin")] == [2]
    assert text_of(seen) == "ok, using ls"
    assert "User feedback: use ls instead" in json.dumps(context_lines(share_dir, work_dir))


@pytest.mark.smoke
async def test_approve_for_session_is_remembered_across_turns_and_restarts(start_wire, tmp_path, share_dir, work_dir):
    scripts = [
        tool_call("a", "Shell", {"command": "ls -a"}) + "\n" + tool_call("b", "Shell", {"command": "ls -l"}),
        "text: both done",
        tool_call("c", "Shell", {"command": "ls -t"}),
        "text: third done",
    ]
    wire = await start_wire(scripts)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    assert request["params"]["payload"]["session_scope"] == "`ls …`"
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve_for_session"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    # The second call ran concurrently; its pending request was settled by the session approval
    # without the client answering it.
    second = [m["params"]["payload"]["id"] for m in seen if m.get("method") == "request"]
    responses = {e["payload"]["request_id"]: e["payload"]["response"] for e in events(seen, "ApprovalResponse")}
    assert all(responses[rid] == "approve" for rid in second)
    assert len(events(seen, "ToolResult")) == 2
    assert not any(e["payload"]["return_value"]["is_error"] for e in events(seen, "ToolResult"))
    state = json.loads((session_dir(share_dir, work_dir) / "state.json").read_text())
    assert state["approval"]["auto_approve_actions"] == ["run command:ls"]
    response, seen = await wire.call("prompt", {"user_input": "again"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]
    session_id = session_dir(share_dir, work_dir).name
    await wire.close()

    # A new process on the same session still has the approval.
    wire2 = await start_wire([tool_call("d", "Shell", {"command": "ls"}), "text: fine"], "--session", session_id)
    response, seen = await wire2.call("prompt", {"user_input": "once more"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]


async def test_yolo_flag_skips_approvals(start_wire, work_dir):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo yolo"}), "text: done"], "--yolo")
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]
    assert "yolo" in events(seen, "ToolResult")[0]["payload"]["return_value"]["output"]


async def test_streamed_tool_arguments_are_assembled_and_recorded_merged(start_wire, share_dir, work_dir):
    target = work_dir / "notes.txt"
    script = "\n".join(
        [
            'tool_call: {"id": "w1", "name": "WriteFile", "arguments": null}',
            'tool_call_part: {"arguments_part": "{\\"path\\": \\"notes.txt\\", "}',
            'tool_call_part: {"arguments_part": "\\"content\\": \\"streamed\\"}"}',
        ]
    )
    wire = await start_wire([script, "text: written"], "--yolo")
    response, seen = await wire.call("prompt", {"user_input": "write"})
    assert response["result"] == {"status": "finished"}
    assert event_types(seen).count("ToolCallPart") == 2
    assert target.read_text() == "streamed"
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert not result["is_error"] and any(d["type"] == "diff" for d in result["display"])
    calls = [r["message"]["payload"] for r in wire_records(share_dir, work_dir)[1:] if r["message"]["type"] == "ToolCall"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "notes.txt", "content": "streamed"}
    assert not [r for r in wire_records(share_dir, work_dir)[1:] if r["message"]["type"] == "ToolCallPart"]


async def test_external_tool_round_trip(start_wire, share_dir, work_dir):
    wire = await start_wire([tool_call("x1", "open_in_ide", {"path": "README.md"}), "text: opened"])
    init, _ = await wire.call(
        "initialize",
        {
            **INIT,
            "external_tools": [
                {
                    "name": "open_in_ide",
                    "description": "Open a file in the IDE",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                },
                {"name": "Shell", "description": "clash", "parameters": {"type": "object"}},
                {"name": "broken", "description": "bad schema", "parameters": {"type": "no-such-type"}},
            ],
        },
    )
    tools = init["result"]["external_tools"]
    assert tools["accepted"] == ["open_in_ide"]
    rejected = {r["name"]: r["reason"] for r in tools["rejected"]}
    assert rejected["Shell"] == "conflicts with builtin tool"
    assert "schema" in rejected["broken"].lower()
    prompt_id = await wire.request("prompt", {"user_input": "open readme"})
    request, _ = await wire.next_request()
    assert request["params"] == {
        "type": "ToolCallRequest",
        "payload": {"id": "x1", "name": "open_in_ide", "arguments": '{"path": "README.md"}'},
    }
    assert request["id"] == "x1"
    await wire.respond(
        request["id"],
        {
            "tool_call_id": "x1",
            "return_value": {"is_error": False, "output": "Opened", "message": "Opened README.md", "display": []},
        },
    )
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    result = events(seen, "ToolResult")[0]["payload"]
    assert result["return_value"]["output"] == "Opened"
    assert "Opened README.md" in json.dumps(context_lines(share_dir, work_dir))
    # The request is part of the record, so replay shows it.
    replay, replayed = await wire.call("replay")
    assert replay["result"]["requests"] == 1
    assert [m for m in replayed if m.get("method") == "request"][0]["params"]["type"] == "ToolCallRequest"


async def test_external_tool_error_response_becomes_a_tool_error(start_wire):
    wire = await start_wire([tool_call("x1", "ext", {}), "text: handled"])
    await wire.call("initialize", {**INIT, "external_tools": [{"name": "ext", "description": "d", "parameters": {"type": "object"}}]})
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "IDE is busy"}})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert result["is_error"] and result["message"] == "IDE is busy"
    assert result["display"] == [{"type": "brief", "text": "External tool error"}]


async def test_external_tool_result_that_does_not_parse_becomes_a_tool_error(start_wire):
    wire = await start_wire([tool_call("x1", "ext", {}), "text: handled"])
    await wire.call("initialize", {**INIT, "external_tools": [{"name": "ext", "description": "d", "parameters": {"type": "object"}}]})
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.respond(request["id"], {"return_value": "not an object"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert result["is_error"] and result["message"] == "Invalid tool result payload from client."
    assert result["display"] == [{"type": "brief", "text": "Invalid tool result"}]


async def test_steer_during_an_approval_is_injected_after_the_step(start_wire, share_dir, work_dir):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo hi"}), "text: steered answer"])
    prompt_id = await wire.request("prompt", {"user_input": "start"})
    request, _ = await wire.next_request()
    steer, _ = await wire.call("steer", {"user_input": "use python instead"})
    assert steer["result"] == {"status": "steered"}
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "reject"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    order = [t for t in event_types(seen) if t in ("ToolResult", "SteerInput", "StepBegin")]
    assert order == ["ToolResult", "SteerInput", "StepBegin"]  # the steer overrides the silent rejection
    assert events(seen, "SteerInput")[0]["payload"]["user_input"] == "use python instead"
    assert text_of(seen) == "steered answer"
    users = [line for line in context_lines(share_dir, work_dir) if line["role"] == "user"]
    assert users[-1]["content"] == "use python instead"


@pytest.mark.smoke
async def test_cancel_during_a_long_shell_command_ends_fast_and_kills_the_group(start_wire, share_dir, work_dir):
    marker = sleep_marker(31)
    command = f"sleep {marker} & sleep {marker}; echo never"
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": command}), "text: unused"], "--yolo")
    prompt_id = await wire.request("prompt", {"user_input": "wait"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "ToolCall")
    assert await wait_until(lambda: process_alive(marker))
    started = time.monotonic()
    cancel_id = await wire.request("cancel")
    response, seen = await wire.response(prompt_id, timeout=5)
    elapsed = time.monotonic() - started
    assert response["result"] == {"status": "cancelled"}
    assert elapsed < 1.0, f"cancel took {elapsed:.2f}s"
    assert any(m.get("id") == cancel_id and m.get("result") == {} for m in wire.received)
    assert event_types(seen)[-1] == "TurnEnd"
    result = events(seen, "ToolResult")[0]["payload"]["return_value"]
    assert result["is_error"] and "cancelled" in result["message"]
    assert await wait_until(lambda: not process_alive(marker), 1.0), "shell children survived the cancel"
    # The context stays consistent: every tool call has a result, and a new turn works.
    lines = context_lines(share_dir, work_dir)
    calls = [c["id"] for line in lines if line["role"] == "assistant" for c in line.get("tool_calls") or []]
    results = [line["tool_call_id"] for line in lines if line["role"] == "tool"]
    assert calls == results == ["tc-1"]
    response, seen = await wire.call("prompt", {"user_input": "next"})
    assert response["result"] == {"status": "finished"} and text_of(seen) == "unused"


async def test_cancel_during_a_pending_approval(start_wire):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo x"})])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    started = time.monotonic()
    cancel, _ = await wire.call("cancel")
    assert cancel["result"] == {}
    response, seen = await wire.response(prompt_id, timeout=5)
    assert time.monotonic() - started < 1.0
    assert response["result"] == {"status": "cancelled"}
    assert events(seen, "ApprovalResponse")[0]["payload"] == {
        "request_id": request["params"]["payload"]["id"],
        "response": "reject",
        "feedback": "",
    }
    assert event_types(seen)[-1] == "TurnEnd"
    # A late answer to the dead request is ignored, and the server still works.
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    steer, _ = await wire.call("steer", {"user_input": "x"})
    assert steer["error"]["code"] == -32000


async def test_prompt_without_initialize_still_gets_approvals(start_wire):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo x"}), "text: ok"])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request(timeout=10)
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    response, _ = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}


@pytest.mark.smoke
async def test_replay_sends_recorded_events_and_requests(start_wire):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo hi"}), "text: done"])
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    _, live = await wire.response(prompt_id)
    replay, replayed = await wire.call("replay")
    result = replay["result"]
    assert result["status"] == "finished" and result["requests"] == 1
    assert result["events"] == len(events(replayed))
    assert event_types(replayed) == [
        "TurnBegin", "StepBegin", "ToolCall", "StatusUpdate", "ApprovalResponse", "ToolResult",
        "StepBegin", "ContentPart", "StatusUpdate", "TurnEnd",
    ]
    assert text_of(replayed) == text_of(live) == "done"


async def test_replay_without_history_is_empty(start_wire):
    wire = await start_wire([])
    replay, replayed = await wire.call("replay")
    assert replay["result"] == {"status": "finished", "events": 0, "requests": 0}
    assert replayed == []


async def test_session_and_continue_carry_the_context_over(start_wire, share_dir, work_dir):
    wire = await start_wire(["text: first answer"])
    await wire.call("prompt", {"user_input": "first question"})
    session_id = session_dir(share_dir, work_dir).name
    assert await wire.close() == 0

    wire2 = await start_wire(["text: second answer"], "--continue")
    response, _ = await wire2.call("prompt", {"user_input": "second question"})
    assert response["result"] == {"status": "finished"}
    await wire2.close()
    session = find(work_dir, session_id)
    assert session is not None
    users = [line["content"] for line in context_lines(share_dir, work_dir) if line["role"] == "user"]
    assert users == ["first question", "second question"]

    wire3 = await start_wire(["text: third"], "--session", session_id)
    replay, replayed = await wire3.call("replay")
    assert [e["payload"]["user_input"] for e in events(replayed, "TurnBegin")] == ["first question", "second question"]


async def test_continue_without_a_previous_session_is_a_one_line_error(start_wire_process, work_dir):
    wire = await start_wire_process([], "--continue")  # an exit code and stderr: a process
    code = await asyncio.wait_for(wire.proc.wait(), 10)
    stderr = await wire.stderr_text()
    assert code == 2
    assert stderr.strip() == "kimi: error: No previous session found for the working directory"


async def test_max_steps_per_turn(start_wire):
    wire = await start_wire([tool_call("tc-1", "Glob", {"pattern": "*"}), "text: unreachable"], "--max-steps-per-turn", "1")
    response, seen = await wire.call("prompt", {"user_input": "loop"})
    assert response["result"] == {"status": "max_steps_reached", "steps": 1}
    assert event_types(seen)[-1] == "TurnEnd"


async def test_stdin_eof_during_a_turn_exits_cleanly(start_wire):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "sleep 20"})], "--yolo")
    await wire.request("prompt", {"user_input": "go"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "ToolCall")
    started = time.monotonic()
    assert await wire.close(timeout=5) == 0
    assert time.monotonic() - started < 3
