"""OAuth MCP servers end to end: `kimi mcp auth` in a (fake) browser against a real loopback
authorization server + protected MCP server (tests/fakes/mcp_oauth_server.py), then the servers'
connections on the stored tokens: refreshed when expired, and a clear "run kimi mcp auth" when
only a person could help."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kimi_acp.core.toolset import Toolset
from kimi_acp.mcp.config import RemoteServerConfig, default_mcp_file
from kimi_acp.mcp.manager import McpManager
from kimi_acp.mcp.oauth_store import OAuthStore, oauth_dir

from .helpers import FAST, FakeApprover, HttpServer, context

ROOT = Path(__file__).resolve().parents[2]
FAKE_SERVER = ROOT / "tests" / "fakes" / "mcp_oauth_server.py"
FAKE_BROWSER = ROOT / "tests" / "fakes" / "browser.py"


@dataclass
class OAuthServer:
    url: str
    state: Path
    process: subprocess.Popen[bytes]

    def log(self) -> list[dict]:
        path = self.state / "log.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def grants(self) -> list[str]:
        return [e["grant_type"] for e in self.log() if e["endpoint"] == "/token" and e["status"] == 200]

    def count(self, endpoint: str) -> int:
        return sum(1 for e in self.log() if e["endpoint"] == endpoint)


def start_server(state: Path, *args: str) -> OAuthServer:
    state.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, str(FAKE_SERVER), "--state", str(state), *args], start_new_session=True
    )
    deadline = time.monotonic() + 20
    ready = state / "ready.json"
    while time.monotonic() < deadline:
        if ready.exists():
            info = json.loads(ready.read_text())
            if info["pid"] == process.pid:
                return OAuthServer(info["url"], state, process)
        if process.poll() is not None:
            raise RuntimeError(f"the OAuth test server exited with {process.returncode}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the OAuth test server did not start")


def stop_server(server: OAuthServer) -> None:
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(10)


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[OAuthServer]:
    server = start_server(tmp_path / "oauth-state")
    yield server
    stop_server(server)


def add_server(url: str, name: str = "linear") -> None:
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {name: {"url": url, "transport": "http", "auth": "oauth"}}}))


def kimi(*args: str, deny: bool = False, browser_log: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BROWSER": f"{sys.executable} {FAKE_BROWSER} %s"}
    env.pop("DISPLAY", None)  # only the fake browser may be started
    if deny:
        env["FAKE_BROWSER_DENY"] = "1"
    if browser_log is not None:
        env["FAKE_BROWSER_LOG"] = str(browser_log)
    return subprocess.run(
        [sys.executable, "-m", "kimi_acp", *args], env=env, capture_output=True, text=True, timeout=120
    )


async def connected_manager(url: str, work_dir: Path) -> tuple[McpManager, Toolset]:
    manager = McpManager([RemoteServerConfig("linear", url, "http", auth="oauth")], settings=FAST, work_dir=work_dir)
    toolset = Toolset([])
    manager.bind_toolset(toolset)
    await manager.wait_ready()
    return manager, toolset


async def call(toolset: Toolset, work_dir: Path, name: str, args: dict | None = None) -> str:
    from kimi_acp.wire.types import FunctionBody, ToolCall

    tool_call = ToolCall(id="c1", function=FunctionBody(name=name, arguments=json.dumps(args or {})))
    outcome = await toolset.handle(tool_call, lambda t: context(work_dir, FakeApprover(), t))
    return str(outcome.result.output)


def test_kimi_mcp_auth_signs_in_and_sessions_use_the_tokens(oauth_server: OAuthServer, tmp_path: Path) -> None:
    add_server(oauth_server.url)
    listed = kimi("mcp", "list")
    assert "[authorization required - run: kimi mcp auth linear]" in listed.stdout

    browser_log = tmp_path / "browser.log"
    done = kimi("mcp", "auth", "linear", browser_log=browser_log)
    assert done.returncode == 0, done.stderr
    assert "Successfully authorized with 'linear'." in done.stdout and "Available tools: 2" in done.stdout
    (opened,) = browser_log.read_text().splitlines()
    assert opened.startswith(oauth_server.url.removesuffix("/mcp") + "/oauth/authorize?") and opened in done.stdout
    assert oauth_server.count("/register") == 1 and oauth_server.grants() == ["authorization_code"]

    store = OAuthStore(oauth_server.url)
    assert store.has_tokens()
    for path in oauth_dir().rglob("*.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    tokens = asyncio.run(store.get_tokens())
    assert tokens.access_token not in done.stdout + done.stderr
    log_text = "".join(p.read_text() for p in (oauth_dir().parent / "logs").glob("*")) if (oauth_dir().parent / "logs").exists() else ""
    assert tokens.access_token not in log_text and tokens.refresh_token not in log_text
    assert "authorization required" not in kimi("mcp", "list").stdout

    async def use() -> str:
        manager, toolset = await connected_manager(oauth_server.url, tmp_path)
        try:
            return await call(toolset, tmp_path, "whoami")
        finally:
            await manager.aclose()

    assert asyncio.run(use()).startswith("authorized as client-")
    assert oauth_server.count("/authorize") == 1  # no second sign-in

    cleared = kimi("mcp", "reset-auth", "linear")
    assert cleared.returncode == 0 and "OAuth tokens cleared for 'linear'." in cleared.stdout
    assert not store.has_tokens() and asyncio.run(store.get_client_info()) is None
    assert "[authorization required" in kimi("mcp", "list").stdout


def test_an_expired_token_is_refreshed_where_the_metadata_says(tmp_path: Path) -> None:
    server = start_server(tmp_path / "short", "--access-ttl", "1")
    try:
        add_server(server.url)
        assert kimi("mcp", "auth", "linear").returncode == 0
        before = asyncio.run(OAuthStore(server.url).get_tokens())
        time.sleep(1.5)  # the access token has run out

        async def use() -> tuple[str, str]:
            manager, toolset = await connected_manager(server.url, tmp_path)
            try:
                return manager.status().servers[0].status, await call(toolset, tmp_path, "echo", {"text": "hi"})
            finally:
                await manager.aclose()

        status, echoed = asyncio.run(use())
        assert (status, echoed) == ("connected", "echo: hi")
        assert server.grants() == ["authorization_code", "refresh_token"]  # at /oauth/token, not a guessed /token
        assert server.count("/authorize") == 1
        assert not [e for e in server.log() if e["endpoint"] == "/mcp" and e.get("reason") == "expired"]
        after = asyncio.run(OAuthStore(server.url).get_tokens())
        assert after.refresh_token != before.refresh_token  # the rotated pair was stored
    finally:
        stop_server(server)


def test_without_tokens_or_with_revoked_ones_the_server_says_to_run_kimi_mcp_auth(tmp_path: Path) -> None:
    server = start_server(tmp_path / "first")
    port = server.url.split(":")[2].split("/")[0]
    try:
        async def status() -> tuple[str, str | None]:
            manager = McpManager(
                [RemoteServerConfig("linear", server.url, "http", auth="oauth")], settings=FAST, work_dir=tmp_path
            )
            try:
                (entry,) = (await manager.wait_ready()).servers
                return entry.status, entry.error
            finally:
                await manager.aclose()

        state, error = asyncio.run(status())
        assert state == "failed" and error == "not authorized: run `kimi mcp auth linear` in a terminal, then start a new session"
        assert [e["endpoint"] for e in server.log() if e["endpoint"] in ("/mcp", "/authorize")] == ["/mcp"]  # one 401

        add_server(server.url)
        assert kimi("mcp", "auth", "linear").returncode == 0
        stop_server(server)
        server = start_server(tmp_path / "second", "--port", port)  # forgot every client and token
        state, error = asyncio.run(status())
        assert state == "failed" and "run `kimi mcp auth linear`" in (error or "")
        assert server.count("/authorize") == 0  # nobody was sent to a browser
    finally:
        stop_server(server)


def test_a_denied_authorization_keeps_the_earlier_one(oauth_server: OAuthServer, tmp_path: Path) -> None:
    add_server(oauth_server.url)
    assert kimi("mcp", "auth", "linear").returncode == 0
    kept = asyncio.run(OAuthStore(oauth_server.url).get_tokens())
    denied = kimi("mcp", "auth", "linear", deny=True)
    assert denied.returncode == 1
    assert "Authorization failed:" in denied.stderr and "access_denied" in denied.stderr
    assert "Traceback" not in denied.stderr
    assert asyncio.run(OAuthStore(oauth_server.url).get_tokens()).access_token == kept.access_token


def test_auth_refuses_servers_that_are_not_oauth_ones(tmp_path: Path) -> None:
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {
        "local": {"command": "true"},
        "plain": {"url": "https://mcp.example/mcp"},
    }}))
    local = kimi("mcp", "auth", "local")
    assert local.returncode == 1 and "MCP server 'local' is not a remote server." in local.stderr
    plain = kimi("mcp", "auth", "plain")
    assert plain.returncode == 1 and "does not use OAuth. Add it with --auth oauth." in plain.stderr
    missing = kimi("mcp", "auth", "nope")
    assert missing.returncode == 1 and "MCP server 'nope' not found" in missing.stderr
    added = kimi("mcp", "add", "--transport", "http", "--auth", "oauth", "linear", "https://mcp.example/mcp")
    assert added.returncode == 0 and "Run `kimi mcp auth linear` to authorize it." in added.stdout
    assert json.loads(path.read_text())["mcpServers"]["linear"]["auth"] == "oauth"
    stdio_auth = kimi("mcp", "add", "--auth", "oauth", "x", "--", "true")
    assert stdio_auth.returncode == 2 and "--auth is only for http and sse servers" in stdio_auth.stderr


@pytest.fixture
def other(tmp_path: Path) -> Iterator[OAuthServer]:
    """A second protected server, never authorized."""
    server = start_server(tmp_path / "other-oauth")
    yield server
    stop_server(server)


async def test_an_ide_session_uses_the_authorized_server_and_shows_an_unauthorized_one(
    oauth_server: OAuthServer, other: OAuthServer, work_dir: Path
) -> None:
    from tests.support.acp_fixtures import acp_env, of_kind, texts, write_config
    from tests.support.inmemory import serve_acp
    from tests.support.wire_client import tool_call

    share = Path(os.environ["KIMI_SHARE_DIR"])
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {
        "linear": {"url": oauth_server.url, "transport": "http", "auth": "oauth"},
        "notion": {"url": other.url, "transport": "http", "auth": "oauth"},
    }}))
    done = await asyncio.to_thread(kimi, "mcp", "auth", "linear")
    assert done.returncode == 0, done.stderr
    write_config(share, [tool_call("t1", "whoami", {}), "text: done"], default_yolo=True)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(work_dir)).session_id
        assert (await agent.prompt(session_id, "who am I?")).stop_reason == "end_turn"
        updates = agent.recorder.updates(session_id)
        notice = texts(updates)
        assert "MCP server `linear` connected" in notice
        assert "MCP server `notion` failed" in notice and "run `kimi mcp auth notion` in a terminal" in notice
        results = [u for u in of_kind(updates, "tool_call_update") if u.get("status") == "completed"]
        assert results and "authorized as client-" in json.dumps(results[-1]["content"])
    assert oauth_server.count("/authorize") == 1 and other.count("/authorize") == 0  # the session signed in nobody
    tokens = await OAuthStore(oauth_server.url).get_tokens()
    logs = "".join(p.read_text() for p in (share / "logs").glob("*.log"))
    assert "MCP server 'linear' connected" in logs and tokens.access_token not in logs


async def test_a_server_asking_for_authorization_without_auth_oauth_says_how(oauth_server: OAuthServer, tmp_path: Path) -> None:
    manager = McpManager([RemoteServerConfig("linear", oauth_server.url, "http")], settings=FAST, work_dir=tmp_path)
    try:
        (entry,) = (await manager.wait_ready()).servers
    finally:
        await manager.aclose()
    assert entry.status == "failed" and "401 Unauthorized" in (entry.error or "")
    assert '`"auth": "oauth"`' in (entry.error or "") and "run `kimi mcp auth linear`" in (entry.error or "")


def test_an_oauth_entry_for_a_server_that_lets_anyone_in_just_works(http_server: HttpServer, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{http_server.port}/mcp"
    add_server(url, "open")
    done = kimi("mcp", "auth", "open")
    assert done.returncode == 0, done.stderr
    assert "'open' did not ask for authorization: it works without signing in." in done.stdout
    assert not OAuthStore(url).has_tokens()

    async def connect() -> str:
        manager = McpManager([RemoteServerConfig("open", url, "http", auth="oauth")], settings=FAST, work_dir=tmp_path)
        try:
            return (await manager.wait_ready()).servers[0].status
        finally:
            await manager.aclose()

    assert asyncio.run(connect()) == "connected"  # no tokens, no sign-in needed
