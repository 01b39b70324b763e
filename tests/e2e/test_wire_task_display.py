"""The `background_task` display block over `kimi --wire`, as Kimi Code CLI sends it
(`{type, task_id, kind, status, description}`): in the result of a background Shell, of
TaskList (one per task), TaskOutput and TaskStop, and in TaskStop's approval request."""

from __future__ import annotations

from tests.support.processes import sleep_marker
from tests.support.wire_client import events, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def block(task_id: str, status: str, description: str) -> dict[str, str]:
    return {"type": "background_task", "task_id": task_id, "kind": "bash", "status": status, "description": description}


def tasks_shown(return_value: dict) -> list[dict]:
    return [b for b in return_value["display"] if b["type"] == "background_task"]


async def test_background_task_blocks_in_results_and_the_stop_request(start_wire):
    marker = sleep_marker()
    scripts = [
        tool_call("quick", "Shell", {"command": "echo done", "run_in_background": True, "description": "quick one"}),
        tool_call("out", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 10}),
        tool_call("slow", "Shell", {"command": f"sleep {marker}", "run_in_background": True, "description": "sleeper"}),
        tool_call("list", "TaskList", {"active_only": False}),
        tool_call("stop", "TaskStop", {"task_id": "bash-2"}),
        "text: done",
    ]
    wire = await start_wire(scripts)
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    seen = []
    for _ in range(2):  # the two background commands
        request, before = await wire.next_request()
        seen += before
        payload = request["params"]["payload"]
        assert payload["action"] == "run background command"
        await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    request, before = await wire.next_request()
    seen += before
    payload = request["params"]["payload"]
    assert payload["action"] == "stop background task"
    assert payload["display"] == [block("bash-2", "running", "sleeper")]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, rest = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    got = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen + rest, "ToolResult")}
    assert tasks_shown(got["quick"]) == [block("bash-1", "running", "quick one")]
    assert {"type": "brief", "text": "Started bash-1"} in got["quick"]["display"]
    assert tasks_shown(got["out"]) == [block("bash-1", "completed", "quick one")]
    listed = sorted(tasks_shown(got["list"]), key=lambda b: b["task_id"])
    assert listed == [block("bash-1", "completed", "quick one"), block("bash-2", "running", "sleeper")]
    assert tasks_shown(got["stop"]) == [block("bash-2", "killed", "sleeper")]
    assert await wire.close() == 0
