"""Background Shell tasks over ACP: local even with client terminals, cards, and stopped on session/close."""

from __future__ import annotations

import json

from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.processes import live_pids, sleep_marker, wait_until
from tests.support.wire_client import tool_call


async def test_background_task_runs_locally_and_session_close_kills_it(share, project):
    marker = sleep_marker()
    write_config(share, [
        tool_call("bg", "Shell", {"command": f"echo ready; sleep {marker} & sleep {marker}; wait",
                                  "run_in_background": True, "description": "sleepers", "timeout": 3600}),
        tool_call("out", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 1}),
        "text: started",
    ])
    async with serve_acp(acp_env(share), terminal=True) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        assert agent.client.terminals == {}  # not in a client terminal: a terminal belongs to one tool call
        assert await wait_until(lambda: len(live_pids(marker)) >= 2)
        pids = live_pids(marker)
        updates = agent.recorder.updates(session.session_id)
        (permission,) = agent.client.permission_requests
        done = {u["toolCallId"].rsplit("/", 1)[-1]: u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"}
        assert "sleepers (`bash-1`, bash): **running**" in json.dumps(done["bg"].get("content"))
        out_content = json.dumps(done["out"].get("content"))
        assert "retrieval_status: timeout" in out_content and "ready" in out_content
        assert permission["tool_call"].title.startswith("Shell")
        await agent.conn.close_session(session_id=session.session_id)
        assert await wait_until(lambda: not any(p in live_pids(marker) for p in pids), 5), "task survived session/close"


def task_card_text(updates: list[dict], call_id: str) -> str:
    """What the card of `call_id` last says about its task (its last update with content)."""
    with_content = [u for u in updates if u.get("toolCallId", "").endswith(call_id) and u.get("content")]
    return json.dumps(with_content[-1]["content"])


async def test_after_a_restart_a_task_card_shows_how_the_task_ended(share, project):
    marker = sleep_marker()
    write_config(share, [
        tool_call("quick", "Shell", {"command": "echo quick", "run_in_background": True, "description": "quick one"}),
        tool_call("long", "Shell", {"command": f"sleep {marker}", "run_in_background": True,
                                    "description": "long one", "timeout": 3600}),
        "text: started",
    ], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        assert (await agent.prompt(session_id, "go")).stop_reason == "end_turn"
        updates = agent.recorder.updates
        assert await wait_until(lambda: "**completed**" in task_card_text(updates(session_id), "quick"), 5)
        assert "long one (`bash-2`, bash): **running**" in task_card_text(updates(session_id), "long")
    # kimi acp exited: the long task was killed with its session

    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        await agent.conn.load_session(session_id=session_id, cwd=str(project), mcp_servers=[])
        replayed = agent.recorder.updates(session_id)
        assert "quick one (`bash-1`, bash): **completed**" in task_card_text(replayed, "quick")
        assert "long one (`bash-2`, bash): **killed**" in task_card_text(replayed, "long")
        assert "**running**" not in json.dumps(replayed)
    assert not live_pids(marker)
