"""`kimi acp`: what an IDE's history panel does to stored sessions — `session/set_title`,
`session/status`, `session/archive` / `session/unarchive` and `session/list`'s `archived` filter —
on the ACP Python SDK client (raw requests: SDK 0.12.1 has no calls for them), every message
schema-checked (tests/support/acp_client.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.acp_fixtures import acp_env, fake_model_config, of_kind, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


async def call(agent: Any, method: str, **params: Any) -> Any:
    return await agent.conn._conn.send_request(method, params)


async def refused(agent: Any, method: str, **params: Any) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as caught:
        await call(agent, method, **params)
    return caught.value


def state(share: Path, session_id: str) -> dict[str, Any]:
    return json.loads(next(share.glob(f"sessions/*/{session_id}/state.json")).read_text())


async def listed(agent: Any, project: Path, archived: str | None = None) -> list[tuple[str, bool]]:
    params: dict[str, Any] = {"cwd": str(project)}
    if archived is not None:
        params["archived"] = archived
    result = await call(agent, "session/list", **params)
    return sorted((s["sessionId"], s["archived"]) for s in result["sessions"])


async def test_the_capabilities_are_advertised(share):
    write_config(share)
    async with serve_acp(acp_env(share)) as agent:
        result = await call(agent, "initialize", protocolVersion=1)
    caps = result["agentCapabilities"]["sessionCapabilities"]
    assert caps["title"] == {} and caps["status"] == {} and caps["archive"] == {} and caps["list"] == {}


async def test_set_title_stores_it_for_open_and_closed_sessions(share, project):
    write_config(share, ["text: one", "text: two"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        opened = (await agent.new_session(project)).session_id
        closed = (await agent.new_session(project)).session_id
        await agent.prompt(opened, "first prompt")
        await agent.prompt(closed, "second prompt")
        await call(agent, "session/close", sessionId=closed)

        assert await call(agent, "session/set_title", sessionId=opened, title="  Fix   the\tparser ") == {"title": "Fix the parser"}
        assert await call(agent, "session/set_title", sessionId=closed, title="Closed one") == {"title": "Closed one"}
        assert (await call(agent, "session/set_title", sessionId=opened, title="x" * 300))["title"] == "x" * 200
        await call(agent, "session/set_title", sessionId=opened, title="Fix the parser")
        titles = {s["sessionId"]: s["title"] for s in (await call(agent, "session/list", cwd=str(project)))["sessions"]}
        info = [u["title"] for u in of_kind(agent.recorder.updates(opened), "session_info_update")]
        assert await call(agent, "session/status", sessionId=closed) == {"status": "saved"}  # retitling opened nothing

        for params, field in (
            ({"sessionId": opened, "title": " \n "}, "title"),
            ({"sessionId": opened}, "title"),
            ({"sessionId": opened, "title": None}, "title"),
            ({"sessionId": opened, "title": 5}, "title"),
            ({"title": "t"}, "sessionId"),
        ):
            error = await refused(agent, "session/set_title", **params)
            assert error.code == -32602 and field in str(error), (params, error)
        error = await refused(agent, "session/set_title", sessionId="no-such-session", title="t")
        assert error.code == -32002 and error.data["sessionId"] == "no-such-session"
    assert titles == {opened: "Fix the parser", closed: "Closed one"}
    assert info[-1] == "Fix the parser"  # the open session announces it, as /rename does
    for session_id, title in ((opened, "Fix the parser"), (closed, "Closed one")):
        assert (state(share, session_id)["custom_title"], state(share, session_id)["title_generated"]) == (title, True)


async def test_a_title_the_user_set_is_never_replaced_by_a_generated_one(share, project, server):
    """Set while the title request is on its way: its answer is dropped, and no later turn asks again."""
    server.enqueue(text_reply("Looking at it."), text_reply("Generated title", delay=0.5), text_reply("more"))
    fake_model_config(share, server, titles=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "please look at the parser")
        await asyncio.to_thread(server.wait_for_requests, 2)  # the title request is in flight
        assert await call(agent, "session/set_title", sessionId=session_id, title="Mine") == {"title": "Mine"}
        await asyncio.sleep(0.8)  # its answer has come back by now
        await agent.prompt(session_id, "and now?")
        await asyncio.sleep(0.3)  # time for a title request that must not come
        info = [u["title"] for u in of_kind(agent.recorder.updates(session_id), "session_info_update")]
    assert len(server.requests) == 3
    assert info[-1] == "Mine" and "Generated title" not in info
    assert state(share, session_id)["custom_title"] == "Mine"


async def test_status_says_open_or_saved_and_changes_nothing(share, project):
    write_config(share, ["text: one"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        await agent.prompt(session_id, "hi")
        assert await call(agent, "session/status", sessionId=session_id) == {"status": "open"}
        await call(agent, "session/close", sessionId=session_id)
        before = len(agent.recorder.incoming)
        for _ in range(2):  # asking does not open it
            assert await call(agent, "session/status", sessionId=session_id) == {"status": "saved"}
        assert [m for m in agent.recorder.incoming[before:] if m.get("method")] == []  # no update, no request
        error = await refused(agent, "session/status", sessionId="unknown-id")
        assert error.code == -32002 and error.data["sessionId"] == "unknown-id" and "unknown-id" in str(error)
        assert (await refused(agent, "session/status")).code == -32602
    async with serve_acp(acp_env(share)) as agent:  # another process: known, not in memory
        await agent.initialize()
        assert await call(agent, "session/status", sessionId=session_id) == {"status": "saved"}


async def test_archive_closes_the_session_and_the_list_filters_by_it(share, project):
    write_config(share, [tool_call("c1", "Shell", {"command": "sleep 30"})])  # every session's first reply
    async with serve_acp(acp_env(share)) as agent:
        agent.client.permission_policy = lambda request: asyncio.get_running_loop().create_future()  # never answered
        await agent.initialize()
        kept = (await agent.new_session(project)).session_id
        doomed = (await agent.new_session(project)).session_id
        await agent.prompt(kept, "/help")  # a turn without the model: listed
        running = asyncio.create_task(agent.prompt(doomed, "run"))
        await asyncio.wait_for(agent.client.permission_event.wait(), 5)

        assert await call(agent, "session/archive", sessionId=doomed) == {}
        assert (await asyncio.wait_for(running, 5)).stop_reason == "cancelled"  # closed, as session/close does
        assert await call(agent, "session/status", sessionId=doomed) == {"status": "saved"}
        assert await call(agent, "session/archive", sessionId=doomed) == {}  # twice: no error
        assert await listed(agent, project) == [(kept, False)]
        assert await listed(agent, project, "exclude") == [(kept, False)]
        assert await listed(agent, project, "only") == [(doomed, True)]
        assert await listed(agent, project, "include") == sorted([(kept, False), (doomed, True)])
        for bad in ("_custom", "all", 5, True):
            error = await refused(agent, "session/list", cwd=str(project), archived=bad)
            assert error.code == -32602 and "archived" in str(error)
        error = await refused(agent, "session/archive", sessionId="gone")
        assert error.code == -32002 and error.data["sessionId"] == "gone"

        assert await call(agent, "session/unarchive", sessionId=doomed) == {}
        assert await call(agent, "session/unarchive", sessionId=doomed) == {}
        assert await listed(agent, project) == sorted([(kept, False), (doomed, False)])
        assert await call(agent, "session/status", sessionId=doomed) == {"status": "saved"}  # not reopened
        assert (await refused(agent, "session/unarchive", sessionId="gone")).code == -32002
