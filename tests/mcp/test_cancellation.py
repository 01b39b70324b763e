"""A call we stop waiting for is cancelled on the MCP server too: our tool timeout, the tool call
cancelled (as a cancelled turn does), the session closed, and a turn cancelled through `kimi acp`
(served in this process, tests/support/inmemory.py). The server is tests/mcp/server_app.py over
stdio, logging every `notifications/cancelled` it reads (MCP_TEST_CANCEL_LOG); its `linger` tool
writes a marker file when the SDK cancels it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from acp.schema import EnvVariable, McpServerStdio
from mcp import types

from kimi_acp.core.toolset import Toolset
from kimi_acp.mcp.config import McpClientSettings
from kimi_acp.mcp.manager import McpManager
from tests.support.acp_fixtures import acp_env, write_config
from tests.support.inmemory import serve_acp
from tests.support.wire_client import tool_call

from .helpers import SERVER, FakeApprover, HttpServer, stdio
from .test_servers import run

DEADLINE_S = 20.0  # generous: a loaded machine is slow, a passing run is not


async def appears(path: Path, deadline: float = DEADLINE_S) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if path.exists() and path.read_text():
            return True
        await asyncio.sleep(0.02)
    return path.exists() and bool(path.read_text())


def cancels(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def manager_for(tmp_path: Path, timeout_ms: int = 10_000) -> tuple[McpManager, Toolset, Path]:
    log = tmp_path / "cancels.jsonl"
    manager = McpManager(
        [stdio("local", env={"MCP_TEST_CANCEL_LOG": str(log)})],
        settings=McpClientSettings(tool_call_timeout_ms=timeout_ms, connect_timeout_ms=15_000),
        work_dir=tmp_path,
    )
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    return manager, toolset, log


async def test_a_timed_out_call_is_cancelled_on_the_server(tmp_path: Path, approver: FakeApprover) -> None:
    manager, toolset, log = manager_for(tmp_path, timeout_ms=1000)
    marker = tmp_path / "timed-out"
    try:
        assert (await manager.wait_ready()).servers[0].status == "connected"
        started = time.monotonic()
        result = await run(toolset, tmp_path, approver, "linger", {"seconds": 60, "marker": str(marker)})
        assert time.monotonic() - started < 10
        assert result.is_error and "timed out after 1 s" in result.message, result
        assert await appears(marker), "the server's tool was never cancelled"
        assert marker.read_text() == "CancelledError\n"
        [notice] = cancels(log)
        assert isinstance(notice["requestId"], int) and "timed out" in notice["reason"]

        again = await run(toolset, tmp_path, approver, "echo", {"text": "still here"})
        assert not again.is_error and again.output == "echo: still here"
        quick = await run(
            toolset, tmp_path, approver, "linger", {"seconds": 0, "marker": str(tmp_path / "q")}
        )
        assert quick.output == "lingered"
        assert len(cancels(log)) == 1  # exactly one notice, and none for the calls that answered

        # A newer SDK may send a notice of its own: it does not reach the server a second time.
        session = manager._connections["local"]._gen.session
        duplicate = types.CancelledNotificationParams(requestId=notice["requestId"], reason="again")
        await session.send_notification(
            types.ClientNotification(types.CancelledNotification(params=duplicate))
        )
        await run(toolset, tmp_path, approver, "echo", {"text": "after the duplicate"})  # read after it
        assert len(cancels(log)) == 1
    finally:
        await manager.aclose()


async def test_cancelled_over_streamable_http(
    tmp_path: Path, http_server: HttpServer, approver: FakeApprover
) -> None:
    manager = McpManager(
        [http_server.config("web", "http")],
        settings=McpClientSettings(tool_call_timeout_ms=1000, connect_timeout_ms=15_000),
        work_dir=tmp_path,
    )
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    marker = tmp_path / "http"
    try:
        await manager.wait_ready()
        result = await run(toolset, tmp_path, approver, "h_linger", {"seconds": 60, "marker": str(marker)})
        assert result.is_error and "timed out after 1 s" in result.message, result
        assert await appears(marker), "the server's tool was never cancelled"
        again = await run(toolset, tmp_path, approver, "h_echo", {"text": "ok"})
        assert again.output == "echo: ok"
    finally:
        await manager.aclose()


async def test_a_cancelled_call_is_cancelled_on_the_server(tmp_path: Path, approver: FakeApprover) -> None:
    manager, toolset, log = manager_for(tmp_path)
    marker = tmp_path / "cancelled"
    try:
        await manager.wait_ready()
        pending = asyncio.ensure_future(
            run(toolset, tmp_path, approver, "linger", {"seconds": 60, "marker": str(marker)})
        )
        assert await appears_file(Path(f"{marker}.started"), pending), pending  # it runs on the server
        pending.cancel()
        started = time.monotonic()
        try:
            await asyncio.wait_for(pending, 5)
        except asyncio.CancelledError:
            pass
        assert pending.cancelled()
        assert time.monotonic() - started < 3
        assert await appears(marker), "the server's tool was never cancelled"
        [notice] = cancels(log)
        assert "cancelled" in notice["reason"]

        again = await run(toolset, tmp_path, approver, "echo", {"text": "next"})
        assert not again.is_error and again.output == "echo: next"
        assert len(cancels(log)) == 1
    finally:
        await manager.aclose()


async def test_closing_the_session_cancels_a_call_in_flight(tmp_path: Path, approver: FakeApprover) -> None:
    manager, toolset, log = manager_for(tmp_path)
    marker = tmp_path / "closed"
    await manager.wait_ready()
    pending = asyncio.ensure_future(
        run(toolset, tmp_path, approver, "linger", {"seconds": 60, "marker": str(marker)})
    )
    try:
        assert await appears_file(Path(f"{marker}.started"), pending)
    finally:
        started = time.monotonic()
        await manager.aclose()
    assert time.monotonic() - started < 8
    result = await asyncio.wait_for(pending, 5)
    assert result.is_error  # the call ends with the connection
    [notice] = cancels(log)
    assert "closed" in notice["reason"]


async def appears_file(path: Path, pending: asyncio.Future) -> bool:
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end and not pending.done():
        if path.exists():
            return True
        await asyncio.sleep(0.02)
    return path.exists()


async def test_a_cancelled_turn_cancels_the_mcp_call(share, project, tmp_path: Path) -> None:
    marker = tmp_path / "turn"
    log = tmp_path / "cancels.jsonl"
    scripts = [
        tool_call("t1", "linger", {"seconds": 60, "marker": str(marker)}),
        tool_call("t2", "echo", {"text": "after"}),
        "text: done",
    ]
    write_config(share, scripts, default_yolo=True)
    server = McpServerStdio(
        name="local",
        command=sys.executable,
        args=[SERVER, "stdio"],
        env=[EnvVariable(name="MCP_TEST_CANCEL_LOG", value=str(log))],
    )
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.conn.new_session(cwd=str(project), mcp_servers=[server])).session_id
        prompt = asyncio.create_task(agent.prompt(session_id, "linger"))
        assert await appears_file(Path(f"{marker}.started"), prompt), "the tool never started"
        await agent.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 10)
        assert response.stop_reason == "cancelled"
        assert await appears(marker), "the server's tool was never cancelled"
        follow = await asyncio.wait_for(agent.prompt(session_id, "next"), 30)
        assert follow.stop_reason == "end_turn"
        done = [u for u in agent.recorder.updates(session_id) if u.get("status") == "completed"]
        assert done and "echo: after" in json.dumps(done[-1].get("content"))
        [notice] = cancels(log)
        assert "cancelled" in notice["reason"]
