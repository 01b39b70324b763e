"""Real MCP servers (tests/mcp/server_app.py, FastMCP) over streamable HTTP and SSE, started once
per module, and a recording approver for the tool adapter."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from .helpers import SERVER, FakeApprover, HttpServer, free_port


def _start_http(mode: str, prefix: str) -> Iterator[HttpServer]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, mode, str(port), "--prefix", prefix],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the {mode} test server exited with {proc.returncode}") from None
            time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError(f"the {mode} test server did not listen on {port}")
    try:
        yield HttpServer(proc, port)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    """Streamable HTTP on 127.0.0.1, tools prefixed `h_`."""
    yield from _start_http("http", "h_")


@pytest.fixture(scope="module")
def sse_server() -> Iterator[HttpServer]:
    """HTTP+SSE on 127.0.0.1, tools prefixed `s_`."""
    yield from _start_http("sse", "s_")


@pytest.fixture
def approver() -> FakeApprover:
    return FakeApprover()
