"""Real MCP servers over stdio, streamable HTTP and SSE, through the manager, the tool adapter and
the session's Toolset, with a recording approver."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.core.toolset import Toolset
from kimi_acp.mcp.config import McpClientSettings, StdioServerConfig
from kimi_acp.mcp.connection import McpConnection
from kimi_acp.mcp.manager import McpManager, close_all
from kimi_acp.mcp.status import McpStatus, ServerStatus
from kimi_acp.tools import builtin_tools
from kimi_acp.wire.types import FunctionBody, ImageURLPart, TextPart, ToolCall

from .helpers import FAST, FakeApprover, HttpServer, context, pid_alive, stdio, wait_gone


def call(name: str, arguments: dict | None = None, call_id: str = "call-1") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=json.dumps(arguments or {})))


async def run(
    toolset: Toolset, tmp_path: Path, approver: FakeApprover, name: str, arguments: dict | None = None
):
    outcome = await toolset.handle(call(name, arguments), lambda tool: context(tmp_path, approver, tool))
    return outcome.result


async def test_three_transports_through_the_toolset(
    tmp_path: Path, http_server: HttpServer, sse_server: HttpServer, approver: FakeApprover
) -> None:
    manager = McpManager(
        [
            stdio("local", "stdio", "--prefix", "l_"),
            http_server.config("web", "http"),
            sse_server.config("old", "sse"),
        ],
        settings=FAST,
        work_dir=tmp_path,
    )
    toolset = Toolset(builtin_tools())
    manager.bind_toolset(toolset)
    try:
        status = await manager.wait_ready()
        assert [(s.name, s.status) for s in status.servers] == [
            ("local", "connected"),
            ("web", "connected"),
            ("old", "connected"),
        ], status
        for name in ("l_echo", "h_echo", "s_echo"):
            result = await run(toolset, tmp_path, approver, name, {"text": "hi"})
            assert not result.is_error, result
            assert result.output == "echo: hi"
        assert [(r.action, r.sender, r.tool_call_id) for r in approver.requests] == [
            ("mcp:l_echo", "l_echo", "call-1"),
            ("mcp:h_echo", "h_echo", "call-1"),
            ("mcp:s_echo", "s_echo", "call-1"),
        ]
        assert "MCP server `web`: tool `h_echo`" in approver.requests[1].description  # the server first
        spec = next(s for s in toolset.specs() if s.name == "h_echo")
        assert spec.description.startswith(
            "This is an MCP (Model Context Protocol) tool from MCP server `web`."
        )
        assert spec.parameters["properties"]["text"]["type"] == "string"
        assert "ReadFile" in toolset.names()  # the built-ins are still there

        # Arguments are checked against the server's schema before anyone is asked.
        before = len(approver.requests)
        bad = await run(toolset, tmp_path, approver, "l_echo", {"text": 5})
        assert bad.is_error and "Error validating JSON arguments" in bad.message
        assert len(approver.requests) == before

        wire = status.to_wire()
        assert wire["loading"] is False and wire["connected"] == 3 and wire["total"] == 3
        assert wire["tools"] == len(wire["servers"][0]["tools"]) * 3
        assert set(wire["servers"][0]) == {"name", "status", "tools"}
    finally:
        await manager.aclose()


async def test_rejection_and_yolo_go_through_approvals(tmp_path: Path, approver: FakeApprover) -> None:
    from kimi_acp import sessions
    from kimi_acp.core.approvals import Approvals

    manager = McpManager([stdio("local")], settings=FAST, work_dir=tmp_path)
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        approver.reject = True
        result = await toolset.handle(call("echo", {"text": "x"}), lambda t: context(tmp_path, approver, t))
        assert result.rejected and result.result.is_error

        sent: list[object] = []
        approvals = Approvals(sessions.create(tmp_path), sent.append)
        approvals.approve_for_session("mcp:echo")
        ok = await toolset.handle(call("echo", {"text": "y"}), lambda t: context(tmp_path, approvals, t))
        assert ok.result.output == "echo: y" and sent == []  # approved for the session: nobody asked
        approvals.runtime_yolo = True
        ok = await toolset.handle(call("pid"), lambda t: context(tmp_path, approvals, t))
        assert not ok.result.is_error and sent == []
    finally:
        await manager.aclose()


async def test_failures_are_reported_by_name_and_the_others_work(
    tmp_path: Path, approver: FakeApprover
) -> None:
    changes: list[ServerStatus | None] = []
    manager = McpManager(
        [
            stdio("good"),
            stdio("crashy", "crash"),
            stdio("silent", "hang"),
            StdioServerConfig("missing", "/nonexistent/kimi-mcp-server"),
        ],
        settings=McpClientSettings(connect_timeout_ms=4000),
        work_dir=tmp_path,
    )
    manager.on_change(lambda status, changed: changes.append(changed))
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        started = time.monotonic()
        status = await manager.wait_ready()
        assert time.monotonic() - started < 8
        by = {s.name: s for s in status.servers}
        assert by["good"].status == "connected"
        assert by["crashy"].status == "failed"
        assert "refuses to start" in (by["crashy"].error or "")  # its stderr tells why
        assert by["silent"].status == "failed" and "connect timeout" in (by["silent"].error or "")
        assert by["missing"].status == "failed" and "not found" in (by["missing"].error or "")
        assert "MCP server `crashy` failed:" in status.describe()
        assert {c.name for c in changes if c and c.status == "failed"} == {"crashy", "silent", "missing"}
        result = await run(toolset, tmp_path, approver, "echo", {"text": "still here"})
        assert result.output == "echo: still here"
    finally:
        await manager.aclose()


async def test_a_server_that_died_before_our_first_write_still_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`initialize` then meets a broken pipe, not an EOF; the reason must still be its stderr."""
    opened = McpConnection._open_transport

    async def open_then_wait_for_the_exit(self: McpConnection, stack: Any, gen: Any) -> Any:
        streams = await opened(self, stack, gen)
        while pid_alive(gen.pids[0]):  # what a loaded machine does by accident
            await asyncio.sleep(0.02)
        return streams

    monkeypatch.setattr(McpConnection, "_open_transport", open_then_wait_for_the_exit)
    manager = McpManager([stdio("crashy", "crash")], work_dir=tmp_path)
    try:
        (server,) = (await manager.wait_ready()).servers
        assert server.status == "failed"
        assert server.error == (
            "the server exited during start-up; its last output: fatal: the test server refuses to start"
        )
    finally:
        await manager.aclose()


async def test_tool_errors_images_timeouts_and_caps(tmp_path: Path, approver: FakeApprover) -> None:
    accepts: set[str] = set()
    manager = McpManager(
        [stdio("local")],
        settings=McpClientSettings(tool_call_timeout_ms=1000),
        work_dir=tmp_path,
        capabilities=lambda: accepts,
        max_output_chars=2000,
    )
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        boom = await run(toolset, tmp_path, approver, "boom")
        assert boom.is_error and "kaboom from the server" in str(boom.output)

        no_images = await run(toolset, tmp_path, approver, "picture")
        assert not no_images.is_error
        assert isinstance(no_images.output, str)
        assert "a red dot" in no_images.output and "does not accept images" in no_images.output

        accepts.add("image_in")  # the model was switched to one that sees images
        images = await run(toolset, tmp_path, approver, "picture")
        assert isinstance(images.output, list)
        assert images.output[0] == TextPart(text="a red dot")
        assert isinstance(images.output[1], ImageURLPart)
        assert images.output[1].image_url.url.startswith("data:image/png;base64,iVBOR")

        started = time.monotonic()
        slow = await run(toolset, tmp_path, approver, "slow", {"seconds": 5})
        assert slow.is_error and "timed out after 1 s" in slow.message
        assert time.monotonic() - started < 3

        big = await run(toolset, tmp_path, approver, "big", {"chars": 10_000})
        assert isinstance(big.output, str) and len(big.output) <= 2000 + len("[...truncated]")

        after = await run(toolset, tmp_path, approver, "echo", {"text": "ok"})
        assert after.output == "echo: ok"  # a timed-out call does not break the connection

        assert (await run(toolset, tmp_path, approver, "grow")).output == "grown"
        for _ in range(200):  # notifications/tools/list_changed: the tool list is fetched again
            if "extra" in toolset.names():
                break
            await asyncio.sleep(0.02)
        assert (await run(toolset, tmp_path, approver, "extra")).output == "extra!"
    finally:
        await manager.aclose()


async def test_killed_server_is_reconnected_once_then_reported(
    tmp_path: Path, approver: FakeApprover
) -> None:
    statuses: list[McpStatus] = []
    marker = tmp_path / "crash-next-start"
    manager = McpManager(
        [stdio("local", env={"MCP_TEST_CRASH_IF_EXISTS": str(marker)})], settings=FAST, work_dir=tmp_path
    )
    manager.on_change(lambda status, changed: statuses.append(status))
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        first_pid = int((await run(toolset, tmp_path, approver, "pid")).output)
        import os
        import signal

        os.kill(first_pid, signal.SIGKILL)
        for _ in range(200):
            if manager.status().servers[0].status == "failed":
                break
            await asyncio.sleep(0.02)
        lost = manager.status().servers[0]
        assert lost.status == "failed" and "exited" in (lost.error or "")
        assert "pid" in toolset.names()  # its tools stay, so the next call can bring it back

        second = await run(toolset, tmp_path, approver, "pid")
        assert not second.is_error, second
        second_pid = int(second.output)
        assert second_pid != first_pid and pid_alive(second_pid)
        assert manager.status().servers[0].status == "connected"

        # A server that keeps dying: one reconnect per death, and a reconnect that fails is final.
        marker.touch()  # the next start crashes
        os.kill(second_pid, signal.SIGKILL)
        for _ in range(200):
            if manager.status().servers[0].status == "failed":
                break
            await asyncio.sleep(0.02)
        third = await run(toolset, tmp_path, approver, "pid")
        assert third.is_error and "refuses to start" in third.message
        fourth = await run(toolset, tmp_path, approver, "pid")
        assert fourth.is_error and "is not connected" in fourth.message
        assert manager.status().servers[0].status == "failed"
        assert any(s.servers[0].status == "connecting" for s in statuses[2:])  # the reconnect was visible
    finally:
        await manager.aclose()


async def test_death_during_a_call_is_a_tool_error(tmp_path: Path, approver: FakeApprover) -> None:
    manager = McpManager([stdio("local")], settings=FAST, work_dir=tmp_path)
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        pid = int((await run(toolset, tmp_path, approver, "pid")).output)
        pending = asyncio.ensure_future(run(toolset, tmp_path, approver, "slow", {"seconds": 30}))
        await asyncio.sleep(0.3)
        import os
        import signal

        os.kill(pid, signal.SIGKILL)
        result = await asyncio.wait_for(pending, 5)
        assert result.is_error and "lost the connection" in result.message
    finally:
        await manager.aclose()


async def test_http_server_gone_then_back(tmp_path: Path, approver: FakeApprover) -> None:
    """A refused connection never reached the server: reconnect once and send the call again."""
    import os
    import signal
    import subprocess
    import sys

    from .helpers import SERVER, free_port

    port = free_port()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, SERVER, "http", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def wait_listening() -> None:
        import socket

        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.025)
        raise AssertionError("server did not start")

    proc = start()
    try:
        wait_listening()
        manager = McpManager([HttpServer(proc, port).config("web", "http")], settings=FAST, work_dir=tmp_path)
        toolset = Toolset([])
        manager.bind_toolset(toolset)
        try:
            await manager.wait_ready()
            assert (await run(toolset, tmp_path, approver, "echo", {"text": "1"})).output == "echo: 1"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = start()
            await asyncio.to_thread(wait_listening)
            again = await run(toolset, tmp_path, approver, "echo", {"text": "2"})
            assert again.output == "echo: 2", again
        finally:
            await manager.aclose()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_no_process_left_after_close(tmp_path: Path, approver: FakeApprover) -> None:
    managers = [McpManager([stdio("local")], settings=FAST, work_dir=tmp_path) for _ in range(4)]
    toolsets = [Toolset([]) for _ in managers]
    for manager, toolset in zip(managers, toolsets):
        manager.bind_toolset(toolset)
    try:
        await asyncio.gather(*(m.wait_ready() for m in managers))
        pids = [int((await run(t, tmp_path, approver, "pid")).output) for t in toolsets]
        assert len(set(pids)) == 4  # the same entry in four sessions: four processes
        child = int((await run(toolsets[0], tmp_path, approver, "spawn")).output)
        assert pid_alive(child)
        await managers[0].aclose()
        assert wait_gone([pids[0], child]) == []  # the server and its child
        assert all(pid_alive(p) for p in pids[1:])  # other sessions keep theirs
        closed = await run(toolsets[0], tmp_path, approver, "pid")
        assert closed.is_error and "closed" in closed.message
        await close_all()  # process shutdown: every session's servers
        assert wait_gone(pids) == []
    finally:
        await asyncio.gather(*(m.aclose() for m in managers))


async def test_update_keeps_equal_entries_and_closes_the_rest(
    tmp_path: Path, approver: FakeApprover
) -> None:
    manager = McpManager(
        [stdio("keep"), stdio("drop", "stdio", "--prefix", "d_")], settings=FAST, work_dir=tmp_path
    )
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        keep_pid = int((await run(toolset, tmp_path, approver, "pid")).output)
        drop_pid = int((await run(toolset, tmp_path, approver, "d_pid")).output)
        assert not await manager.update([stdio("keep"), stdio("drop", "stdio", "--prefix", "d_")])
        changed = await manager.update([stdio("keep"), stdio("new", "stdio", "--prefix", "n_")])
        assert changed
        assert wait_gone([drop_pid]) == []
        assert "d_pid" not in toolset.names()
        await manager.wait_ready()
        assert [s.name for s in manager.status().servers] == ["keep", "new"]
        assert int((await run(toolset, tmp_path, approver, "pid")).output) == keep_pid
        assert not (await run(toolset, tmp_path, approver, "n_echo", {"text": "n"})).is_error
    finally:
        await manager.aclose()


async def test_clashing_tools_get_server_prefixes(tmp_path: Path, approver: FakeApprover) -> None:
    manager = McpManager([stdio("one"), stdio("two")], settings=FAST, work_dir=tmp_path)
    toolset = Toolset(builtin_tools())
    manager.bind_toolset(toolset)
    try:
        await manager.wait_ready()
        names = set(toolset.names())
        assert {"mcp__one__echo", "mcp__two__echo"} <= names and "echo" not in names
        one = int((await run(toolset, tmp_path, approver, "mcp__one__pid")).output)
        two = int((await run(toolset, tmp_path, approver, "mcp__two__pid")).output)
        assert one != two
        assert approver.requests[-1].action == "mcp:mcp__two__pid"
        with pytest.raises(ValueError, match="conflicts with MCP tool"):
            toolset.register_external("mcp__one__echo", "d", {"type": "object"})
    finally:
        await manager.aclose()
