"""A session without MCP servers pays nothing: the `mcp` SDK is never imported."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.acp_fixtures import write_config
from tests.support.wire_client import WireProcess

SCRIPT = """
import asyncio, sys
import kimi_acp.mcp.config as config
config.parse_mcp_json({"mcpServers": {"a": {"command": "x"}, "b": {"url": "https://h/sse"}}}, origin="t")
config.resolve_servers(session=[])
import kimi_acp.mcp.manager, kimi_acp.mcp.events, kimi_acp.mcp.status, kimi_acp.mcp.store
from kimi_acp.mcp.manager import McpManager
from kimi_acp.mcp.events import wait_for_servers

async def main():
    manager = McpManager([])
    sent = []
    status = await wait_for_servers(manager, sent.append)
    assert status.total == 0 and sent == [], sent
    await manager.aclose()

asyncio.run(main())
loaded = sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp."))
print(loaded)
sys.exit(1 if loaded else 0)
"""


def test_no_sdk_import_without_servers() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], check=False, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "[]"


IMPORTED_SDK = re.compile(r"\|\s+mcp(\.|\s*$)", re.MULTILINE)


async def test_servers_without_mcp_sessions_never_import_the_sdk(tmp_path, share, project):
    """`-X importtime` logs every import of the real processes; none may be of the `mcp` SDK."""
    write_config(share, ["text: one", "text: two"])
    env = {"KIMI_SHARE_DIR": str(share), "PYTHONPROFILEIMPORTTIME": "1"}
    agent = await WireProcess.spawn("acp", env=env)
    await agent.call("initialize", {"protocolVersion": 1})
    new, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    response, _ = await agent.call(
        "session/prompt", {"sessionId": new["result"]["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert response["result"]["stopReason"] == "end_turn"
    assert await agent.close() == 0
    acp_imports = await agent.stderr_text()

    wire = await WireProcess.start("--work-dir", str(project), "--config-file", str(share / "config.toml"), env=env)
    await wire.call("initialize", {"protocol_version": "1.10"})
    response, _ = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"]["status"] == "finished"
    assert await wire.close() == 0
    wire_imports = await wire.stderr_text()

    for imports in (acp_imports, wire_imports):
        assert "kimi_acp.core.agent_core" in imports  # the log is real
        assert not IMPORTED_SDK.search(imports), IMPORTED_SDK.search(imports)
        assert "kimi_acp.mcp." not in imports  # not even our own MCP layer: no servers, no mcp.json
