"""`kimi acp` against what real clients do (Toad, acpx, CodeCompanion), played by the test client
(tests/support/acp_client.py: the ACP Python SDK, every message schema-checked): an editor that
refuses paths outside its project, denies terminals, approves reads by kind or shows only titles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_acp import sessions
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

PLAN = "# Add a flag\n\n1. Parse `--verbose`.\n"


def raw_permissions(agent: Any) -> list[dict[str, Any]]:
    return [m["params"] for m in agent.recorder.requests("session/request_permission")]


def final_cards(agent: Any, session_id: str) -> dict[str, dict[str, Any]]:
    """Each card's last status and content, by its title."""
    titles: dict[str, str] = {}
    ends: dict[str, dict[str, Any]] = {}
    for update in agent.recorder.updates(session_id):
        if update["sessionUpdate"] == "tool_call":
            titles[update["toolCallId"]] = update["title"]
        elif update["sessionUpdate"] == "tool_call_update" and update.get("status") in ("completed", "failed"):
            ends[titles[update["toolCallId"]]] = update
    return ends


async def test_plan_files_stay_on_disk_with_an_editor_that_refuses_paths_outside_its_project(share, project, monkeypatch):
    """acpx refuses fs/write_text_file outside the project; the plan file lives in the share dir."""
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    session = sessions.create(project, "acpx-plan")
    session.state.plan_mode = True
    session.state.plan_session_id, session.state.plan_slug = "f" * 32, "storm-groot-flash"
    session.save_state()
    plan_file = share / "plans" / "storm-groot-flash.md"
    write_config(share, [
        tool_call("w1", "WriteFile", {"path": str(plan_file), "content": PLAN}),
        tool_call("x1", "ExitPlanMode", {}),
        "text: Implementing it.",
    ])
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.project_root, agent.client.refuse_writes_outside = project, True
        agent.client.permission_policy = lambda request: next(o.option_id for o in request["options"] if o.name == "Approve")
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id="acpx-plan", mcp_servers=[])
        response = await agent.prompt("acpx-plan", "write the plan")
        cards = final_cards(agent, "acpx-plan")
    assert response.stop_reason == "end_turn"
    assert plan_file.read_text() == PLAN
    assert not [p for p, _ in agent.client.fs_writes if p.startswith(str(share))]
    assert not [p for p in agent.client.fs_reads if p.startswith(str(share))]
    assert cards["ExitPlanMode"]["status"] == "completed" and "Plan approved" in str(cards["ExitPlanMode"]["content"])
    assert sessions.find(project, "acpx-plan").state.plan_mode is False


async def test_a_write_the_editor_refuses_outside_the_workspace_goes_to_disk_after_its_approval(share, project, tmp_path):
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    write_config(share, [tool_call("w1", "WriteFile", {"path": str(outside), "content": "kept\n"}), "text: ok"])
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.project_root, agent.client.refuse_writes_outside = project, True
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "note it")
        cards = final_cards(agent, session_id)
        (asked,) = raw_permissions(agent)
    assert outside.read_text() == "kept\n" and agent.client.fs_writes == []
    assert asked["toolCall"]["title"].endswith("(outside the workspace)")  # what was approved
    (card,) = [c for title, c in cards.items() if title.startswith("WriteFile: ")]
    assert card["status"] == "completed"


async def test_a_refusal_inside_the_workspace_reaches_the_card_with_the_clients_reason(share, project):
    inner = project / "inner"
    inner.mkdir()
    write_config(share, [tool_call("w1", "WriteFile", {"path": "a.txt", "content": "x\n"}), "text: ok"])
    async with serve_acp(acp_env(share), fs=True) as agent:
        agent.client.project_root, agent.client.refuse_writes_outside = inner, True  # the editor's root is narrower
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "write")
        card = final_cards(agent, session_id)["WriteFile: a.txt"]
    assert card["status"] == "failed" and not (project / "a.txt").exists()
    assert "Path is outside allowed cwd subtree" in card["rawOutput"]["message"] + card["rawOutput"]["output"]
    assert "Path is outside allowed cwd subtree" in str(card["content"])


async def test_a_refused_terminal_reaches_the_card_with_the_clients_reason(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo hi"}), "text: ok"])
    async with serve_acp(acp_env(share), terminal=True) as agent:
        agent.client.refuse_terminals = True
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "run")
        card = final_cards(agent, session_id)["Shell: echo hi"]
    assert card["status"] == "failed"
    assert "Permission denied for terminal/create" in str(card["content"])
    assert "Internal error" in str(card["content"])  # the message, then the reason


@pytest.mark.parametrize("which", ["sensitive", "outside"])
async def test_a_read_that_asks_is_never_a_read_kind_and_says_why_in_its_title(share, project, which):
    """acpx approves every `read` request by default; CodeCompanion shows only the title."""
    target = share / "config.toml" if which == "sensitive" else Path("/etc/hostname")  # not the temp dir: read freely
    write_config(share, [tool_call("r1", "ReadFile", {"path": str(target)}), "text: ok"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "reject"
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "read it")
        (asked,) = raw_permissions(agent)
        started = list(of_kind(agent.recorder.updates(session_id), "tool_call"))
    reason = "holds credentials" if which == "sensitive" else "outside the workspace"
    title = asked["toolCall"]["title"]
    assert title.startswith("ReadFile: ") and title.endswith(f"{target.name} ({reason})"), title
    assert asked["toolCall"]["kind"] == "other"
    assert started[0]["kind"] == "read"  # the card itself is still a read
