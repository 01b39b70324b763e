"""Tool cards as clients draw them: the status sequence around permission requests, and ReadFile content.

A card's status is what acpx, acp.el and JetBrains show ("running" for `in_progress`), so it must
stay `pending` while the user is being asked, and only the messages' order tells whether it did.
The timelines below are read from the recorder's raw messages, in the order they arrived.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.support.acp_client import Recorder
from tests.support.acp_fixtures import acp_env, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

ASK = "ask"  # a session/request_permission about the card, in the timeline


def card_id(recorder: Recorder, title_prefix: str) -> str:
    starts = [u for u in of_kind(recorder.updates(), "tool_call") if u["title"].startswith(title_prefix)]
    assert len(starts) == 1, starts
    return starts[0]["toolCallId"]


def timeline(recorder: Recorder, tool_call_id: str) -> list[str]:
    """The card's statuses in arrival order, with `ask` where its permission request arrived."""
    events: list[str] = []
    for message in recorder.incoming:
        params = message.get("params") or {}
        if message.get("method") == "session/update":
            update = params["update"]
            if update.get("toolCallId") == tool_call_id and "status" in update:
                events.append(update["status"])
        elif message.get("method") == "session/request_permission":
            if params["toolCall"]["toolCallId"] == tool_call_id:
                assert params["toolCall"]["status"] == "pending"
                events.append(ASK)
    return events


def final_card(recorder: Recorder, tool_call_id: str) -> dict[str, Any]:
    """The card folded from its start and every update, as a client keeps it."""
    card: dict[str, Any] = {}
    for update in recorder.updates():
        if update.get("toolCallId") == tool_call_id and update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            card.update({k: v for k, v in update.items() if k != "sessionUpdate"})
    return card


# --------------------------------------------------------------------------- statuses


async def test_approved_write_is_pending_until_approved_then_runs(share, project):
    write_config(share, [tool_call("w1", "WriteFile", {"path": "out.txt", "content": "hello\n"}), "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        response = await agent.prompt(session.session_id, "write it")
        assert response.stop_reason == "end_turn"
        card = card_id(agent.recorder, "WriteFile")
        assert timeline(agent.recorder, card) == ["pending", ASK, "in_progress", "completed"]
    assert (project / "out.txt").read_text() == "hello\n"


async def test_rejected_write_goes_from_pending_to_failed(share, project):
    write_config(share, [tool_call("w1", "WriteFile", {"path": "out.txt", "content": "hello\n"}), "text: unused"])
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: "reject"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "write it")
        card = card_id(agent.recorder, "WriteFile")
        assert timeline(agent.recorder, card) == ["pending", ASK, "failed"]
        assert "rejected" in json.dumps(final_card(agent.recorder, card)["content"]).lower()
    assert not (project / "out.txt").exists()


async def test_read_only_tool_goes_in_progress_without_asking(share, project):
    (project / "notes.txt").write_text("alpha\nbeta\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "notes.txt"}), "text: read"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
        assert not agent.recorder.requests("session/request_permission")
        card = card_id(agent.recorder, "ReadFile")
        assert timeline(agent.recorder, card) == ["pending", "in_progress", "completed"]


async def test_approved_shell_in_a_terminal_is_in_progress_when_the_terminal_is_embedded(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo hi"}), "text: ran"])
    async with serve_acp(acp_env(share), terminal=True) as agent:
        agent.client.permission_policy = lambda request: "approve"
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "run")
        card = card_id(agent.recorder, "Shell")
        assert timeline(agent.recorder, card) == ["pending", ASK, "in_progress", "in_progress", "completed"]
        updates = of_kind(agent.recorder.updates(), "tool_call_update")
        embedded = [u for u in updates if u.get("content") and u["content"][0]["type"] == "terminal"]
        assert len(embedded) == 1 and embedded[0]["status"] == "in_progress"


async def test_cancel_while_asking_fails_the_pending_card(share, project):
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
        card = card_id(agent.recorder, "Shell")
        assert timeline(agent.recorder, card) == ["pending", ASK, "failed"]
        never.set_result("approve")  # a late answer changes nothing
        await asyncio.sleep(0.2)
        assert timeline(agent.recorder, card) == ["pending", ASK, "failed"]


# --------------------------------------------------------------------------- ReadFile content


async def test_read_file_card_shows_what_was_read(share, project):
    lines = [f"line {n}: `code` *not emphasis*" for n in range(1, 8)] + ["```", "after a fence"]
    (project / "notes.md").write_text("\n".join(lines) + "\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "notes.md", "line_offset": 3, "n_lines": 4}), "text: read"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
        card = final_card(agent.recorder, card_id(agent.recorder, "ReadFile"))
    assert card["status"] == "completed"
    texts = [c["content"]["text"] for c in card["content"] if c["type"] == "content"]
    shown = "\n".join(texts)
    for n in range(3, 7):
        assert lines[n - 1] in shown  # the lines the model got
    assert lines[0] not in shown and lines[6] not in shown  # and no more than that
    code = texts[0]
    assert code.startswith("```") and code.rstrip().endswith("```")  # one fenced block: not rendered as markdown
    assert card["locations"] == [{"path": str(project / "notes.md"), "line": 3}]


async def test_read_file_card_fence_outlasts_backticks_in_the_file(share, project):
    (project / "doc.md").write_text("intro\n```python\nprint(1)\n```\nend\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "doc.md"}), "text: read"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
        card = final_card(agent.recorder, card_id(agent.recorder, "ReadFile"))
    code = card["content"][0]["content"]["text"]
    fence = code.split("\n", 1)[0]
    assert fence == "````" and code.rstrip().endswith("\n````")
    assert "print(1)" in code and "end" in code
    assert card["locations"] == [{"path": str(project / "doc.md"), "line": 1}]


async def test_read_file_tail_location_is_the_first_line_read(share, project):
    (project / "log.txt").write_text("".join(f"entry {n}\n" for n in range(1, 11)))
    write_config(share, [tool_call("r1", "ReadFile", {"path": "log.txt", "line_offset": -3}), "text: read"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "tail it")
        card = final_card(agent.recorder, card_id(agent.recorder, "ReadFile"))
    shown = card["content"][0]["content"]["text"]
    assert "entry 8" in shown and "entry 10" in shown and "entry 7" not in shown
    assert card["locations"] == [{"path": str(project / "log.txt"), "line": 8}]


async def test_read_file_content_is_replayed_on_load(share, project):
    (project / "notes.txt").write_text("remember me\n")
    write_config(share, [tool_call("r1", "ReadFile", {"path": "notes.txt"}), "text: read"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)
        await agent.prompt(session.session_id, "read it")
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        await agent.conn.load_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        card = final_card(agent.recorder, card_id(agent.recorder, "ReadFile"))
    assert card["status"] == "completed"
    assert "remember me" in card["content"][0]["content"]["text"]
