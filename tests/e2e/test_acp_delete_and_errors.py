"""`session/delete`, and error messages a person can act on, from `kimi acp` (served in this process,
tests/support/inmemory.py; the other session holder is a real `kimi --wire` process)."""

from __future__ import annotations

import asyncio

import acp
import pytest

from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import WireMemory, serve_acp
from tests.support.wire_client import WireProcess, tool_call


async def _delete(agent, session_id: str) -> dict:
    return await agent.conn._conn.send_request("session/delete", {"sessionId": session_id})


async def test_session_delete_removes_it_from_disk_and_from_the_list(share, project):
    write_config(share, ["text: one", "text: two"])
    async with serve_acp(acp_env(share)) as agent:
        init = await agent.initialize()
        assert init.agent_capabilities.session_capabilities.delete is not None
        kept = (await agent.new_session(project)).session_id
        doomed = (await agent.new_session(project)).session_id
        await agent.prompt(kept, "keep me")
        await agent.prompt(doomed, "delete me")
        listed = await agent.conn.list_sessions(cwd=str(project))
        assert {s.session_id for s in listed.sessions} == {kept, doomed}
        folders = {p.name for p in (share / "sessions").glob("*/*")}
        assert doomed in folders

        assert await _delete(agent, doomed) == {}

        listed = await agent.conn.list_sessions(cwd=str(project))
        assert [s.session_id for s in listed.sessions] == [kept]
        assert doomed not in {p.name for p in (share / "sessions").glob("*/*")}
        assert not any("deleted" in p.name for p in (share / "sessions").glob("*/*"))
        with pytest.raises(acp.RequestError) as info:
            await agent.conn.load_session(cwd=str(project), session_id=doomed, mcp_servers=[])
        assert "Session not found" in str(info.value)
        with pytest.raises(acp.RequestError) as info:
            await _delete(agent, doomed)  # twice: the second is an error, not a crash
        assert info.value.code == -32602 and doomed in str(info.value)


async def test_deleting_a_session_with_a_running_turn_cancels_it(share, project):
    write_config(share, [tool_call("c1", "Shell", {"command": "sleep 30"})])
    async with serve_acp(acp_env(share)) as agent:
        # Never answer: the turn waits on the user.
        agent.client.permission_policy = lambda request: asyncio.get_running_loop().create_future()
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        prompt = asyncio.create_task(agent.prompt(session_id, "run"))
        for _ in range(200):
            if agent.recorder.requests("session/request_permission"):
                break
            await asyncio.sleep(0.02)
        assert await _delete(agent, session_id) == {}
        response = await asyncio.wait_for(prompt, 5)
        assert response.stop_reason == "cancelled"
        left = list((share / "sessions").glob(f"*/{session_id}"))
        assert not left, [str(p) for d in left for p in d.rglob("*")]


async def test_errors_put_the_actionable_text_in_message(share, project, tmp_path):
    """acpx and others print only `error.message`."""
    agent = await WireMemory.acp(env={"KIMI_SHARE_DIR": str(share)})  # no config: no model
    await agent.call("initialize", {"protocolVersion": 1})
    response, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    assert response["error"]["code"] == -32000
    assert "kimi login" in response["error"]["message"]
    assert response["error"]["data"]["authMethods"]

    write_config(share, ["text: hi"])
    response, _ = await agent.call("session/new", {"cwd": "relative/dir", "mcpServers": []})
    assert response["error"]["code"] == -32602
    assert "cwd" in response["error"]["message"] and "absolute" in response["error"]["message"]
    response, _ = await agent.call("session/new", {"mcpServers": []})
    assert response["error"]["code"] == -32602 and "cwd" in response["error"]["message"]
    response, _ = await agent.call("session/prompt", {"sessionId": "x"})
    assert response["error"]["code"] == -32602 and "prompt" in response["error"]["message"]
    new, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    session_id = new["result"]["sessionId"]
    response, _ = await agent.call("session/set_mode", {"sessionId": session_id, "modeId": "turbo"})
    assert response["error"]["code"] == -32602
    assert "modeId" in response["error"]["message"] and "turbo" in response["error"]["message"]
    response, _ = await agent.call("session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "nope"})
    assert response["error"]["code"] == -32602 and "nope" in response["error"]["message"]
    response, _ = await agent.call("session/list", {"cursor": "garbage"})
    assert response["error"]["code"] == -32602 and "cursor" in response["error"]["message"]
    # Toad shows only `data.details`: the same sentence is there
    for failed in (response, (await agent.call("session/new", {"mcpServers": []}))[0]):
        assert failed["error"]["data"]["details"] == failed["error"]["message"]
    response, _ = await agent.call("authenticate", {"methodId": "magic"})
    assert response["error"]["code"] == -32602 and "magic" in response["error"]["message"]
    response, _ = await agent.call("no/such", {})
    assert response["error"]["code"] == -32601 and "no/such" in response["error"]["message"]
    assert await agent.close() == 0


async def test_delete_refuses_a_turn_running_in_another_process_and_nothing_brings_the_folder_back(share, project):
    """A `kimi --wire` of the session is mid-turn: the IDE's delete is refused with its pid and changes
    nothing; once the turn is over the delete goes through, and the wire process's later writes
    (a prompt, plan mode, its shutdown) do not re-create the folder."""
    write_config(share, [tool_call("c1", "Shell", {"command": "echo hi"}), "text: done"])
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        wire = await WireProcess.start("--work-dir", str(project), "--session", session_id, env=acp_env(share))
        try:
            await wire.call("initialize", {"protocol_version": "1.10", "client": {"name": "t", "version": "1"}})
            prompt_id = await wire.request("prompt", {"user_input": "run it"})
            approval, _ = await wire.next_request()  # the wire's turn now waits on its user
            (folder,) = (share / "sessions").glob(f"*/{session_id}")
            before = sorted(p.name for p in folder.iterdir())

            with pytest.raises(acp.RequestError) as busy:
                await _delete(agent, session_id)
            message = str(busy.value)
            assert f"Cannot delete this session: it is running a turn in another kimi process (pid {wire.proc.pid})" in message
            assert busy.value.data["holderPid"] == wire.proc.pid
            assert folder.is_dir() and sorted(p.name for p in folder.iterdir()) == before

            payload = approval["params"]["payload"]
            await wire.respond(approval["id"], {"request_id": payload["id"], "response": "approve"})
            done, _ = await wire.response(prompt_id)
            assert done["result"] == {"status": "finished"}

            assert await _delete(agent, session_id) == {}
            assert not folder.exists()

            refused, _ = await wire.call("prompt", {"user_input": "again"})
            assert "This session was deleted" in refused["error"]["message"]
            toggled, _ = await wire.call("set_plan_mode", {"enabled": True})  # saves state.json
            assert "result" in toggled
            assert not folder.exists()
        finally:
            assert await wire.close() == 0
        assert not list((share / "sessions").glob(f"*/{session_id}"))
