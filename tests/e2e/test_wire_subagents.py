"""The Agent tool over `kimi --wire`: a scripted subagent whose turn runs inside the parent's.

Scripts are one queue for the whole session tree (the parent's and its subagents' model calls take
turns in the order they happen); a background subagent gets a model of its own (`model`), so its
replies do not race the parent's.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import events, scripted_config_data, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
REPORT = ("I looked at the project. " + "It has one file, a.txt, which says hello. " * 6).strip()  # ≥ 200 chars


def results(seen: list[dict]) -> dict[str, dict]:
    return {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}


def inner(seen: list[dict], parent: str) -> list[dict]:
    """The events a subagent sent, unwrapped: [{type, payload}]."""
    return [e["payload"]["event"] for e in events(seen, "SubagentEvent") if e["payload"]["parent_tool_call_id"] == parent]


def agent_call(call_id: str, **arguments: object) -> str:
    return tool_call(call_id, "Agent", {"description": "look around", "prompt": "Describe the project.", **arguments})


def session_dir(share_dir: Path) -> Path:
    (state,) = [p for p in (share_dir / "sessions").rglob("state.json") if "subagents" not in p.parts]
    return state.parent


async def test_foreground_subagent_events_approval_and_result(start_wire, share_dir, work_dir):
    (work_dir / "a.txt").write_text("hello\n")
    scripts = [
        agent_call("sub", subagent_type="explore"),
        tool_call("c1", "Shell", {"command": "cat a.txt"}),  # the subagent's first step: asks the user
        f"text: {REPORT}",
        "text: The subagent reported back.",
    ]
    wire = await start_wire(scripts)
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "what is here?"})
    request, before = await wire.next_request()
    payload = request["params"]["payload"]
    assert payload["sender"] == "Shell" and payload["tool_call_id"] == "c1"
    assert payload["subagent_type"] == "explore" and payload["agent_id"].startswith("a")
    assert payload["source_kind"] == "foreground_turn" and payload["source_description"] == "look around"
    # the subagent's tool call reached the client (whole, wrapped) before it was asked about
    calls = [e for e in inner(before, "sub") if e["type"] == "ToolCall"]
    assert [json.loads(c["payload"]["function"]["arguments"]) for c in calls] == [{"command": "cat a.txt"}]
    await wire.respond(request["id"], {"request_id": payload["id"], "response": "approve"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    seen = before + seen
    wrapped = events(seen, "SubagentEvent")
    assert {e["payload"]["agent_id"] for e in wrapped} == {payload["agent_id"]}
    kinds = [e["type"] for e in inner(seen, "sub")]
    assert kinds[0] == "TurnBegin" and kinds[-1] == "TurnEnd" and "ToolResult" in kinds
    child_results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in inner(seen, "sub") if e["type"] == "ToolResult"}
    assert child_results["c1"]["output"] == "hello\n"
    texts = [e["payload"]["text"] for e in inner(seen, "sub") if e["type"] == "ContentPart"]
    assert texts == [REPORT]  # merged: one part per step, not one per chunk
    result = results(seen)["sub"]
    assert not result["is_error"]
    agent_id = payload["agent_id"]
    assert result["output"] == (
        f"agent_id: {agent_id}\nresumed: false\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\n{REPORT}"
    )
    assert any(e["payload"].get("text") == "The subagent reported back." for e in events(seen, "ContentPart"))
    # the child's session is stored beside the parent's, in Kimi's layout
    child = session_dir(share_dir) / "subagents" / agent_id
    meta = json.loads((child / "meta.json").read_text())
    assert meta["subagent_type"] == "explore" and meta["status"] == "idle" and meta["description"] == "look around"
    assert "cat a.txt" in (child / "wire.jsonl").read_text() and REPORT in (child / "context.jsonl").read_text()
    assert await wire.close() == 0


async def test_short_answer_gets_one_summary_turn_and_children_cannot_launch(start_wire):
    scripts = [
        agent_call("sub"),
        agent_call("nested"),  # a subagent has no Agent tool
        "text: short",
        f"text: {REPORT}",
        "text: ok",
    ]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    child = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in inner(seen, "sub") if e["type"] == "ToolResult"}
    assert child["nested"]["is_error"] and "Agent" in child["nested"]["message"] and "not found" in child["nested"]["message"]
    prompts = [e["payload"]["user_input"] for e in inner(seen, "sub") if e["type"] == "TurnBegin"]
    assert len(prompts) == 2 and prompts[0] == "Describe the project." and "too short" in prompts[1]
    assert results(seen)["sub"]["output"].endswith(f"[summary]\n{REPORT}")
    assert await wire.close() == 0


async def test_cancel_during_a_subagent_stops_it(start_wire, share_dir):
    marker = sleep_marker()
    scripts = [agent_call("sub"), tool_call("c1", "Shell", {"command": f"sleep {marker}", "timeout": 300})]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    assert await wait_until(lambda: process_alive(marker), timeout=15)
    await wire.call("cancel", {})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "cancelled"}
    assert await wait_until(lambda: not process_alive(marker)), "the subagent's command survived the cancel"
    kinds = [e["type"] for e in inner(seen, "sub")]
    assert kinds and kinds[-1] == "TurnEnd"
    assert results(seen)["sub"]["is_error"]
    (meta,) = (session_dir(share_dir) / "subagents").glob("*/meta.json")
    assert json.loads(meta.read_text())["status"] == "killed"
    assert await wire.close() == 0


async def test_resume_continues_a_stored_subagent_after_a_restart(start_wire, tmp_path, share_dir):
    first = await start_wire([agent_call("sub", subagent_type="plan"), f"text: {REPORT}", "text: planned"], "--yolo")
    await first.call("initialize", INIT)
    _, seen = await first.call("prompt", {"user_input": "plan it"})
    agent_id = results(seen)["sub"]["output"].split("\n")[0].removeprefix("agent_id: ")
    assert await first.close() == 0
    session_id = session_dir(share_dir).name
    again = "And the second part? " + REPORT
    directory = tmp_path / "second"
    directory.mkdir()
    config = directory / "config.json"
    config.write_text(json.dumps(scripted_config_data(directory, [
        agent_call("sub2", resume=agent_id, subagent_type="coder"), f"text: {again}", "text: resumed",
    ])))
    second = await start_wire((), "--session", session_id, "--yolo", config=config)
    await second.call("initialize", INIT)
    response, seen = await second.call("prompt", {"user_input": "continue"})
    assert response["result"] == {"status": "finished"}
    output = results(seen)["sub2"]["output"]
    assert output.startswith(f"agent_id: {agent_id}\nresumed: true\nrequested_subagent_type: coder\nactual_subagent_type: plan\n")
    assert output.endswith(again)
    context = (session_dir(share_dir) / "subagents" / agent_id / "context.jsonl").read_text()
    assert REPORT in context and again in context  # one context, continued
    assert await second.close() == 0


async def test_background_subagent_runs_as_a_task(start_wire, tmp_path):
    data = scripted_config_data(tmp_path, [
        agent_call("bg", run_in_background=True, model="helper"),
        tool_call("out", "TaskOutput", {"task_id": "agent-1", "block": True, "timeout": 30}),
        "text: got it",
    ])
    helper_scripts = tmp_path / "helper.json"
    helper_scripts.write_text(json.dumps([f"text: {REPORT}"]))
    data["providers"]["helper_provider"] = {"type": "_scripted_echo", "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(helper_scripts)}}
    data["models"]["helper"] = {"provider": "helper_provider", "model": "scripted_echo", "max_context_size": 100000}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(data))
    wire = await start_wire((), "--yolo", config=config)
    await wire.call("initialize", INIT)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    got = results(seen)
    assert got["bg"]["message"] == "Background agent started." and "task_id: agent-1" in got["bg"]["output"]
    output = got["out"]["output"]
    assert "retrieval_status: success" in output and "kind: agent" in output and "status: completed" in output
    assert output.endswith(REPORT)
    assert await wire.close() == 0


async def test_unknown_type_and_model_are_tool_errors(start_wire):
    scripts = [agent_call("t", subagent_type="wizard"), agent_call("m", model="nope"), "text: fine"]
    wire = await start_wire(scripts, "--yolo")
    await wire.call("initialize", INIT)
    _, seen = await wire.call("prompt", {"user_input": "go"})
    got = results(seen)
    assert got["t"]["is_error"] and "wizard" in got["t"]["message"] and "explore" in got["t"]["message"]
    assert got["m"]["is_error"] and got["m"]["message"] == "Unknown model alias: nope"
    assert not events(seen, "SubagentEvent")
    assert await wire.close() == 0


async def test_parallel_subagents_share_approve_for_session(start_wire):
    two = "\n".join([agent_call("s1"), agent_call("s2", description="look again")])
    shell = tool_call("c1", "Shell", {"command": "echo parallel"})
    scripts = [two, shell, shell, f"text: {REPORT}", f"text: {REPORT}", "text: both done"]
    wire = await start_wire(scripts)
    await wire.call("initialize", INIT)
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    first, _ = await wire.next_request()
    second, _ = await wire.next_request()
    asked = [r["params"]["payload"] for r in (first, second)]
    assert {p["source_description"] for p in asked} == {"look around", "look again"}
    assert len({p["agent_id"] for p in asked}) == 2 and {p["tool_call_id"] for p in asked} == {"c1"}
    # approving one for the session approves the other one waiting for the same action
    await wire.respond(first["id"], {"request_id": asked[0]["id"], "response": "approve_for_session"})
    response, seen = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}
    answers = {e["payload"]["request_id"]: e["payload"]["response"] for e in events(seen, "ApprovalResponse")}
    assert answers == {asked[0]["id"]: "approve_for_session", asked[1]["id"]: "approve"}
    got = results(seen)
    for call_id in ("s1", "s2"):
        assert not got[call_id]["is_error"] and got[call_id]["output"].endswith(REPORT)
    assert got["s1"]["output"].split("\n")[0] != got["s2"]["output"].split("\n")[0]
    assert await wire.close() == 0
