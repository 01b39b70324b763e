"""`kimi acp` as a process: raw protocol errors, stdout hygiene, exit on EOF and signals."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.support.acp_fixtures import write_config
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import WireProcess, tool_call


async def _start(share: Path) -> WireProcess:
    return await WireProcess.spawn("acp", env={"KIMI_SHARE_DIR": str(share)})


async def _session(agent: WireProcess, project: Path) -> str:
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    response, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    return response["result"]["sessionId"]


@pytest.mark.smoke
async def test_malformed_lines_get_errors_and_the_server_keeps_going(share, project):
    write_config(share, ["text: fine"])
    agent = await _start(share)
    await agent.send_raw("{this is not json")
    assert await agent.recv() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Invalid JSON format"}}
    await agent.send_raw("[1, 2, 3]")
    assert (await agent.recv())["error"]["code"] == -32600
    response, _ = await agent.call("no/such/method", {})
    assert response["error"]["code"] == -32601
    session_id = await _session(agent, project)
    response, _ = await agent.call("session/prompt", {"sessionId": session_id})
    assert response["error"]["code"] == -32602  # prompt missing
    response, seen = await agent.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]})
    assert response["result"]["stopReason"] == "end_turn" and "usage" in response["result"]
    assert await agent.close() == 0


@pytest.mark.smoke
async def test_stdout_carries_only_json_rpc(share, project):
    write_config(share, [tool_call("s1", "Shell", {"command": "echo to-stdout; echo to-stderr >&2"}), "text: ok", "error: 500 boom"], default_yolo=True)
    agent = await _start(share)
    session_id = await _session(agent, project)
    await agent.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    await agent.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "fail"}]}, timeout=30)
    assert await agent.close() == 0
    assert agent.proc.stdout is not None
    rest = await agent.proc.stdout.read()
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert all(m["jsonrpc"] == "2.0" for m in agent.received)
    assert "Traceback" not in await agent.stderr_text()


async def test_eof_during_a_turn_exits_and_kills_the_command(share, project):
    marker = sleep_marker(29)
    write_config(share, [tool_call("s1", "Shell", {"command": f"sleep {marker}"})], default_yolo=True)
    agent = await _start(share)
    session_id = await _session(agent, project)
    await agent.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]})
    assert await wait_until(lambda: process_alive(marker), 4.0)
    started = time.monotonic()
    assert await agent.close(timeout=5) == 0
    assert time.monotonic() - started < 3
    assert await wait_until(lambda: not process_alive(marker), 1.0)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signals_exit_cleanly_and_kill_children(share, project, sig):
    marker = sleep_marker(28)
    write_config(share, [tool_call("s1", "Shell", {"command": f"sleep {marker}"})], default_yolo=True)
    agent = await _start(share)
    session_id = await _session(agent, project)
    await agent.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]})
    assert await wait_until(lambda: process_alive(marker), 4.0)
    agent.proc.send_signal(sig)
    assert await asyncio.wait_for(agent.proc.wait(), 5) == 0
    assert await wait_until(lambda: not process_alive(marker), 1.0)
    assert "Traceback" not in await agent.stderr_text()


async def test_kimi_acp_script_is_the_same_server(share, project):
    script = Path(sys.executable).parent / "kimi-acp"
    if not script.exists():
        pytest.skip(f"{script} not installed (run `pip install -e .`)")
    write_config(share)
    proc = await asyncio.create_subprocess_exec(
        str(script), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KIMI_SHARE_DIR": str(share)},
    )
    agent = WireProcess(proc)
    response, _ = await agent.call("initialize", {"protocolVersion": 1})
    assert response["result"]["agentInfo"]["name"] == "kimi-acp"
    assert await agent.close() == 0
