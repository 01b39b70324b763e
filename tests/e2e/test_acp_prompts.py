"""`kimi acp` prompts end to end: streaming, tool cards, permissions, cancel, errors, concurrency."""

from __future__ import annotations

import asyncio
import json
import time

import acp
import pytest

from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


@pytest.mark.smoke
async def test_text_streams_with_title_and_usage(share, project):
    write_config(share, ["think: pondering\ntext: Hello\ntext: , IDE\nusage: input_other=40 output=5"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "Say hello")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        assert texts(updates) == "Hello, IDE"
        assert texts(updates, "agent_thought_chunk") == "pondering"
        streamed = [(u["sessionUpdate"], u["content"]["text"]) for u in updates if u["sessionUpdate"].endswith("_chunk")]
        assert streamed == [  # chunk by chunk as the model sent them, the thought first
            ("agent_thought_chunk", "pondering"),
            ("agent_message_chunk", "Hello"),
            ("agent_message_chunk", ", IDE"),
        ]
        assert [(u["used"], u["size"]) for u in of_kind(updates, "usage_update")] == [(40, 100000)]
        info = of_kind(updates, "session_info_update")
        assert info and info[0]["title"] == "Say hello" and info[0]["updatedAt"]


@pytest.mark.smoke
async def test_tool_cards_have_kind_locations_raw_input_diff_and_plan(share, project):
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    scripts = [
        tool_call("r1", "ReadFile", {"path": "notes.txt", "line_offset": 2}),
        tool_call("e1", "StrReplaceFile", {"path": "notes.txt", "edit": {"old": "two", "new": "TWO"}}),
        tool_call("p1", "SetTodoList", {"todos": [{"title": "Read", "status": "done"}, {"title": "Edit", "status": "in_progress"}]}),
        "text: all done",
    ]
    write_config(share, scripts, default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "edit it")
        assert response.stop_reason == "end_turn"
        updates = agent.recorder.updates(session.session_id)
        starts = of_kind(updates, "tool_call")
        assert [s["title"] for s in starts] == ["ReadFile: notes.txt", "StrReplaceFile: notes.txt", "SetTodoList"]
        assert [s["kind"] for s in starts] == ["read", "edit", "think"]
        assert starts[0]["rawInput"] == {"path": "notes.txt", "line_offset": 2}
        assert starts[0]["locations"] == [{"path": str(project / "notes.txt"), "line": 2}]
        ids = [s["toolCallId"] for s in starts]
        assert len(set(ids)) == 3
        finals = {u["toolCallId"]: u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"}
        diff = finals[ids[1]]["content"][0]
        assert diff["type"] == "diff" and diff["path"] == str(project / "notes.txt")
        assert "two" in diff["oldText"] and "TWO" in diff["newText"]
        assert finals[ids[1]]["locations"][0]["line"] == 2
        plan = of_kind(updates, "plan")[-1]["entries"]
        assert plan == [
            {"content": "Read", "priority": "medium", "status": "completed"},
            {"content": "Edit", "priority": "medium", "status": "in_progress"},
        ]
        assert (project / "notes.txt").read_text() == "one\nTWO\nthree\n"


async def test_tool_call_ids_are_unique_across_turns(share, project):
    write_config(share, [tool_call("same", "Glob", {"pattern": "*"}), "text: a", tool_call("same", "Glob", {"pattern": "*"}), "text: b"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "one")
        await agent.prompt(session.session_id, "two")
        ids = [u["toolCallId"] for u in of_kind(agent.recorder.updates(session.session_id), "tool_call")]
        assert len(ids) == 2 and ids[0] != ids[1]


async def test_streamed_arguments_update_the_card_title(share, project):
    script = "\n".join(
        [
            'tool_call: {"id": "g1", "name": "Glob", "arguments": null}',
            'tool_call_part: {"arguments_part": "{\\"pattern\\": \\"src/"}',
            'tool_call_part: {"arguments_part": "**/*.py\\"}"}',
        ]
    )
    write_config(share, [script, "text: ok"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "find")
        updates = agent.recorder.updates(session.session_id)
        start = of_kind(updates, "tool_call")[0]
        assert start["title"] == "Glob"
        titles = [u["title"] for u in of_kind(updates, "tool_call_update") if "title" in u]
        assert "Glob: src/" not in titles and titles[-1] == "Glob: src/**/*.py"  # never half the pattern
        assert set(titles) == {"Glob: src/**/*.py"}
        final = [u for u in of_kind(updates, "tool_call_update") if "rawInput" in u][-1]
        assert final["rawInput"] == {"pattern": "src/**/*.py"}


@pytest.mark.parametrize(
    ("answer", "ran", "second_step"),
    [("approve", True, True), ("reject", False, False), ("cancelled", False, False)],
)
@pytest.mark.smoke
async def test_permission_outcomes(share, project, answer, ran, second_step):
    marker = project / "ran.txt"
    write_config(share, [tool_call("s1", "Shell", {"command": "touch ran.txt"}), "text: after"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: answer
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "go")
        assert response.stop_reason == "end_turn"
        (request,) = agent.client.permission_requests
        assert [o.option_id for o in request["options"]] == ["approve", "approve_for_session", "reject"]
        assert [o.kind for o in request["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert request["options"][1].name == "Always allow `touch ran.txt` in this session"
        card = request["tool_call"]
        assert card.title == "Shell: touch ran.txt" and card.kind == "execute"
        (raw,) = agent.recorder.requests("session/request_permission")
        assert raw["params"]["toolCall"]["name"] == "Shell"  # schema 1.25's field, which the SDK's model lacks
        assert card.raw_input == {"command": "touch ran.txt"}
        assert marker.exists() == ran
        updates = agent.recorder.updates(session.session_id)
        assert ("after" in texts(updates)) == second_step
        final = [u for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")][-1]
        assert final["status"] == ("completed" if ran else "failed")


async def test_approve_for_session_covers_later_calls_and_is_persisted(share, project):
    scripts = [
        tool_call("s1", "Shell", {"command": "git status"}),
        "text: first",
        tool_call("s2", "Shell", {"command": "git status --short"}),
        "text: second",
        tool_call("s3", "Shell", {"command": "git push"}),
        "text: third",
    ]
    write_config(share, scripts)
    async with serve_acp(acp_env(share), terminal=True) as agent:
        agent.client.permission_policy = lambda request: "approve_for_session"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "one")
        await agent.prompt(session.session_id, "two")
        assert len(agent.client.permission_requests) == 1  # the terminal run needed no second ask
        assert agent.client.permission_requests[0]["options"][1].name == "Always allow `git status …` in this session"
        assert len([c for c in agent.client.terminal_calls if c[0] == "create"]) == 2
        await agent.prompt(session.session_id, "three")
        assert len(agent.client.permission_requests) == 2  # `git push` was not what the card showed
    state = next(share.glob(f"sessions/*/{session.session_id}/state.json"))
    assert json.loads(state.read_text())["approval"]["auto_approve_actions"] == ["run command:git status", "run command:exactly=git push"]


async def test_diff_is_shown_in_the_permission_request(share, project):
    write_config(share, [tool_call("w1", "WriteFile", {"path": "new.txt", "content": "fresh\n"}), "text: ok"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "write")
        card = agent.client.permission_requests[0]["tool_call"]
        diff = card.content[0]
        assert diff.type == "diff" and diff.path == str(project / "new.txt")
        assert diff.old_text is None and diff.new_text == "fresh\n"
        assert card.locations[0].path == str(project / "new.txt")


async def test_cancel_during_a_permission_request(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo never"}), "text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        never = asyncio.get_running_loop().create_future()
        agent.client.permission_policy = lambda request: never  # the user never answers
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "go"))
        await asyncio.wait_for(agent.client.permission_event.wait(), 10)
        started = time.monotonic()
        await agent.conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        assert time.monotonic() - started < 1.0
        assert response.stop_reason == "cancelled"
        count = len(agent.recorder.updates(session.session_id))
        await asyncio.sleep(0.3)
        assert len(agent.recorder.updates(session.session_id)) == count, "updates after the cancelled prompt's response"
        never.set_result("approve")  # a late answer is ignored
        follow = await agent.prompt(session.session_id, "next")
        assert follow.stop_reason == "end_turn"


async def test_cancel_during_a_client_terminal(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "sleep 30"}), "text: unused"], default_yolo=True)
    async with serve_acp(acp_env(share), terminal=True) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "wait"))
        for _ in range(200):
            if any(c[0] == "wait_for_exit" for c in agent.client.terminal_calls):
                break
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await agent.conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        assert time.monotonic() - started < 1.0
        assert response.stop_reason == "cancelled"
        for _ in range(100):
            if any(c[0] == "release" for c in agent.client.terminal_calls):
                break
            await asyncio.sleep(0.02)
        (record,) = agent.client.terminals.values()
        assert record["killed"] and record["released"]


async def test_provider_error_is_a_jsonrpc_error(share, project):
    write_config(share, ["error: 400 The model `nope` does not exist"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        with pytest.raises(acp.RequestError) as caught:
            await agent.prompt(session.session_id, "hi")
        assert caught.value.code == -32603
        assert "does not exist" in str(caught.value)


async def test_provider_error_after_partial_output_is_visible_too(share, project):
    write_config(share, [tool_call("g1", "Glob", {"pattern": "*"}), "text: partial answer\nerror: 400 the request was malformed"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        with pytest.raises(acp.RequestError) as caught:
            await agent.prompt(session.session_id, "hi")
        assert "the request was malformed" in str(caught.value)
        shown = texts(agent.recorder.updates(session.session_id))
        assert shown.startswith("partial answer") and "the request was malformed" in shown


async def test_max_steps_gives_max_turn_requests(share, project):
    write_config(share, [tool_call("g1", "Glob", {"pattern": "*"}), "text: unreachable"], loop_control={"max_steps_per_turn": 1})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "loop")
        assert response.stop_reason == "max_turn_requests"


async def test_two_sessions_in_different_cwds_prompt_at_once(share, tmp_path):
    dirs = [tmp_path / "alpha", tmp_path / "beta"]
    for d in dirs:
        d.mkdir()
    script = tool_call("p1", "Shell", {"command": "sleep 0.3; pwd"})
    write_config(share, [script, "text: done"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        sessions = [await agent.new_session(d) for d in dirs]
        started = time.monotonic()
        results = await asyncio.gather(*(agent.prompt(s.session_id, "where") for s in sessions))
        assert time.monotonic() - started < 2.5  # concurrent, not one after the other
        assert [r.stop_reason for r in results] == ["end_turn", "end_turn"]
        for session, directory in zip(sessions, dirs):
            updates = agent.recorder.updates(session.session_id)
            outputs = json.dumps([u.get("content") for u in of_kind(updates, "tool_call_update")])
            assert str(directory) in outputs
            other = dirs[1] if directory == dirs[0] else dirs[0]
            assert str(other) not in outputs


async def test_second_prompt_waits_for_the_first(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "sleep 0.3"}), "text: first", "text: second"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        first = asyncio.create_task(agent.prompt(session.session_id, "one"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(agent.prompt(session.session_id, "two"))
        results = await asyncio.gather(first, second)
        assert [r.stop_reason for r in results] == ["end_turn", "end_turn"]
        assert texts(agent.recorder.updates(session.session_id)) == "firstsecond"


async def test_prompt_with_image_resource_and_link_blocks(share, project):
    write_config(share, ["text: seen"], models={"scripted": {"provider": "scripted_provider", "model": "scripted_echo",
                                                             "max_context_size": 100000, "capabilities": ["image_in"]}})
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        blocks = [
            acp.text_block("look at these"),
            acp.image_block("iVBORw0KGgo=", "image/png"),
            acp.resource_block(acp.embedded_text_resource("file:///x/readme.md", "# Readme")),
            acp.resource_link_block("spec", "file:///x/spec.md"),
        ]
        response = await agent.conn.prompt(session_id=session.session_id, prompt=blocks)
        assert response.stop_reason == "end_turn"
    context = next(share.glob(f"sessions/*/{session.session_id}/context.jsonl")).read_text()
    assert "data:image/png;base64,iVBORw0KGgo=" in context
    assert "# Readme" in context and "file:///x/spec.md" in context


async def test_image_for_a_model_without_image_input_is_invalid_params(share, project):
    write_config(share, ["text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.prompt(session_id=session.session_id, prompt=[acp.image_block("iVBORw0KGgo=", "image/png")])
        assert caught.value.code == -32602
