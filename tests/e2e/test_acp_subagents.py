"""The Agent tool over ACP: the subagent's calls are cards of their own, its approvals reach the client."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
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
    async with serve_acp(acp_env(share)) as agent:
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

    async with serve_acp(acp_env(share)) as agent:  # a later session/load shows the subagent's cards again
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
    async with serve_acp(acp_env(share)) as agent:
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


@pytest.mark.processes  # a security guarantee (issue #30): checked on a real `kimi acp`
async def test_a_subagents_yolo_prompt_changes_no_mode(share, project):
    write_config(share, [
        agent_call("sub", prompt="/yolo"),
        f"text: {REPORT}",
        tool_call("s1", "Shell", {"command": "touch pwned"}),
        "text: stopped",
    ], permissions={"always_ask": False})  # a real config's default mode, which must stay
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "reject"
        await agent.initialize()
        session = await agent.new_session(project)
        assert session.modes.current_mode_id == "default"
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert of_kind(updates, "current_mode_update") == [] and of_kind(updates, "config_option_update") == []
        # the subagent's model got "/yolo" as text and answered; the root's next command still asked
        cards = {u["toolCallId"]: u for u in of_kind(updates, "tool_call")}
        (parent_id,) = [i for i, c in cards.items() if c["title"] == "Agent: look around"]
        final = [u for u in of_kind(updates, "tool_call_update") if u["toolCallId"] == parent_id and u.get("status") == "completed"]
        assert final and REPORT in json.dumps(final[-1]["content"])
        (permission,) = agent.client.permission_requests
        assert permission["tool_call"].title == "Shell: touch pwned"
        assert not (project / "pwned").exists()
    (state,) = [p for p in (share / "sessions").rglob("state.json") if "subagents" not in p.parts]
    assert json.loads(state.read_text())["approval"]["yolo"] is False


# --------------------------------------------------------------------------- background subagents between prompts

def helper_model(share, scripts: list[str]) -> dict[str, dict]:
    """A second scripted model for a background subagent (`model="helper"`): its replies do not race the root's."""
    path = share / "helper.json"
    path.write_text(json.dumps(scripts))
    return {
        "providers": {"helper_provider": {"type": "_scripted_echo", "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(path)}}},
        "models": {"helper": {"provider": "helper_provider", "model": "scripted_echo", "max_context_size": 100000}},
    }


def response_index(recorder, method: str) -> int:
    """Where the answer to the last `method` request is among the agent's messages."""
    (request_id,) = [m["id"] for m in recorder.outgoing if m.get("method") == method][-1:]
    return next(i for i, m in enumerate(recorder.incoming) if m.get("id") == request_id and "method" not in m)


def updates_after(recorder, index: int, session_id: str) -> list[dict]:
    return [m["params"]["update"] for m in recorder.incoming[index + 1:]
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id]


def ended(updates: list[dict], card: str) -> dict | None:
    return next((u for u in of_kind(updates, "tool_call_update")
                 if u["toolCallId"] == card and u.get("status") in ("completed", "failed")), None)


async def test_background_subagent_cards_reach_the_client_between_prompts(share, project):
    from tests.e2e.test_acp_cards import ASK, final_card, timeline

    write_config(share, [
        agent_call("bg", subagent_type="explore", run_in_background=True, model="helper"),
        "text: It runs in the background.",
        "text: You are welcome.",
    ], **helper_model(share, [
        tool_call("h1", "Shell", {"command": "echo first"}),
        tool_call("h2", "Shell", {"command": "echo second"}),  # asked and run only once no prompt runs
        f"text: {REPORT}",
    ]))
    async with serve_acp(acp_env(share)) as agent:
        held = asyncio.get_running_loop().create_future()  # h1's answer: given once the prompt has returned
        agent.client.permission_policy = lambda request: held if request["tool_call"].tool_call_id.endswith("/h1") else "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        sid = session.session_id
        response = await agent.prompt(sid, "go")
        assert response.stop_reason == "end_turn"
        recorder = agent.recorder
        turn_end = response_index(recorder, "session/prompt")
        cards = {u["toolCallId"]: u for u in of_kind(recorder.updates(sid), "tool_call")}
        (parent_id,) = [i for i, c in cards.items() if c["title"] == "Agent: look around"]
        assert "(`agent-1`, agent): **running**" in json.dumps(ended(recorder.updates(sid), parent_id)["content"])
        held.set_result("approve")

        def children() -> dict[str, dict]:
            return {u["toolCallId"].rsplit("/", 1)[-1]: u for u in of_kind(recorder.updates(sid), "tool_call") if u.get("_meta")}

        def finished() -> bool:
            updates = recorder.updates(sid)
            return ("h2" in children() and ended(updates, children()["h2"]["toolCallId"]) is not None
                    and "**completed**" in json.dumps(final_card(recorder, parent_id).get("content")))

        assert await wait_until(finished, timeout=60), recorder.updates(sid)[-10:]
        kids = children()
        assert set(kids) == {"h1", "h2"}
        for key, title in (("h1", "[explore] Shell: echo first"), ("h2", "[explore] Shell: echo second")):
            card = kids[key]
            meta = card["_meta"]["kimi"]
            assert card["title"] == title and meta["subagentType"] == "explore"
            assert meta["parentToolCallId"] == parent_id and meta["agentId"].startswith("a")
            assert meta["agentId"] in card["toolCallId"]
            assert timeline(recorder, card["toolCallId"]) == ["pending", ASK, "in_progress", "completed"]
        # what the subagent did after the turn came as updates while no prompt was running: once each
        later = updates_after(recorder, turn_end, sid)
        h1, h2 = kids["h1"]["toolCallId"], kids["h2"]["toolCallId"]
        assert [u["toolCallId"] for u in of_kind(later, "tool_call")] == [h2] or \
            [u["toolCallId"] for u in of_kind(later, "tool_call")] == [h1, h2]
        assert [u.get("status") for u in later if u.get("toolCallId") == h2 and "status" in u] == ["pending", "in_progress", "completed"]
        assert "in_progress" in [u.get("status") for u in later if u.get("toolCallId") == h1]
        assert "second" in json.dumps(ended(later, h2)["content"]) and "first" in json.dumps(ended(later, h1)["content"])
        assert len(of_kind(recorder.updates(sid), "tool_call")) == 3  # no card twice
        # the Agent card: the task's state, its end after the subagent's last card
        positions = [i for i, u in enumerate(later) if u.get("toolCallId") in (h2, parent_id)]
        assert later[positions[-1]]["toolCallId"] == parent_id
        assert "look around (`agent-1`, agent): **completed**" in json.dumps(final_card(recorder, parent_id)["content"])
        assert (await agent.prompt(sid, "thanks")).stop_reason == "end_turn"
        assert len(of_kind(recorder.updates(sid), "tool_call")) == 3

    async with serve_acp(acp_env(share)) as agent:  # session/load replays the background cards like foreground ones
        await agent.initialize()
        await agent.conn.load_session(session_id=sid, cwd=str(project), mcp_servers=[])
        replayed = agent.recorder.updates(sid)
        starts = of_kind(replayed, "tool_call")
        assert [u["title"] for u in starts] == ["Agent: look around", "[explore] Shell: echo first", "[explore] Shell: echo second"]
        assert {u["_meta"]["kimi"]["parentToolCallId"] for u in starts[1:]} == {starts[0]["toolCallId"]}
        ends = [u["status"] for u in of_kind(replayed, "tool_call_update") if u.get("status") in ("completed", "failed")]
        assert ends == ["completed"] * 3


async def test_nothing_is_sent_for_a_closed_session_whose_background_subagent_ran(share, project):
    marker = sleep_marker()
    write_config(share, [
        agent_call("bg", run_in_background=True, model="helper"),
        "text: started",
    ], default_yolo=True, **helper_model(share, [
        tool_call("h1", "Shell", {"command": f"sleep {marker}", "timeout": 300}),
        f"text: {REPORT}",
    ]))
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        sid = session.session_id
        assert (await agent.prompt(sid, "go")).stop_reason == "end_turn"
        recorder = agent.recorder

        def shell_card_started() -> bool:
            return any(u.get("_meta") for u in of_kind(recorder.updates(sid), "tool_call"))

        assert await wait_until(lambda: process_alive(marker) and shell_card_started(), timeout=60)
        await agent.conn.close_session(session_id=sid)
        closed_at = response_index(recorder, "session/close")
        assert await wait_until(lambda: not process_alive(marker), timeout=30), "the subagent's command survived session/close"
        # a barrier: another session's whole prompt (a slash command: no model), after anything late
        other = await agent.new_session(project)
        assert (await agent.prompt(other.session_id, "/help")).stop_reason == "end_turn"
        assert texts(agent.recorder.updates(other.session_id))
        assert updates_after(recorder, closed_at, sid) == []
        # nor while it closed: the killed command's card and the task's end were not shown
        every = recorder.updates(sid)
        (shell,) = [u["toolCallId"] for u in of_kind(every, "tool_call") if u.get("_meta")]
        assert ended(every, shell) is None and "killed" not in json.dumps(every)
        assert not [r for r in recorder.requests("session/request_permission") if r["params"]["sessionId"] == sid]
