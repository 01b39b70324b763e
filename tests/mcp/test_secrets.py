"""Header values, env values and URL query values never reach a log line, a status or a tool error."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

from kimi_acp.mcp.config import McpClientSettings, RemoteServerConfig, StdioServerConfig
from kimi_acp.mcp.manager import McpManager
from kimi_acp.util.secrets import LogRedaction

from .helpers import free_port

HEADER_SECRET = "header-secret-4242"
QUERY_SECRET = "query-secret-1717"
ENV_SECRET = "env-secret-9393"


async def test_failures_and_sdk_logs_are_redacted(tmp_path: Path) -> None:
    # A handler on the root logger with the redacting filter, as startup/logs.py puts kimi.log's.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    handler.addFilter(LogRedaction())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    port = free_port()  # nothing listens there
    leak = "import os, sys; sys.stderr.write('token is ' + os.environ['TOKEN'] + '\\n'); sys.exit(1)"
    manager = McpManager(
        [
            RemoteServerConfig(
                "web",
                f"http://127.0.0.1:{port}/mcp?token={QUERY_SECRET}",
                "http",
                (("Authorization", f"Bearer {HEADER_SECRET}"),),
            ),
            RemoteServerConfig("old", f"http://127.0.0.1:{port}/sse?key={QUERY_SECRET}", "sse"),
            StdioServerConfig("leaky", sys.executable, ("-c", leak), (("TOKEN", ENV_SECRET),)),
        ],
        settings=McpClientSettings(connect_timeout_ms=5000),
        work_dir=tmp_path,
    )
    try:
        status = await manager.wait_ready()
    finally:
        await manager.aclose()
        root.removeHandler(handler)
        root.setLevel(old_level)
    assert [s.status for s in status.servers] == ["failed", "failed", "failed"]
    leaky = status.get("leaky")
    assert leaky is not None and "token is ***" in (leaky.error or "")  # the server's words, redacted
    log_text = stream.getvalue()
    assert "mcp.client.streamable_http DEBUG Connecting to StreamableHTTP endpoint" in log_text  # the SDK did log
    texts = [log_text, status.describe(), repr(status)]
    for text in texts:
        for secret in (HEADER_SECRET, QUERY_SECRET, ENV_SECRET):
            assert secret not in text, (secret, text)
