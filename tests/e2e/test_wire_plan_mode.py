"""Plan mode through its tools over `kimi --wire`: EnterPlanMode asks (a QuestionRequest), the plan
file is the only file that may be written, ExitPlanMode shows the plan (PlanDisplay) and asks
approve / reject / reject and exit / revise; the state survives a restart; the tools are offered
only to a client that declared `supports_plan_mode`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from kimi_acp.tools.plan import REJECTED_MESSAGE, UNSUPPORTED_MESSAGE
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.inmemory import WireMemory
from tests.support.wire_client import WireClientMixin, event_types, events, tool_call

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
PLANNING = {**INIT, "capabilities": {"supports_plan_mode": True}}
PLAN = "# Plan\n\n1. Add `feature.py`.\n2. Test it.\n"


def state(share_dir: Path, work_dir: Path, session_id: str) -> dict[str, Any]:
    path = share_dir / "sessions" / sessions.work_dir_key(work_dir) / session_id / "state.json"
    return json.loads(path.read_text())


def results(seen: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}


def plan_statuses(seen: list[dict[str, Any]]) -> list[bool]:
    return [e["payload"]["plan_mode"] for e in events(seen, "StatusUpdate") if e["payload"]["plan_mode"] is not None]


def planning_session(work_dir: Path, session_id: str, slug: str, *, plan: str | None = PLAN) -> Path:
    """A session on disk that is in plan mode, as a previous process (or Kimi Code CLI) left it."""
    session = sessions.create(work_dir, session_id)
    session.state.plan_mode = True
    session.state.plan_session_id = "0123456789abcdef0123456789abcdef"
    session.state.plan_slug = slug
    session.save_state()
    path = Path(sessions.sessions_root()).parent / "plans" / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if plan is not None:
        path.write_text(plan)
    return path


async def prompt_answering(wire: WireClientMixin, text: str, *labels: str) -> tuple[dict[str, Any], list, list]:
    """Prompt, answer each QuestionRequest with the next label; (response, questions, all messages)."""
    mark = len(wire.received)
    prompt = await wire.request("prompt", {"user_input": text})
    asked = [await answer_question(wire, label) for label in labels]
    response, _ = await wire.response(prompt)
    return response, asked, wire.received[mark:]


async def answer_question(wire: WireClientMixin, label: str) -> dict[str, Any]:
    request, _ = await wire.next_request()
    assert request["params"]["type"] == "QuestionRequest"
    payload = request["params"]["payload"]
    question = payload["questions"][0]["question"]
    await wire.respond(request["id"], {"request_id": payload["id"], "answers": {question: label}})
    return payload


async def test_enter_refuse_restart_write_plan_and_approve(start_wire, share_dir, work_dir):
    scripts = [
        tool_call("e1", "EnterPlanMode", {}),
        tool_call("w1", "WriteFile", {"path": "feature.py", "content": "print('too early')\n"}),
        "text: I will plan first.",
    ]
    wire = await start_wire(scripts, "--session", "plan-a")
    await wire.call("initialize", PLANNING)
    response, (asked,), seen = await prompt_answering(wire, "add a feature, plan it first", "Yes")
    (question,) = asked["questions"]
    assert asked["tool_call_id"] == "e1"
    assert question["question"] == "Enter plan mode?" and [o["label"] for o in question["options"]] == ["Yes", "No"]
    assert response["result"] == {"status": "finished"}
    entered, refused = results(seen)["e1"], results(seen)["w1"]
    assert not entered["is_error"] and "Plan mode activated" in entered["output"]
    assert True in plan_statuses(seen)
    saved = state(share_dir, work_dir, "plan-a")
    assert saved["plan_mode"] is True and saved["plan_session_id"] and saved["plan_slug"]
    plan_file = share_dir / "plans" / f"{saved['plan_slug']}.md"
    assert str(plan_file) in entered["output"]
    assert refused["is_error"] and refused["message"].startswith("Plan mode is on") and str(plan_file) in refused["message"]
    assert not (work_dir / "feature.py").exists()
    assert "ApprovalRequest" not in event_types(seen)
    await wire.close()

    # A new process on the same session: still planning, with the same plan file.
    scripts = [
        tool_call("w2", "WriteFile", {"path": str(plan_file), "content": PLAN}),
        tool_call("x1", "ExitPlanMode", {}),
        "text: Implementing now.",
    ]
    wire = await start_wire(scripts, "--session", "plan-a")
    await wire.call("initialize", PLANNING)
    response, (asked,), seen = await prompt_answering(wire, "go on", "Approve")
    (question,) = asked["questions"]
    assert question["question"] == "Approve this plan" and question["other_label"] == "Revise"
    assert [o["label"] for o in question["options"]] == ["Approve", "Reject", "Reject and Exit"]
    assert response["result"] == {"status": "finished"}
    assert plan_file.read_text() == PLAN  # the plan file was written, without asking
    assert not results(seen)["w2"]["is_error"]
    assert not any(m.get("method") == "request" and m["params"]["type"] == "ApprovalRequest" for m in seen)
    (shown,) = events(seen, "PlanDisplay")
    assert shown["payload"] == {"content": PLAN, "file_path": str(plan_file)}
    types = event_types(seen)
    assert types.index("PlanDisplay") < types.index("ToolResult", types.index("PlanDisplay"))
    approved = results(seen)["x1"]
    assert not approved["is_error"] and "Plan approved by user" in approved["output"] and PLAN in approved["output"]
    assert plan_statuses(seen)[-1] is False
    saved = state(share_dir, work_dir, "plan-a")
    assert saved["plan_mode"] is False and "plan_slug" not in saved  # the next round gets a new file


async def test_revise_with_feedback_then_reject(start_wire, share_dir, work_dir):
    plan_file = planning_session(work_dir, "plan-b", "thor-storm-robin")
    scripts = [
        tool_call("x1", "ExitPlanMode", {}),
        tool_call("x2", "ExitPlanMode", {}),
        "text: never reached",
    ]
    wire = await start_wire(scripts, "--session", "plan-b")
    await wire.call("initialize", PLANNING)
    # A free-text answer (the "Revise" choice), then a rejection.
    response, _, seen = await prompt_answering(wire, "show me the plan", "Also cover the CLI", "Reject")
    assert response["result"] == {"status": "finished"}
    revised, rejected = results(seen)["x1"], results(seen)["x2"]
    assert not revised["is_error"] and "User feedback: Also cover the CLI" in revised["output"]
    assert rejected["is_error"] and rejected["message"] == REJECTED_MESSAGE
    assert "never reached" not in json.dumps(seen)  # a rejection ends the turn
    assert [e["payload"]["file_path"] for e in events(seen, "PlanDisplay")] == [str(plan_file)] * 2
    saved = state(share_dir, work_dir, "plan-b")
    assert saved["plan_mode"] is True and saved["plan_slug"] == "thor-storm-robin"


async def test_reject_and_exit_leaves_plan_mode(start_wire, share_dir, work_dir):
    planning_session(work_dir, "plan-c", "hulk-wasp-flash")
    wire = await start_wire([tool_call("x1", "ExitPlanMode", {}), "text: never reached"], "--session", "plan-c")
    await wire.call("initialize", PLANNING)
    response, _, seen = await prompt_answering(wire, "done?", "Reject and Exit")
    assert response["result"] == {"status": "finished"}
    result = results(seen)["x1"]
    assert result["is_error"] and "Plan mode deactivated" in result["message"]
    assert plan_statuses(seen)[-1] is False
    assert state(share_dir, work_dir, "plan-c")["plan_mode"] is False


async def test_exit_without_a_plan_file_asks_for_one(start_wire, work_dir):
    plan_file = planning_session(work_dir, "plan-d", "vision-nova-raven", plan=None)
    wire = await start_wire([tool_call("x1", "ExitPlanMode", {}), "text: ok"], "--session", "plan-d")
    await wire.call("initialize", PLANNING)
    response, seen = await wire.call("prompt", {"user_input": "exit"})
    result = results(seen)["x1"]
    assert result["is_error"] and f"Write your plan to {plan_file} first" in result["message"]
    assert not any(m.get("method") == "request" for m in seen)


@pytest.mark.parametrize("handshake", [INIT, None], ids=["initialize-without-capability", "no-initialize"])
async def test_called_without_supports_plan_mode_is_a_tool_error(start_wire, share_dir, work_dir, handshake):
    wire = await start_wire([tool_call("e1", "EnterPlanMode", {}), "text: ok"], "--session", "plan-e")
    if handshake is not None:
        await wire.call("initialize", handshake)
    response, seen = await wire.call("prompt", {"user_input": "plan"})
    assert response["result"] == {"status": "finished"}
    result = results(seen)["e1"]
    assert result["is_error"] and result["message"] == UNSUPPORTED_MESSAGE
    assert not any(m.get("method") == "request" for m in seen)
    assert state(share_dir, work_dir, "plan-e")["plan_mode"] is False


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body["tools"] if t["function"]["name"] in ("EnterPlanMode", "ExitPlanMode")]


async def test_tools_offered_only_with_supports_plan_mode(server, tmp_path, work_dir):
    server.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
    config = {
        "default_model": "fake",
        "models": {"fake": {"provider": "p", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"p": {"type": "openai_legacy", "base_url": server.base_url, "api_key": "sk-test"}},
    }
    path = tmp_path / "provider.json"
    path.write_text(json.dumps(config))
    wire = await WireMemory.start("--work-dir", str(work_dir), "--config-file", str(path))
    try:
        await wire.call("prompt", {"user_input": "a"})  # no initialize at all
        await wire.call("initialize", PLANNING)
        await wire.call("prompt", {"user_input": "b"})
        await wire.call("set_plan_mode", {"enabled": True})
        await wire.call("prompt", {"user_input": "c"})
    finally:
        await wire.close()
    first, second, third = (r.body for r in server.requests)
    assert offered(first) == [] and {t["function"]["name"] for t in first["tools"]} >= {"WriteFile", "ReadFile"}
    assert offered(second) == ["ExitPlanMode", "EnterPlanMode"]  # the reference's order, at the end
    exit_spec = next(t["function"] for t in second["tools"] if t["function"]["name"] == "ExitPlanMode")
    assert "plan file" in exit_spec["description"] and "options" in exit_spec["parameters"]["properties"]
    # In plan mode the model is reminded of the plan file it may write, and how to finish.
    reminder = third["messages"][-1]["content"]
    reminder = reminder if isinstance(reminder, str) else "".join(p.get("text", "") for p in reminder)
    assert "Plan mode is on" in reminder and "/plans/" in reminder and "ExitPlanMode" in reminder
