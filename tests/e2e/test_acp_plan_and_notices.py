"""`kimi acp`: the plan tools switch the session's mode (the IDE's mode picker follows) and ask
through permission prompts; what the agent does on its own — retrying a failed model request,
compacting the context — is visible, as a notice / compaction update for a client that advertised
them, else as a line of the agent's message."""

from __future__ import annotations

from typing import Any

import pytest

from kimi_acp import sessions
from tests.support.acp_fixtures import acp_env, of_kind, texts, transcript, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

PLAN = "# Plan\n\n1. Write `feature.py`.\n"


def choose(label: str):
    """A permission policy picking the option named `label` (its id is the agent's business)."""

    def policy(request: dict[str, Any]) -> str:
        return next(o.option_id for o in request["options"] if o.name == label)

    return policy


def modes(updates: list[dict[str, Any]]) -> list[str]:
    return [u["currentModeId"] for u in of_kind(updates, "current_mode_update")]


async def test_plan_tools_switch_the_mode_and_show_the_plan(share, project, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    session = sessions.create(project, "acp-plan")
    session.state.plan_session_id, session.state.plan_slug = "feedfacefeedfacefeedfacefeedface", "groot-storm-flash"
    session.save_state()  # the slug is known in advance so the script can write the plan file
    plan_file = share / "plans" / "groot-storm-flash.md"
    write_config(
        share,
        [
            tool_call("e1", "EnterPlanMode", {}),
            tool_call("w0", "WriteFile", {"path": "feature.py", "content": "x = 1\n"}),
            tool_call("w1", "WriteFile", {"path": str(plan_file), "content": PLAN}),
            tool_call("x1", "ExitPlanMode", {}),
            "text: Implementing the plan.",
        ],
        permissions={"always_ask": False},  # a real config's default mode
    )
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id="acp-plan", mcp_servers=[])
        answers = iter(["Yes", "Approve"])
        agent.client.permission_policy = lambda request: choose(next(answers))(request)
        response = await agent.prompt("acp-plan", "plan the feature first")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates("acp-plan")

    assert modes(updates)[-2:] == ["plan", "default"]
    mode_options = [
        next(o for o in u["configOptions"] if o["id"] == "mode")["currentValue"]
        for u in of_kind(updates, "config_option_update")
    ]
    assert mode_options[-2:] == ["plan", "default"]
    enter, exit_ = (r["options"] for r in agent.client.permission_requests)
    assert [o.name for o in enter][:2] == ["Yes", "No"]
    assert [o.name for o in exit_][:3] == ["Approve", "Reject", "Reject and Exit"]
    # The raw request (zed-industries/zed#56597: a panel showing only the request was empty): the
    # plan is in the card's title and content, and only approving is an allow_* option.
    asked = [m["params"] for m in agent.recorder.requests("session/request_permission")]
    assert [(o["name"], o["kind"]) for o in asked[0]["options"]] == [
        ("Yes", "allow_once"), ("No", "reject_once"), ("Skip", "reject_once")]
    assert [(o["name"], o["kind"]) for o in asked[1]["options"]] == [
        ("Approve", "allow_once"), ("Reject", "reject_once"), ("Reject and Exit", "reject_always"),
        ("Revise", "reject_once"), ("Skip", "reject_once")]
    card = asked[1]["toolCall"]
    assert card["title"] == "Approve this plan: Plan"
    assert card["content"][0]["content"]["text"].startswith(PLAN.strip())
    assert plan_file.read_text() == PLAN and not (project / "feature.py").exists()
    items = transcript(updates)
    cards = {card["title"]: card for kind, card in items if kind == "tool_call"}
    assert cards["EnterPlanMode"]["kind"] == "switch_mode" and cards["EnterPlanMode"]["status"] == "completed"
    exit_card = cards["ExitPlanMode"]
    assert exit_card["status"] == "completed" and "Plan approved" in str(exit_card["content"])
    assert PLAN not in str(exit_card["content"])  # the model's copy of the plan is not repeated in the card
    refused = next(card for title, card in cards.items() if title.startswith("WriteFile: feature.py"))
    assert refused["status"] == "failed" and "Plan mode is on" in str(refused["content"])
    message = texts(updates)
    assert f"**Plan** (`{plan_file}`)" in message and "1. Write `feature.py`." in message
    assert message.index("**Plan**") < message.index("Implementing the plan.")


async def test_a_rejected_plan_stays_in_plan_mode(share, project, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    session = sessions.create(project, "acp-plan-2")
    session.state.plan_mode = True
    session.state.plan_session_id, session.state.plan_slug = "0" * 32, "rogue-beast-cyborg"
    session.save_state()
    (share / "plans").mkdir()
    (share / "plans" / "rogue-beast-cyborg.md").write_text(PLAN)
    write_config(share, [tool_call("x1", "ExitPlanMode", {}), "text: never reached"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        loaded = await agent.conn.load_session(cwd=str(project), session_id="acp-plan-2", mcp_servers=[])
        assert loaded.modes.current_mode_id == "plan"  # restored from state.json
        agent.client.permission_policy = choose("Reject")
        response = await agent.prompt("acp-plan-2", "is the plan ready?")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates("acp-plan-2")
    assert "plan" not in modes(updates)[1:] and "default" not in modes(updates)
    assert "never reached" not in texts(updates)
    assert sessions.find(project, "acp-plan-2").state.plan_mode is True


async def raw_initialize(agent: Any, session_caps: dict[str, Any]) -> None:
    """initialize with capabilities the SDK's models do not know yet (sent as plain JSON)."""
    await agent.conn._conn.send_request(
        "initialize", {"protocolVersion": 1, "clientCapabilities": {"session": session_caps}}
    )


async def test_a_retry_is_shown_as_a_message(share, project):
    write_config(share, ["error: 503 overloaded", "text: recovered"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "hi")
        assert response.stop_reason == "end_turn"
        message = texts(agent.recorder.updates(session.session_id))
    assert "_Retrying after a 503 (attempt 2 of 3)…_" in message
    assert message.index("Retrying") < message.index("recovered")


async def test_a_retry_is_a_notice_for_a_client_that_takes_notices(share, project):
    write_config(share, ["error: 503 overloaded", "text: recovered"])
    async with serve_acp(acp_env(share)) as agent:
        await raw_initialize(agent, {"notices": {}})
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "hi")
        updates = agent.recorder.updates(session.session_id)
    (notice,) = of_kind(updates, "notice")
    assert notice["severity"] == "warning" and notice["title"] == "Retrying after a 503 (attempt 2 of 3)"
    assert "Retrying" not in texts(updates) and texts(updates) == "recovered"


async def test_capabilities_unknown_to_the_sdk_survive_an_initialize_it_parses(share, project):
    """Not the first line, so the SDK's models parse this initialize: `session.notices` must not be lost."""
    write_config(share, ["error: 503 overloaded", "text: recovered"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.conn._conn.send_request("session/list", {})  # the first line: no early answer
        await raw_initialize(agent, {"notices": {}})
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "hi")
        updates = agent.recorder.updates(session.session_id)
    assert len(of_kind(updates, "notice")) == 1
    assert "Retrying" not in texts(updates)


COMPACTING = [
    "text: a long first answer\nusage: input_other=880 output=20",
    "text: SUMMARY: the user asked twice",  # the compaction call
    "text: answered after compaction",
]
SMALL_MODEL = {"scripted": {"provider": "scripted_provider", "model": "scripted_echo", "max_context_size": 1000}}


async def test_compaction_is_shown_as_a_message(share, project):
    write_config(share, COMPACTING, models=SMALL_MODEL)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "first question")
        mark = len(agent.recorder.updates(session.session_id))
        await agent.prompt(session.session_id, "second question")
        message = texts(agent.recorder.updates(session.session_id)[mark:])
    assert message.startswith("\n\n_Compacting the conversation to free up context…_")
    assert message.index("_Context compacted") < message.index("answered after compaction")


async def test_compaction_is_a_compaction_update_for_a_client_that_takes_them(share, project):
    write_config(share, COMPACTING, models=SMALL_MODEL)
    async with serve_acp(acp_env(share)) as agent:
        await raw_initialize(agent, {"compaction": {}})
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "first question")
        await agent.prompt(session.session_id, "second question")
        updates = agent.recorder.updates(session.session_id)
    begun, ended = of_kind(updates, "compaction_update")
    assert (begun["status"], ended["status"]) == ("in_progress", "completed")
    assert begun["compactionId"] == ended["compactionId"]
    assert updates.index(ended) < next(i for i, u in enumerate(updates) if "answered after" in str(u))
    assert "Compact" not in texts(updates)
