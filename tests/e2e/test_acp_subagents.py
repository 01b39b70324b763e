"""The Agent tool over ACP: the subagent's calls are cards of their own, its approvals reach the client."""

from __future__ import annotations

import asyncio
import json

from tests.e2e.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.acp_client import spawn_acp
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import tool_call

REPORT = ("Found it. " + "The project has a single file named a.txt that greets the reader. " * 4).strip()


def agent_call(call_id: str, **arguments: object) -> str:
    return tool_call(call_id, "Agent", {"description": "look around", "prompt": "Describe the project.", **arguments})


async def test_subagent_cards_and_approval(share, project):
    (project / "a.txt").write_text("hello\n")
    write_config(share, [
        agent_call("sub", subagent_type="explore"),
        tool_call("c1", "Shell", {"command": "cat a.txt"}),
        "text: Working on it.",  # shown in the parent's card while the subagent runs
        tool_call("c2", "Glob", {"pattern": "*.txt"}),
        f"text: {REPORT}",
        "text: All done.",
    ])
    async with spawn_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "what is here?")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        cards = {u["toolCallId"]: u for u in of_kind(updates, "tool_call")}
        (parent_id,) = [i for i, c in cards.items() if c["title"] == "Agent: look around"]
        assert cards[parent_id]["kind"] == "think"
        children = {c["title"]: c for c in cards.values() if c.get("_meta")}
        assert set(children) == {"[explore] Shell: cat a.txt", "[explore] Glob: *.txt"}
        for child in children.values():
            meta = child["_meta"]["kimi"]
            assert meta["parentToolCallId"] == parent_id and meta["subagentType"] == "explore"
            assert child["toolCallId"] != parent_id and meta["agentId"] in child["toolCallId"]
        # the subagent's Shell asked the client, about the subagent's own card
        (permission,) = agent.client.permission_requests
        shell_id = children["[explore] Shell: cat a.txt"]["toolCallId"]
        assert permission["tool_call"].tool_call_id == shell_id
        assert permission["tool_call"].title == "[explore] Shell: cat a.txt"
        final = {u["toolCallId"]: u for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")}
        assert final[shell_id]["status"] == "completed" and "hello" in json.dumps(final[shell_id]["content"])
        progress = [u for u in of_kind(updates, "tool_call_update") if u["toolCallId"] == parent_id and "content" in u]
        assert "Working on it." in json.dumps(progress[0]["content"])
        assert final[parent_id]["status"] == "completed" and REPORT in json.dumps(final[parent_id]["content"])
        assert "All done." in texts(updates) and "Working on it." not in texts(updates)

    async with spawn_acp(acp_env(share)) as agent:  # a later session/load shows the subagent's cards again
        await agent.initialize()
        await agent.conn.load_session(session_id=session.session_id, cwd=str(project), mcp_servers=[])
        replayed = agent.recorder.updates(session.session_id)
        titles = [u["title"] for u in of_kind(replayed, "tool_call")]
        assert titles == ["Agent: look around", "[explore] Shell: cat a.txt", "[explore] Glob: *.txt"]
        ends = [u["status"] for u in of_kind(replayed, "tool_call_update") if u.get("status") in ("completed", "failed")]
        assert ends == ["completed"] * 3


async def test_cancel_stops_the_subagent(share, project):
    marker = sleep_marker()
    write_config(share, [agent_call("sub"), tool_call("c1", "Shell", {"command": f"sleep {marker}", "timeout": 300})],
                 default_yolo=True)
    async with spawn_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "go"))
        assert await wait_until(lambda: process_alive(marker), timeout=15)
        await agent.conn.cancel(session_id=session.session_id)
        response = await prompt
        assert response.stop_reason == "cancelled"
        assert await wait_until(lambda: not process_alive(marker)), "the subagent's command survived the cancel"
        updates = agent.recorder.updates(session.session_id)
        ended = {u["toolCallId"]: u["status"] for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")}
        assert ended and set(ended.values()) == {"failed"}
