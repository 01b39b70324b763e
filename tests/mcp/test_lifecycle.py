"""The first step's wait and its events, the change callback, problems from mcp.json, and no
server left behind when the process exits without closing its sessions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from kimi_acp.core.toolset import Toolset
from kimi_acp.mcp.config import McpClientSettings, McpConfigError, resolve_servers
from kimi_acp.mcp.events import wait_for_servers
from kimi_acp.mcp.manager import McpManager
from kimi_acp.mcp.status import McpStatus, ServerStatus
from kimi_acp.wire.serde import to_envelope
from kimi_acp.wire.types import MCPLoadingBegin, MCPLoadingEnd, StatusUpdate

from .helpers import FAST, SERVER, pid_alive, stdio, wait_gone


async def test_first_step_events_in_kimis_order(tmp_path: Path) -> None:
    manager = McpManager([stdio("local"), stdio("broken", "crash")], settings=FAST, work_dir=tmp_path)
    manager.start()
    sent: list[object] = []
    try:
        status = await wait_for_servers(manager, sent.append)
        assert [type(m) for m in sent] == [StatusUpdate, MCPLoadingBegin, StatusUpdate, MCPLoadingEnd]
        loading, done = sent[0], sent[2]
        assert isinstance(loading, StatusUpdate) and isinstance(done, StatusUpdate)
        assert loading.mcp_status == {
            "loading": True,
            "connected": 0,
            "total": 2,
            "tools": 0,
            "servers": [
                {"name": "local", "status": "connecting", "tools": []},
                {"name": "broken", "status": "connecting", "tools": []},
            ],
        }
        assert done.mcp_status is not None
        assert done.mcp_status["loading"] is False and done.mcp_status["connected"] == 1
        assert done.mcp_status["servers"][1] == {"name": "broken", "status": "failed", "tools": []}
        assert "echo" in done.mcp_status["servers"][0]["tools"]
        assert done.mcp_status["tools"] == len(done.mcp_status["servers"][0]["tools"])
        assert status.to_wire() == done.mcp_status
        # It serializes as the Wire envelope a client receives.
        envelope = to_envelope(done)
        assert envelope["type"] == "StatusUpdate" and envelope["payload"]["mcp_status"] == done.mcp_status
        # Later turns wait without repeating the events.
        sent.clear()
        await wait_for_servers(manager, sent.append)
        assert sent == []
    finally:
        await manager.aclose()


async def test_already_up_sends_one_status_update(tmp_path: Path) -> None:
    manager = McpManager([stdio("local")], settings=FAST, work_dir=tmp_path)
    try:
        await manager.wait_ready()
        sent: list[object] = []
        await wait_for_servers(manager, sent.append)
        assert len(sent) == 1 and isinstance(sent[0], StatusUpdate) and sent[0].mcp_status["connected"] == 1  # type: ignore[index]
    finally:
        await manager.aclose()


async def test_wait_ready_is_bounded(tmp_path: Path) -> None:
    manager = McpManager(
        [stdio("silent", "hang")], settings=McpClientSettings(connect_timeout_ms=20_000), work_dir=tmp_path
    )
    try:
        status = await manager.wait_ready(timeout=0.3)
        assert status.loading and status.servers[0].status == "connecting"
    finally:
        await manager.aclose()
    assert manager.status().servers[0].status != "connected"


async def test_change_callback_and_unsubscribe(tmp_path: Path) -> None:
    seen: list[tuple[McpStatus, ServerStatus | None]] = []
    manager = McpManager([stdio("local")], settings=FAST, work_dir=tmp_path)
    unsubscribe = manager.on_change(lambda status, changed: seen.append((status, changed)))
    try:
        await manager.wait_ready()
        states = [changed.status for _, changed in seen if changed]
        assert states == ["connecting", "connected"]
        assert seen[-1][1] is not None and seen[-1][1].describe().startswith("MCP server `local` connected (")
        unsubscribe()
        await manager.update([])
        assert len(seen) == 2
    finally:
        await manager.aclose()


async def test_mcp_json_problems_show_as_failed_servers(tmp_path: Path) -> None:
    from kimi_acp.mcp.config import default_mcp_file

    default_mcp_file().parent.mkdir(parents=True, exist_ok=True)
    default_mcp_file().write_text(json.dumps({"mcpServers": {"typo": {"comand": "x"}}}))
    resolved = resolve_servers(session=[])
    manager = McpManager(resolved.servers, problems=resolved.problems, settings=FAST)
    try:
        status = await manager.wait_ready()
        assert status.to_wire()["servers"] == [{"name": "typo", "status": "failed", "tools": []}]
        assert status.servers[0].error is not None and "needs `command`" in status.servers[0].error
        assert isinstance(resolved.problems[0], McpConfigError)
        assert manager.configured
    finally:
        await manager.aclose()
    assert not McpManager([]).configured


async def test_toolset_gets_tools_only_from_the_manager(tmp_path: Path) -> None:
    toolset = Toolset([])
    toolset.register_external("client_tool", "from the client", {"type": "object"})
    assert toolset.reserved_names() == {"client_tool"}
    manager = McpManager([stdio("local", "stdio", "--prefix", "client_")], settings=FAST, work_dir=tmp_path)
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        names = set(toolset.names())
        assert "client_echo" in names and "client_tool" in names
        assert toolset.reserved_names() == {"client_tool"}
        await manager.update([])
        assert toolset.names() == ["client_tool"]
    finally:
        await manager.aclose()


def test_no_server_outlives_the_process(tmp_path: Path) -> None:
    """A process that exits without closing its sessions still takes its servers along (atexit)."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from kimi_acp.mcp.config import StdioServerConfig
        from kimi_acp.mcp.manager import McpManager

        async def main():
            m = McpManager([StdioServerConfig("x", sys.executable, ({SERVER!r}, "stdio"))])
            await m.wait_ready()
            conn = m._connections["x"]
            pid = int((await conn.call_tool("pid", {{}})).content[0].text)
            child = int((await conn.call_tool("spawn", {{}})).content[0].text)
            print(json.dumps([pid, child]), flush=True)
            # no aclose: the process just ends

        asyncio.run(main())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=30, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    pids = json.loads(proc.stdout.strip().splitlines()[-1])
    assert wait_gone(pids, timeout=5) == [], [p for p in pids if pid_alive(p)]
