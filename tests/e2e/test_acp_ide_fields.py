"""What IDEs build their thread from, through `kimi acp` and the official SDK client (issue #22):

- every `tool_call` names its tool (`name`), every message chunk carries a `messageId`, and a
  `session/load` replays each message with the id it had live;
- a finished card carries what the tool returned to the model (`rawOutput`);
- a card streamed while its arguments arrive never shows a placeholder (`{"command": null}`);
- a dialog the agent stopped waiting for is withdrawn with `$/cancel_request`;
- a background command's output streams onto its card, for a client that shows display-only
  terminals (`clientCapabilities._meta.terminal_output`), and for no other.

`serve_acp` validates every message against the ACP schema.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

from tests.e2e.test_acp_cards import card_id, final_card
from tests.support.acp_client import Recorder
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def messages(updates: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Message chunks joined by `messageId`: id -> (kind, text). Every chunk must have an id."""
    joined: dict[str, tuple[str, str]] = {}
    for update in updates:
        if update["sessionUpdate"] in CHUNKS:
            message_id = update["messageId"]
            kind, text = joined.get(message_id, (update["sessionUpdate"], ""))
            assert kind == update["sessionUpdate"], f"{message_id} holds chunks of two kinds"
            joined[message_id] = (kind, text + update["content"].get("text", ""))
    return joined


def cancel_requests(recorder: Recorder) -> list[Any]:
    return [m["params"]["requestId"] for m in recorder.incoming if m.get("method") == "$/cancel_request"]


def permission_request_ids(recorder: Recorder) -> list[Any]:
    return [m["id"] for m in recorder.incoming if m.get("method") == "session/request_permission"]


async def wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- name, messageId, rawOutput


async def test_names_and_message_ids_live_are_the_ones_a_load_replays(share, project):
    (project / "a.txt").write_text("alpha\n")
    write_config(share, [
        "think: first I look\ntext: Reading it.\n" + tool_call("r1", "ReadFile", {"path": "a.txt"}),
        "think: it says alpha\ntext: It says alpha.",
        "text: second turn",
    ])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read a.txt")
        await agent.prompt(session.session_id, "again")
        live = agent.recorder.updates(session.session_id)
        live_messages = messages(live)

        (start,) = of_kind(live, "tool_call")
        assert start["name"] == "ReadFile"
        card = final_card(agent.recorder, start["toolCallId"])
        assert card["status"] == "completed"
        assert card["rawOutput"]["is_error"] is False and "alpha" in card["rawOutput"]["output"]

        # one message per model reply and kind: thinking, then the answer, in each step
        texts = [text for _, text in live_messages.values()]
        assert texts == ["first I look", "Reading it.", "it says alpha", "It says alpha.", "second turn"]
        assert len(set(live_messages)) == 5

        before = len(agent.recorder.incoming)
        await agent.conn.load_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        replayed = [
            m["params"]["update"] for m in agent.recorder.incoming[before:]
            if m.get("method") == "session/update"
        ]
    replayed_messages = messages(replayed)
    for message_id, message in live_messages.items():
        assert replayed_messages[message_id] == message  # same id, same kind, same text
    prompts = [text for kind, text in replayed_messages.values() if kind == "user_message_chunk"]
    assert prompts == ["read a.txt", "again"]
    (replayed_start,) = of_kind(replayed, "tool_call")
    assert replayed_start["name"] == "ReadFile"


async def test_a_streamed_card_shows_no_placeholder_arguments(share, project):
    parts = ['"echo hi', ' there"', ', "timeout": 3', '0}']
    script = "\n".join([
        tool_call("s1", "Shell", '{"command": '),
        *(f"tool_call_part: {json.dumps({'arguments_part': part})}" for part in parts),
    ])
    write_config(share, [script, "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "go")
        card = card_id(agent.recorder, "Shell")
        shown = [
            u["rawInput"] for u in agent.recorder.updates()
            if u.get("toolCallId") == card and "rawInput" in u
        ]
    assert shown[0] == {}  # the command had not started: nothing is known, nothing is shown
    assert {"command": "echo hi"} not in shown  # half a command is not what runs: shown once closed
    assert shown[1] == {"command": "echo hi there"}  # before the call is complete
    assert shown[-1] == {"command": "echo hi there", "timeout": 30}
    assert all(None not in value.values() for value in shown), shown
    titles = [u["title"] for u in agent.recorder.updates() if u.get("toolCallId") == card and "title" in u]
    assert set(titles) == {"Shell", "Shell: echo hi there"}


# --------------------------------------------------------------------------- $/cancel_request


async def test_closing_the_session_withdraws_its_permission_dialog(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo never"}), "text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        never = asyncio.get_running_loop().create_future()
        agent.client.permission_policy = lambda request: never
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "go"))
        await asyncio.wait_for(agent.client.permission_event.wait(), 10)
        assert cancel_requests(agent.recorder) == []
        await agent.conn.close_session(session_id=session.session_id)
        assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
        await wait_for(lambda: cancel_requests(agent.recorder))
        assert cancel_requests(agent.recorder) == permission_request_ids(agent.recorder)
        never.set_result("cancelled")  # what the client answers a withdrawn request


async def test_cancelling_the_prompt_withdraws_its_permission_dialog(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo never"}), "text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        never = asyncio.get_running_loop().create_future()
        agent.client.permission_policy = lambda request: never
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "go"))
        await asyncio.wait_for(agent.client.permission_event.wait(), 10)
        await agent.conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
        await wait_for(lambda: cancel_requests(agent.recorder))
        assert cancel_requests(agent.recorder) == permission_request_ids(agent.recorder)
        never.set_result("cancelled")


async def test_an_answered_dialog_is_not_withdrawn(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo fine"}), "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        assert (await agent.prompt(session.session_id, "go")).stop_reason == "end_turn"
        await asyncio.sleep(0.2)
        assert len(permission_request_ids(agent.recorder)) == 1
        assert cancel_requests(agent.recorder) == []


# --------------------------------------------------------------------------- background output


BACKGROUND = {
    "command": "printf 'one\\n'; sleep 0.3; printf 'two\\n'",
    "run_in_background": True,
    "description": "counting",
}


async def run_background(share, project, *, terminal_output: bool) -> tuple[Recorder, str]:
    write_config(share, [tool_call("bg", "Shell", BACKGROUND), "text: started"])
    async with serve_acp(acp_env(share)) as agent:
        if terminal_output:
            agent.client.meta = {"terminal_output": True}
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        assert (await agent.prompt(session.session_id, "start it")).stop_reason == "end_turn"
        card = card_id(agent.recorder, "Shell")

        def ended() -> bool:
            return "**completed**" in json.dumps(final_card(agent.recorder, card).get("content"))

        await wait_for(ended)
        await asyncio.sleep(0.1)
        return agent.recorder, card


async def test_background_output_streams_onto_the_card_of_a_client_that_opts_in(share, project):
    recorder, card = await run_background(share, project, terminal_output=True)
    updates = [u for u in recorder.updates() if u.get("toolCallId") == card]
    start = updates[0]
    assert start["sessionUpdate"] == "tool_call" and start["name"] == "Shell"
    terminal = start["_meta"]["terminal_info"]["terminal_id"]
    assert start["_meta"]["terminal_info"]["cwd"] == str(project)

    metas = [u["_meta"] for u in updates[1:] if "_meta" in u]
    output = "".join(m["terminal_output"]["data"] for m in metas if "terminal_output" in m)
    assert output == "one\ntwo\n"
    assert all(m["terminal_output"]["terminal_id"] == terminal for m in metas if "terminal_output" in m)
    exits = [m["terminal_exit"] for m in metas if "terminal_exit" in m]
    assert exits == [{"terminal_id": terminal, "exit_code": 0, "signal": None}]
    assert "terminal_exit" in metas[-1]  # after all of the output

    content = final_card(recorder, card)["content"]
    assert content[0] == {"type": "terminal", "terminalId": terminal}
    assert "counting (`bash-1`, bash): **completed**" in content[1]["content"]["text"]
    # two output pieces, the second after the card was complete: streamed, not read at the end
    assert len([m for m in metas if "terminal_output" in m]) >= 2


async def test_background_output_is_not_sent_to_a_client_that_did_not_opt_in(share, project):
    recorder, card = await run_background(share, project, terminal_output=False)
    updates = [u for u in recorder.updates() if u.get("toolCallId") == card]
    assert not [u for u in updates if "_meta" in u]
    content = final_card(recorder, card)["content"]
    assert [block["type"] for block in content] == ["content"]
    assert "**completed**" in content[0]["content"]["text"]


async def test_a_foreground_shell_whose_arguments_came_whole_registers_no_terminal(share, project):
    write_config(share, [tool_call("fg", "Shell", {"command": "echo here"}), "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.meta = {"terminal_output": True}
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "go")
        card = card_id(agent.recorder, "Shell")
        by_card: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for update in agent.recorder.updates():
            by_card[update.get("toolCallId", "")].append(update)
    assert not [u for u in by_card[card] if "_meta" in u]
    assert final_card(agent.recorder, card)["rawOutput"]["output"].strip() == "here"


async def test_a_dialog_another_answer_settled_is_withdrawn(share, project):
    """Two edits ask at once; "Always allow" for the first (every edit in the workspace) also covers
    the second, whose dialog the agent then stops waiting for."""
    write_config(share, [
        tool_call("w1", "WriteFile", {"path": "one.txt", "content": "1\n"}) + "\n"
        + tool_call("w2", "WriteFile", {"path": "two.txt", "content": "2\n"}),
        "text: done",
    ])
    async with serve_acp(acp_env(share)) as agent:
        loop = asyncio.get_running_loop()
        answers = [loop.create_future(), loop.create_future()]
        agent.client.permission_policy = lambda request: answers[len(agent.client.permission_requests) - 1]
        await agent.initialize()
        session = await agent.new_session(project)
        prompt = asyncio.create_task(agent.prompt(session.session_id, "go"))
        await wait_for(lambda: len(agent.client.permission_requests) == 2)
        _first, second = permission_request_ids(agent.recorder)
        answers[0].set_result("approve_for_session")
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "end_turn"
        await wait_for(lambda: cancel_requests(agent.recorder))
        assert cancel_requests(agent.recorder) == [second]
        answers[1].set_result("cancelled")
    assert (project / "one.txt").read_text() == "1\n" and (project / "two.txt").read_text() == "2\n"
