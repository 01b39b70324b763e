"""Helpers for the MCP tests: server entries, ports, a recording approver, pid checks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_acp.mcp.config import McpClientSettings, RemoteServerConfig, StdioServerConfig
from kimi_acp.tools.base import ToolContext
from tests.support.approver import FakeApprover  # noqa: F401  (the MCP tests import it from here)
from tests.support.processes import pid_alive

SERVER = str(Path(__file__).with_name("server_app.py"))
FAST = McpClientSettings(tool_call_timeout_ms=10_000, connect_timeout_ms=15_000)


def stdio(
    name: str, mode: str = "stdio", *extra: str, env: dict[str, str] | None = None
) -> StdioServerConfig:
    return StdioServerConfig(name, sys.executable, (SERVER, mode, *extra), env=tuple((env or {}).items()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    port: int

    def config(self, name: str, transport: str, **kw: Any) -> RemoteServerConfig:
        path = "/sse" if transport == "sse" else "/mcp"
        return RemoteServerConfig(name, f"http://127.0.0.1:{self.port}{path}", transport, **kw)  # type: ignore[arg-type]


def context(tmp_path: Path, approver: Any, name: str, call_id: str = "call-1") -> ToolContext:
    """What the core would build for one call (the toolset passes the tool's name)."""
    return ToolContext(
        work_dir=tmp_path,
        kaos=None,
        tool_call_id=call_id,
        approver=approver,
        todos=None,
        tool_name=name,  # type: ignore[arg-type]
    )


def wait_gone(pids: Sequence[int], timeout: float = 5.0) -> list[int]:
    """The pids still running after `timeout`."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if pid_alive(p)]
        if alive:
            time.sleep(0.02)
    return alive
