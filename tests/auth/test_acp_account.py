"""`kimi acp` with a Kimi account: the gate, `authenticate`, a refused login mid-session, `logout`.

`kimi acp` served in this process (tests/support/inmemory.py), every message validated against the
ACP schema."""

from __future__ import annotations

import os
import time
import tomllib
from pathlib import Path

import pytest
import tomlkit
from acp import RequestError

from tests.auth.conftest import account_config, write_credentials
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import FakeLLMServer, text_reply
from tests.support.inmemory import serve_acp

ACCESS = "at-acp-reference-1a2b3c4d5e"
REFRESH = "rt-acp-reference-6f7a8b9c0d"


def env(share_dir: Path, oauth: FakeOAuthServer) -> dict[str, str]:
    return {"KIMI_SHARE_DIR": str(share_dir), "PATH": os.environ.get("PATH", ""), "KIMI_CODE_OAUTH_HOST": oauth.url, "KIMI_LOG_LEVEL": "DEBUG"}


def write_account_config(share_dir: Path, llm: FakeLLMServer) -> Path:
    path = share_dir / "config.toml"
    config = account_config(llm.base_url)
    config["session"] = {"generate_titles": False}  # these tests count the model requests
    path.write_text(tomlkit.dumps(config))
    return path


def assert_no_token_in_files(share_dir: Path, *secrets: str) -> None:
    for path in share_dir.rglob("*"):
        if path.is_file() and "credentials" not in path.parts:
            text = path.read_text(errors="replace")
            for secret in secrets:
                assert secret not in text, path


async def test_initialize_advertises_logout_and_the_account_login(share_dir: Path, oauth: FakeOAuthServer) -> None:
    async with serve_acp(env(share_dir, oauth)) as agent:
        init = await agent.initialize()
        assert init.agent_capabilities.auth.logout is not None
        login = next(m for m in init.auth_methods if m.id == "login")
        assert "Kimi account" in login.name


async def test_reference_login_is_used_and_logout_removes_it(tmp_path: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    config = write_account_config(share_dir, llm)
    credentials = write_credentials(share_dir, ACCESS, REFRESH)
    project = tmp_path / "project"
    project.mkdir()
    llm.enqueue(text_reply("from kimi"))
    async with serve_acp(env(share_dir, oauth)) as agent:
        await agent.initialize()
        assert await agent.conn.authenticate(method_id="login") is not None
        session = await agent.new_session(project)
        result = await agent.prompt(session.session_id, "hi")
        assert result.stop_reason == "end_turn"
        assert llm.requests[0].headers["authorization"] == f"Bearer {ACCESS}"

        assert await agent.conn._conn.send_request("logout", {}) == {}

        assert not credentials.exists()
        data = tomllib.loads(config.read_text())
        assert "managed:kimi-code" not in data.get("providers", {})
        assert data.get("models", {}) == {}
        assert "moonshot_search" not in data.get("services", {})
        with pytest.raises(RequestError) as info:  # the open session learns it on its next prompt
            await agent.prompt(session.session_id, "again")
        assert info.value.code == -32000
        assert info.value.data["authMethods"]
        with pytest.raises(RequestError) as info:
            await agent.new_session(project)
        assert info.value.code == -32000
        assert await agent.conn._conn.send_request("logout", {}) == {}  # twice: still fine
    assert len(llm.requests) == 1
    assert_no_token_in_files(share_dir, ACCESS, REFRESH)


async def test_no_login_is_auth_required_until_the_token_exists(tmp_path: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    write_account_config(share_dir, llm)
    project = tmp_path / "project"
    project.mkdir()
    async with serve_acp(env(share_dir, oauth)) as agent:
        await agent.initialize()
        for call in (lambda: agent.new_session(project), lambda: agent.conn.authenticate(method_id="login")):
            with pytest.raises(RequestError) as info:
                await call()
            assert info.value.code == -32000
            assert "not signed in" in str(info.value) and "kimi login" in str(info.value)
            assert [m["id"] for m in info.value.data["authMethods"]][0] == "login"
        write_credentials(share_dir, ACCESS, REFRESH)  # what `kimi login` in the IDE's terminal leaves
        assert await agent.conn.authenticate(method_id="login") is not None
        await agent.new_session(project)


async def test_revoked_refresh_token_mid_session_is_auth_required(tmp_path: Path, share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    write_account_config(share_dir, llm)
    write_credentials(share_dir, ACCESS, REFRESH, expires_at=time.time() - 30)  # expired; the server never issued REFRESH
    project = tmp_path / "project"
    project.mkdir()
    async with serve_acp(env(share_dir, oauth)) as agent:
        await agent.initialize()
        session = await agent.new_session(project)  # an expired token with a refresh token passes the gate
        for _ in range(2):
            with pytest.raises(RequestError) as info:
                await agent.prompt(session.session_id, "hi")
            assert info.value.code == -32000
            assert "sign in again" in str(info.value)
            assert info.value.data["authMethods"]
    assert len(oauth.refresh_calls) == 1
    assert llm.requests == []
