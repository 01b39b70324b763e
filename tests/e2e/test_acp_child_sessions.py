"""Subagents as child sessions (issue #32 item 2), for a client that advertised `clientCapabilities.subagents`:
announced on the parent, their traffic under their own session id, the task and the report as
session messages, cancel of one child, and the same children after a session/load in a fresh process.

`serve_acp` / `spawn_acp` validate every message the agent sends against the vendored unstable schema.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import acp
import pytest

from tests.e2e.test_acp_cards import final_card
from tests.e2e.test_acp_ide_fields import cancel_requests, permission_request_ids
from tests.e2e.test_acp_subagents import REPORT, agent_call, helper_model
from tests.support.acp_client import Recorder, spawn_acp
from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import tool_call

CHILD_KINDS = ("subagent_update", "session_message", "session_message_chunk")


async def initialize(agent: Any, subagents: bool = True) -> None:
    """`initialize` as sent (the SDK's models drop `subagents`), with the test client's own capabilities."""
    caps = {**agent.client.capabilities(), **({"subagents": {}} if subagents else {})}
    await agent.conn._conn.send_request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})


def session_updates(recorder: Recorder) -> list[tuple[str, dict[str, Any]]]:
    """(session id, update) of every session/update, in arrival order."""
    return [(m["params"]["sessionId"], m["params"]["update"]) for m in recorder.incoming if m.get("method") == "session/update"]


def announcements(recorder: Recorder, parent: str) -> list[dict[str, Any]]:
    return [u for sid, u in session_updates(recorder) if sid == parent and u["sessionUpdate"] == "subagent_update"]


def states(recorder: Recorder, parent: str, child: str) -> list[str]:
    """The child's work states, as its parent's subagent_updates said them ("idle:end_turn")."""
    found = []
    for update in announcements(recorder, parent):
        state = update.get("state")
        if update["sessionId"] == child and state:
            found.append(":".join(filter(None, (state["state"], state.get("stopReason")))))
    return found


def transcript(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """A child session's messages as a reader follows them: (kind, messageId, text), chunks joined."""
    items: list[tuple[str, str, str]] = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            text = update["content"].get("text", "")
            if items and items[-1][:2] == (kind, update["messageId"]):
                items[-1] = (kind, update["messageId"], items[-1][2] + text)
            else:
                items.append((kind, update["messageId"], text))
        elif kind == "session_message":
            sender, recipient = update["senderSessionId"], update["recipientSessionId"]
            text = "".join(block.get("text", "") for block in update["content"])
            items.append((f"session_message {sender} -> {recipient}", update["messageId"], text))
        elif kind == "tool_call":
            items.append(("tool_call", update["title"], update["kind"]))
    return items


async def a_child_asks(agent: Any, project: Any) -> tuple[str, str, asyncio.Task[Any], asyncio.Future[str]]:
    """A prompt whose subagent's permission request stays open: (parent, child, the prompt, its answer to give)."""
    never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    agent.client.permission_policy = lambda request: never
    await initialize(agent)
    session = await agent.new_session(project)
    parent = session.session_id
    prompt = asyncio.create_task(agent.prompt(parent, "go"))
    await asyncio.wait_for(agent.client.permission_event.wait(), 10)
    return parent, announcements(agent.recorder, parent)[0]["sessionId"], prompt, never


SCRIPT = [
    agent_call("sub", subagent_type="explore"),
    tool_call("c1", "Shell", {"command": "cat a.txt"}),
    "text: Working on it.",
    tool_call("c2", "Glob", {"pattern": "*.txt"}),
    f"text: {REPORT}",
    "text: All done.",
]


async def test_a_subagent_is_a_child_session_and_comes_back_after_a_load(share, project):
    (project / "a.txt").write_text("hello\n")
    write_config(share, SCRIPT)
    async with serve_acp(acp_env(share)) as agent:
        await initialize(agent)
        session = await agent.new_session(project)
        parent = session.session_id
        response = await agent.prompt(parent, "what is here?")
        assert response.stop_reason == "end_turn"
        recorder = agent.recorder
        everything = session_updates(recorder)
        (announce, *later) = announcements(recorder, parent)
        child = announce["sessionId"]
        agent_id = announce["_meta"]["kimi"]["agentId"]
        assert child == f"{parent}/subagents/{agent_id}"
        assert (share / "sessions").rglob(f"subagents/{agent_id}/context.jsonl")
        # the announcement, field by field, before any of the child's traffic
        assert announce["title"] == "look around" and announce["description"].startswith("The explore subagent: ")
        assert announce["cwd"] == str(project) and announce["state"] == {"state": "running"}
        assert announce["capabilities"] == {"cancel": {}}
        first_child = next(i for i, (sid, _) in enumerate(everything) if sid == child)
        assert everything.index((parent, announce)) < first_child
        # the parent's thread: the Agent card with its result, no card or text of the child's
        parent_updates = recorder.updates(parent)
        (card,) = of_kind(parent_updates, "tool_call")
        assert card["title"] == "Agent: look around" and announce["_meta"]["kimi"]["parentToolCallId"] == card["toolCallId"]
        final = [u for u in of_kind(parent_updates, "tool_call_update") if u["toolCallId"] == card["toolCallId"] and u.get("status")]
        assert final[-1]["status"] == "completed" and REPORT in json.dumps(final[-1]["content"])
        assert texts(parent_updates) == "All done." and "Working on it." not in json.dumps(parent_updates)
        assert {u["sessionUpdate"] for u in parent_updates} & set(CHILD_KINDS) == {"subagent_update"}
        # the child's thread: the task from the parent, its own cards and text, its report to the parent
        child_updates = recorder.updates(child)
        live = transcript(child_updates)
        kinds = [item[0] for item in live]
        to_child, to_parent = f"session_message {parent} -> {child}", f"session_message {child} -> {parent}"
        assert kinds == [to_child, "tool_call", "agent_message_chunk", to_child, "tool_call", "agent_message_chunk", to_parent]
        assert live[0][2] == "Describe the project." and live[1][1:] == ("Shell: cat a.txt", "execute")
        assert live[2][2] == "Working on it." and live[4][1] == "Glob: *.txt" and live[5][2] == REPORT
        assert REPORT in live[6][2] and f"agent_id: {agent_id}" in live[6][2]
        assert not [u for u in child_updates if "[explore]" in json.dumps(u)]
        # its permission request went out under its id, about its own card; it required action meanwhile
        (request,) = recorder.requests("session/request_permission")
        shell = of_kind(child_updates, "tool_call")[0]["toolCallId"]
        assert request["params"]["sessionId"] == child and request["params"]["toolCall"]["toolCallId"] == shell
        assert states(recorder, parent, child) == ["running", "requires_action", "running", "idle:end_turn"]

    # a fresh process loads the parent: the same child, announced first, and the same messages
    async with spawn_acp(acp_env(share)) as fresh:
        await initialize(fresh)
        await fresh.conn.load_session(session_id=parent, cwd=str(project), mcp_servers=[])
        replayed = session_updates(fresh.recorder)
        (again, *_) = announcements(fresh.recorder, parent)
        assert again["sessionId"] == child
        assert {k: v for k, v in again.items() if k != "_meta"} == {k: v for k, v in announce.items() if k != "_meta"}
        assert replayed.index((parent, again)) < next(i for i, (sid, _) in enumerate(replayed) if sid == child)
        assert transcript(fresh.recorder.updates(child)) == live
        assert states(fresh.recorder, parent, child)[-1] == "idle:end_turn"
        assert [u["title"] for u in of_kind(fresh.recorder.updates(parent), "tool_call")] == ["Agent: look around"]


async def test_without_the_capability_the_subagent_stays_in_the_parents_thread(share, project):
    (project / "a.txt").write_text("hello\n")
    write_config(share, SCRIPT)
    async with serve_acp(acp_env(share)) as agent:
        await initialize(agent, subagents=False)
        session = await agent.new_session(project)
        assert (await agent.prompt(session.session_id, "what is here?")).stop_reason == "end_turn"
        assert {sid for sid, _ in session_updates(agent.recorder)} == {session.session_id}
        updates = agent.recorder.updates(session.session_id)
        assert not [u for u in updates if u["sessionUpdate"] in CHILD_KINDS]
        titles = [u["title"] for u in of_kind(updates, "tool_call")]
        assert titles == ["Agent: look around", "[explore] Shell: cat a.txt", "[explore] Glob: *.txt"]
        (request,) = agent.recorder.requests("session/request_permission")
        assert request["params"]["sessionId"] == session.session_id


async def test_cancelling_a_child_with_a_pending_permission_request_ends_only_its_work(share, project):
    write_config(share, [
        agent_call("sub"),
        tool_call("c1", "Shell", {"command": "echo never"}),
        "text: The agent was stopped; carrying on without it.",
    ])
    async with serve_acp(acp_env(share)) as agent:
        parent, child, prompt, never = await a_child_asks(agent, project)
        assert agent.client.permission_requests[0]["session_id"] == child
        await agent.conn.cancel(session_id=child)
        response = await asyncio.wait_for(prompt, 10)
        never.set_result("cancelled")  # what the client answers a withdrawn request
        assert response.stop_reason == "end_turn"  # the parent's turn went on
        assert cancel_requests(agent.recorder) == permission_request_ids(agent.recorder)
        parent_updates = agent.recorder.updates(parent)
        (card,) = of_kind(parent_updates, "tool_call")
        ended = [u for u in of_kind(parent_updates, "tool_call_update") if u["toolCallId"] == card["toolCallId"] and u.get("status")]
        assert ended[-1]["status"] == "failed" and "The user stopped this agent" in json.dumps(ended[-1]["content"])
        assert "carrying on without it" in texts(parent_updates)
        assert states(agent.recorder, parent, child) == ["running", "requires_action", "idle:cancelled"]
        shell = of_kind(agent.recorder.updates(child), "tool_call")[0]["toolCallId"]
        assert [u["status"] for u in of_kind(agent.recorder.updates(child), "tool_call_update") if u.get("status")][-1] == "failed"
        assert shell == agent.client.permission_requests[0]["tool_call"].tool_call_id


async def test_only_session_cancel_applies_to_a_child_session(share, project):
    write_config(share, [agent_call("sub"), f"text: {REPORT}", "text: done", "text: still here"])
    async with serve_acp(acp_env(share)) as agent:
        await initialize(agent)
        session = await agent.new_session(project)
        parent = session.session_id
        assert (await agent.prompt(parent, "go")).stop_reason == "end_turn"
        child = announcements(agent.recorder, parent)[0]["sessionId"]
        with pytest.raises(acp.RequestError) as refused:
            await agent.prompt(child, "hello child")
        assert refused.value.code == -32602 and "only session/cancel applies" in str(refused.value.data)
        await agent.conn.cancel(session_id=child)  # an idle child: nothing to stop, nothing else changes
        assert (await agent.prompt(parent, "still there?")).stop_reason == "end_turn"
        assert states(agent.recorder, parent, child) == ["running", "idle:end_turn"]
        assert texts(agent.recorder.updates(parent)).endswith("still here")


# --------------------------------------------------------------------------- background subagents


async def test_a_background_child_works_between_prompts_and_is_the_same_after_a_load(share, project):
    write_config(share, [
        agent_call("bg", subagent_type="explore", run_in_background=True, model="helper"),
        "text: It runs in the background.",
    ], **helper_model(share, [tool_call("h1", "Shell", {"command": "echo first"}), f"text: {REPORT}"]))
    async with serve_acp(acp_env(share)) as agent:
        held = asyncio.get_running_loop().create_future()  # answered once the prompt has returned
        agent.client.permission_policy = lambda request: held
        await initialize(agent)
        session = await agent.new_session(project)
        parent = session.session_id
        assert (await agent.prompt(parent, "go")).stop_reason == "end_turn"
        await asyncio.wait_for(agent.client.permission_event.wait(), 10)
        child = announcements(agent.recorder, parent)[0]["sessionId"]
        assert agent.client.permission_requests[0]["session_id"] == child
        held.set_result("approve")
        assert await wait_until(lambda: "idle:end_turn" in states(agent.recorder, parent, child), timeout=30)
        live = transcript(agent.recorder.updates(child))
        assert [kind for kind, *_ in live] == [
            f"session_message {parent} -> {child}", "tool_call", "agent_message_chunk", f"session_message {child} -> {parent}",
        ]
        assert live[-1][2].endswith(REPORT)  # the report the task returned, read back from its log
        assert states(agent.recorder, parent, child) == ["running", "requires_action", "running", "idle:end_turn"]
        (card,) = of_kind(agent.recorder.updates(parent), "tool_call")
        assert "**completed**" in json.dumps(final_card(agent.recorder, card["toolCallId"])["content"])

    async with spawn_acp(acp_env(share)) as fresh:
        await initialize(fresh)
        await fresh.conn.load_session(session_id=parent, cwd=str(project), mcp_servers=[])
        assert [u["sessionId"] for u in announcements(fresh.recorder, parent)][:1] == [child]
        assert transcript(fresh.recorder.updates(child)) == live
        assert states(fresh.recorder, parent, child) == ["running", "idle:end_turn"]


async def test_cancelling_a_background_child_stops_its_task_only(share, project):
    marker = sleep_marker()
    write_config(share, [
        agent_call("bg", run_in_background=True, model="helper"),
        "text: started",
        "text: still here",
    ], default_yolo=True, **helper_model(share, [tool_call("h1", "Shell", {"command": f"sleep {marker}", "timeout": 300})]))
    async with serve_acp(acp_env(share)) as agent:
        await initialize(agent)
        session = await agent.new_session(project)
        parent = session.session_id
        assert (await agent.prompt(parent, "go")).stop_reason == "end_turn"
        assert await wait_until(lambda: process_alive(marker), timeout=30)
        child = announcements(agent.recorder, parent)[0]["sessionId"]
        await agent.conn.cancel(session_id=child)
        assert await wait_until(lambda: not process_alive(marker), timeout=15), "the child's command survived its cancel"
        assert await wait_until(lambda: "idle:cancelled" in states(agent.recorder, parent, child), timeout=15)
        (card,) = of_kind(agent.recorder.updates(parent), "tool_call")
        assert "**killed**" in json.dumps(final_card(agent.recorder, card["toolCallId"])["content"])
        assert (await agent.prompt(parent, "and now?")).stop_reason == "end_turn"  # the parent is untouched
        assert texts(agent.recorder.updates(parent)).endswith("still here")


async def test_a_childs_file_reads_and_terminals_name_its_session(share, project):
    (project / "a.txt").write_text("from disk\n")
    write_config(share, [
        agent_call("sub"),
        tool_call("r1", "ReadFile", {"path": "a.txt"}),
        tool_call("s1", "Shell", {"command": "echo in-terminal"}),
        f"text: {REPORT}",
        tool_call("r2", "ReadFile", {"path": "a.txt"}),
        "text: done",
    ])
    async with serve_acp(acp_env(share), fs=True, terminal=True) as agent:
        await initialize(agent)
        session = await agent.new_session(project)
        parent = session.session_id
        agent.client.buffers[str(project / "a.txt")] = "from the editor\n"
        assert (await agent.prompt(parent, "go")).stop_reason == "end_turn"
        child = announcements(agent.recorder, parent)[0]["sessionId"]
        sessions_of = [(m["method"], m["params"]["sessionId"]) for m in agent.recorder.incoming
                       if m.get("method", "").startswith(("fs/", "terminal/"))]
        reads = [sid for method, sid in sessions_of if method == "fs/read_text_file"]
        assert reads == [child, parent]  # the child's read, then the parent's own
        assert {sid for method, sid in sessions_of if method.startswith("terminal/")} == {child}
        (create,) = agent.recorder.requests("terminal/create")
        shell = [u for u in of_kind(agent.recorder.updates(child), "tool_call") if u["title"].startswith("Shell")][0]
        terminal_refs = [c for u in agent.recorder.updates(child) if u.get("toolCallId") == shell["toolCallId"]
                         for c in u.get("content") or [] if c["type"] == "terminal"]
        assert terminal_refs and {c["terminalId"] for c in terminal_refs} == set(agent.client.terminals)
        assert create["params"]["sessionId"] == child
        read_card = of_kind(agent.recorder.updates(child), "tool_call")[0]
        assert "from the editor" in json.dumps(final_card(agent.recorder, read_card["toolCallId"]).get("content"))


async def test_cancelling_the_parent_ends_its_foreground_child_and_withdraws_the_childs_question(share, project):
    write_config(share, [agent_call("sub"), tool_call("c1", "Shell", {"command": "echo never"}), "text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        parent, child, prompt, never = await a_child_asks(agent, project)
        await agent.conn.cancel(session_id=parent)
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
        never.set_result("cancelled")
        assert cancel_requests(agent.recorder) == permission_request_ids(agent.recorder)
        assert states(agent.recorder, parent, child)[-1] == "idle:cancelled"


async def test_a_question_of_an_agent_files_subagent_is_asked_in_its_child_session(share, project):
    (share / "asker.yaml").write_text("agent:\n  extend: default\n")
    (share / "agent.yaml").write_text("agent:\n  extend: default\n  subagents:\n    asker: {path: ./asker.yaml, description: Asks.}\n")
    question = {"question": "Which language?", "options": [{"label": "Python"}, {"label": "Rust"}]}
    write_config(share, [
        agent_call("sub", subagent_type="asker"),
        tool_call("q1", "AskUserQuestion", {"questions": [question]}),
        f"text: {REPORT}",
        "text: done",
    ], agent_file=str(share / "agent.yaml"))
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: request["options"][1].option_id  # "Rust"
        await initialize(agent)
        session = await agent.new_session(project)
        assert (await agent.prompt(session.session_id, "ask me")).stop_reason == "end_turn"
        child = announcements(agent.recorder, session.session_id)[0]["sessionId"]
        (asked,) = agent.client.permission_requests
        (card,) = of_kind(agent.recorder.updates(child), "tool_call")
        assert asked["session_id"] == child and asked["tool_call"].tool_call_id == card["toolCallId"]
        assert "Rust" in json.dumps(final_card(agent.recorder, card["toolCallId"]).get("rawOutput"))
