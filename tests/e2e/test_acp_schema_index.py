"""The ACP schema index across starts of `kimi acp` (kimi_acp/_compat/acp_lazy_schema.py): the first start
imports the SDK as usual and caches the index after its first session; the next starts create the
SDK's models from it; a torn index is ignored and written again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kimi_acp._compat import acp_lazy_schema as lazy_schema
from tests.support.acp_fixtures import write_config
from tests.support.wire_client import WireProcess

LAZY_LINE = "names created at import (cached index)"


async def start_and_prompt(share: Path, cache: Path, project: Path, *, linger: float = 0.0) -> None:
    agent = await WireProcess.spawn("acp", env={"KIMI_SHARE_DIR": str(share), "KIMI_CACHE_DIR": str(cache)})
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    response, _ = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    session_id = response["result"]["sessionId"]
    response, updates = await agent.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]})
    assert response["result"]["stopReason"] == "end_turn" and "usage" in response["result"]
    chunks = [u["params"]["update"] for u in updates if u.get("method") == "session/update"]
    assert any(c.get("sessionUpdate") == "agent_message_chunk" and c["content"]["text"] == "hello" for c in chunks)
    deadline = time.monotonic() + linger
    while time.monotonic() < deadline and not list(cache.glob("acp-schema-*.index")):
        await agent.call("session/list", {})  # the server keeps serving meanwhile
        await asyncio.sleep(0.1)
    assert await agent.close() == 0
    assert "Traceback" not in await agent.stderr_text()


def log_text(share: Path) -> str:
    return (share / "logs" / "kimi.log").read_text(encoding="utf-8")


async def test_the_first_start_caches_the_index_and_the_next_start_uses_it(share, project, tmp_path):
    cache = tmp_path / "cache"
    write_config(share, ["text: hello", "text: hello", "text: hello"])
    await start_and_prompt(share, cache, project, linger=30)
    [index] = cache.glob("acp-schema-*.index")
    assert LAZY_LINE not in log_text(share)

    await start_and_prompt(share, cache, project)
    assert log_text(share).count(LAZY_LINE) == 1

    index.write_bytes(index.read_bytes()[:1000])  # torn (say, a full disk)
    await start_and_prompt(share, cache, project)
    assert log_text(share).count(LAZY_LINE) == 1  # not used: the SDK was imported as usual
    assert "ACP schema index unusable" in log_text(share)


async def test_a_torn_index_is_written_again(share, project, tmp_path):
    cache = tmp_path / "cache"
    write_config(share, ["text: hello", "text: hello"])
    await start_and_prompt(share, cache, project, linger=30)
    [index] = cache.glob("acp-schema-*.index")
    index.write_bytes(index.read_bytes()[:1000])
    # a start that lives past its first session writes it again
    agent = await WireProcess.spawn("acp", env={"KIMI_SHARE_DIR": str(share), "KIMI_CACHE_DIR": str(cache)})
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and index.stat().st_size <= 1000:
        await asyncio.sleep(0.1)
    assert await agent.close() == 0
    lazy_schema.load(index.read_bytes())  # whole again
    await start_and_prompt(share, cache, project)
    assert log_text(share).count(LAZY_LINE) == 1
