"""A card goes `in_progress` when the core says its call runs (`ToolStarted`), and never before the
answer of a permission request about it, even when the session would have let the call run
unasked: an `ask` rule in yolo mode, a file holding credentials, a command approved for the
session that names a credentials file. (Until issue #31 the front end guessed from the session's
approvals, showed such a card running and put it back to `pending` when the request came.)"""

from __future__ import annotations

from tests.e2e.test_acp_cards import ASK, card_id, timeline
from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


async def test_an_ask_rule_in_yolo_mode_keeps_the_card_pending_until_the_answer(share, project):
    write_config(
        share, [tool_call("w1", "WriteFile", {"path": "out.txt", "content": "hi\n"}), "text: done"],
        permissions={"ask": ["WriteFile"]},
    )
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        response = await agent.prompt(session.session_id, "write it")
        assert response.stop_reason == "end_turn"
        assert len(agent.client.permission_requests) == 1  # the rule asks, yolo or not
        assert timeline(agent.recorder, card_id(agent.recorder, "WriteFile")) == ["pending", ASK, "in_progress", "completed"]
    assert (project / "out.txt").read_text() == "hi\n"


async def test_a_read_of_a_credentials_file_is_pending_until_the_answer(share, project):
    (project / ".env").write_text("TOKEN=abc\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": ".env"}), "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
        (request,) = agent.client.permission_requests
        assert "holds credentials" in request["tool_call"].title
        assert timeline(agent.recorder, card_id(agent.recorder, "ReadFile")) == ["pending", ASK, "in_progress", "completed"]


async def test_a_command_approved_for_the_session_that_names_credentials_asks_before_it_runs(share, project):
    (project / ".env").write_text("TOKEN=abc\n")
    write_config(share, [
        tool_call("c1", "Shell", {"command": "cat notes.txt"}),
        tool_call("c2", "Shell", {"command": "cat .env"}),
        "text: done",
    ])
    (project / "notes.txt").write_text("n\n")
    async with serve_acp(acp_env(share)) as agent:
        answers = ["approve_for_session", "reject"]
        agent.client.permission_policy = lambda request: answers.pop(0)
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read them")
        assert len(agent.client.permission_requests) == 2  # `cat` for the session does not cover a credentials file
        recorder = agent.recorder
        assert timeline(recorder, card_id(recorder, "Shell: cat notes.txt")) == ["pending", ASK, "in_progress", "completed"]
        assert timeline(recorder, card_id(recorder, "Shell: cat .env")) == ["pending", ASK, "failed"]


async def test_a_tool_that_never_asks_runs_at_once_and_a_refused_call_never_runs(share, project):
    write_config(
        share,
        [tool_call("t1", "SetTodoList", {"todos": [{"title": "Read", "status": "done"}]}),
         tool_call("s1", "Shell", {"command": "rm -rf build"}), "text: done"],
        permissions={"deny": ["Shell(rm:*)"]},
    )  # fmt: skip
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "go")
        assert agent.client.permission_requests == []
        recorder = agent.recorder
        assert timeline(recorder, card_id(recorder, "SetTodoList")) == ["pending", "in_progress", "completed"]
        assert timeline(recorder, card_id(recorder, "Shell")) == ["pending", "failed"]  # denied by the rule: it never ran
