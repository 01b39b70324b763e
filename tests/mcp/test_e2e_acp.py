"""MCP servers through `kimi acp`: the client's `mcpServers` in `session/new` (stdio, HTTP, SSE), a
scripted model calling each with approval, cards the IDE can read, a visible notice for a broken
server (the server in this process, tests/support/inmemory.py), and, with a real `kimi acp`
process, no server process left after close or exit. Every message is schema-checked."""

from __future__ import annotations

import asyncio
import json
import sys

import acp
import pytest
from acp.schema import EnvVariable, HttpMcpServer, McpServerStdio, SseMcpServer

from tests.support.acp_client import spawn_acp
from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

from .helpers import SERVER, HttpServer, wait_gone


def stdio_server(name: str, mode: str = "stdio", *extra: str) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[SERVER, mode, *extra], env=[EnvVariable(name="X", value="1")])


def card_of(updates: list[dict], acp_id: str) -> dict:
    card: dict = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update["toolCallId"] == acp_id:
            card.update({k: v for k, v in update.items() if k != "sessionUpdate"})
    return card


async def test_client_servers_on_every_transport(share, project, http_server: HttpServer, sse_server: HttpServer):
    scripts = [
        "\n".join(
            [
                tool_call("t1", "l_echo", {"text": "one"}),
                tool_call("t2", "h_echo", {"text": "two"}),
                tool_call("t3", "s_echo", {"text": "three"}),
            ]
        ),
        "text: all answered",
    ]
    write_config(share, scripts)
    servers = [
        stdio_server("local", "stdio", "--prefix", "l_"),
        HttpMcpServer(type="http", name="web", url=f"http://127.0.0.1:{http_server.port}/mcp", headers=[]),
        SseMcpServer(type="sse", name="old", url=f"http://127.0.0.1:{sse_server.port}/sse", headers=[]),
    ]
    async with serve_acp(acp_env(share)) as agent:
        init = await agent.initialize()
        assert init.agent_capabilities.mcp_capabilities.http is True
        assert init.agent_capabilities.mcp_capabilities.sse is True
        session_id = (await agent.conn.new_session(cwd=str(project), mcp_servers=servers)).session_id
        response = await agent.prompt(session_id, "use them")
        assert response.stop_reason == "end_turn"

        asked = agent.client.permission_requests
        assert sorted(r["tool_call"].title for r in asked) == ["local: l_echo", "old: s_echo", "web: h_echo"]
        updates = agent.recorder.updates(session_id)
        starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
        assert len(starts) == 3
        for start, text in zip(starts, ("one", "two", "three")):
            card = card_of(updates, start["toolCallId"])
            assert card["status"] == "completed"
            assert card["rawInput"] == {"text": text}
            assert f"echo: {text}" in json.dumps(card["content"])
        notice = texts(updates)
        for name in ("local", "web", "old"):
            assert f"MCP server `{name}` connected" in notice
        assert agent.recorder.validated > 0


async def test_a_broken_server_is_shown_and_the_session_goes_on(share, project):
    write_config(share, [tool_call("t1", "echo", {"text": "fine"}), "text: done"], default_yolo=True)
    servers = [stdio_server("good"), stdio_server("crashy", "crash")]
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.conn.new_session(cwd=str(project), mcp_servers=servers)).session_id
        response = await agent.prompt(session_id, "go")
        assert response.stop_reason == "end_turn"
        notice = texts(agent.recorder.updates(session_id))
        assert "MCP server `crashy` failed" in notice
        assert "MCP server `good` connected" in notice
        results = [u for u in of_kind(agent.recorder.updates(session_id), "tool_call_update") if u.get("status") == "completed"]
        assert results and "echo: fine" in json.dumps(results[-1]["content"])


async def test_servers_die_with_the_session_and_with_the_process(share, project):
    scripts = ["\n".join([tool_call("t1", "pid", {}), tool_call("t2", "spawn", {})]), "text: ok"] * 2
    write_config(share, scripts, default_yolo=True)

    async def pids_of(agent, session_id: str) -> list[int]:
        await agent.prompt(session_id, "go")
        done = [u for u in of_kind(agent.recorder.updates(session_id), "tool_call_update") if u.get("status") == "completed"]
        return [_number(u) for u in done[-2:]]

    async with spawn_acp(acp_env(share)) as agent:
        await agent.initialize()
        closed = (await agent.conn.new_session(cwd=str(project), mcp_servers=[stdio_server("a")])).session_id
        kept = (await agent.conn.new_session(cwd=str(project), mcp_servers=[stdio_server("b")])).session_id
        closed_pids = await pids_of(agent, closed)
        kept_pids = await pids_of(agent, kept)
        assert len(closed_pids) == 2 and len(kept_pids) == 2
        assert wait_gone(closed_pids + kept_pids, timeout=0.1) == closed_pids + kept_pids
        await agent.conn.close_session(session_id=closed)
        assert await asyncio.to_thread(wait_gone, closed_pids) == []
        assert wait_gone(kept_pids, timeout=0.1) == kept_pids  # the other session's are untouched
    assert await asyncio.to_thread(wait_gone, kept_pids) == []  # stdin closed: the process took them along


def _number(update: dict) -> int:
    """The pid a `pid` / `spawn` tool answered, from its card's text content."""
    text = "".join(c["content"].get("text", "") for c in update.get("content", []) if c.get("type") == "content")
    digits = "".join(ch if ch.isdigit() else " " for ch in text).split()
    return int(digits[0])


async def test_invalid_client_server_entries_are_refused_by_name(share, project):
    write_config(share, [])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        with pytest.raises(acp.RequestError) as info:
            await agent.conn._conn.send_request(
                "session/new", {"cwd": str(project), "mcpServers": [{"name": "bad", "type": "http", "headers": []}]}
            )
        assert info.value.code == -32602
        assert "bad" in str(info.value) and "url" in str(info.value)


async def test_reopening_with_another_server_list_closes_the_old_servers(share, project):
    write_config(share, [tool_call("t1", "a_pid", {}), "text: a", tool_call("t2", "b_pid", {}), "text: b"], default_yolo=True)
    async with spawn_acp(acp_env(share)) as agent:
        await agent.initialize()
        first = [stdio_server("one", "stdio", "--prefix", "a_")]
        session_id = (await agent.conn.new_session(cwd=str(project), mcp_servers=first)).session_id
        await agent.prompt(session_id, "first")
        done = [u for u in of_kind(agent.recorder.updates(session_id), "tool_call_update") if u.get("status") == "completed"]
        old_pid = _number(done[-1])

        second = [stdio_server("two", "stdio", "--prefix", "b_")]
        await agent.conn.resume_session(cwd=str(project), session_id=session_id, mcp_servers=second)
        assert await asyncio.to_thread(wait_gone, [old_pid]) == []  # "one" is not in the new list
        await agent.prompt(session_id, "second")
        done = [u for u in of_kind(agent.recorder.updates(session_id), "tool_call_update") if u.get("status") == "completed"]
        new_pid = _number(done[-1])
        assert new_pid != old_pid
        assert "MCP server `two` connected" in texts(agent.recorder.updates(session_id))
    assert await asyncio.to_thread(wait_gone, [new_pid]) == []
