"""Background Shell tasks over `kimi --wire`: TaskList, TaskOutput, TaskStop, and no orphans on exit."""

from __future__ import annotations

import json

from tests.support.processes import live_pids, process_alive, sleep_marker, wait_until
from tests.support.wire_client import events, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}


def results(seen: list[dict]) -> dict[str, dict]:
    return {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}


async def test_background_list_output_after_end_and_finished_note(start_wire, share_dir, work_dir):
    scripts = [
        tool_call("bg", "Shell", {"command": "echo bg-out", "run_in_background": True, "description": "echo"}),
        tool_call("out", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 10}),
        tool_call("list", "TaskList", {"active_only": False}),
        "text: done",
    ]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    got = results(seen)
    assert not got["bg"]["is_error"] and "task_id: bash-1" in got["bg"]["output"]
    assert got["bg"]["message"] == "Background task started."
    output = got["out"]["output"]
    assert "retrieval_status: success" in output and "status: completed" in output
    assert output.endswith("[output]\nbg-out")
    assert "task_id: bash-1" in got["list"]["output"] and "description: echo" in got["list"]["output"]
    # the model was told the task finished, before a later step
    sessions = list((share_dir / "sessions").rglob("context.jsonl"))
    text = "\n".join(p.read_text() for p in sessions)
    assert "Background tasks finished" in text and "bash-1 (echo): completed" in text
    assert await wire.close() == 0


async def test_stop_asks_and_kills_the_group(start_wire):
    marker = sleep_marker()
    command = f"sleep {marker} & sleep {marker}; wait"
    scripts = [
        tool_call("bg", "Shell", {"command": command, "run_in_background": True, "description": "sleepers"}),
        tool_call("list", "TaskList", {}),
        tool_call("stop", "TaskStop", {"task_id": "bash-1"}),
        "text: stopped",
    ]
    wire = await start_wire(scripts)
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()
    payload = request["params"]["payload"]
    assert payload["action"] == "run background command" and payload["sender"] == "Shell"
    assert payload["description"] == f"Run background command `{command}`"
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    request, seen = await wire.next_request()
    assert await wait_until(lambda: len(live_pids(marker)) >= 2)
    pids = live_pids(marker)
    assert "task_id: bash-1" in results(seen)["list"]["output"]
    payload = request["params"]["payload"]
    assert payload["sender"] == "TaskStop" and payload["action"] == "stop background task"
    assert payload["description"] == "Stop background task `bash-1`"
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    stop = results(seen)["stop"]
    assert not stop["is_error"] and "status: killed" in stop["output"]
    assert await wait_until(lambda: not any(p in live_pids(marker) for p in pids))
    assert await wire.close() == 0


async def test_exit_kills_a_running_task(start_wire):
    marker = sleep_marker()
    scripts = [
        tool_call("bg", "Shell", {"command": f"sleep {marker} & sleep {marker}; wait", "run_in_background": True,
                                  "description": "sleepers", "timeout": 3600}),
        "text: started",
    ]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    assert json.dumps(results(seen)["bg"]).count("bash-1")
    assert await wait_until(lambda: process_alive(marker))
    assert await wire.close() == 0
    assert await wait_until(lambda: not process_alive(marker)), "background task survived the exit"
