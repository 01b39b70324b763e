"""A provider configured with `oauth` against loopback OAuth and model servers, in-process."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from kimi_acp.auth.source import needs_refresh, refresh_threshold
from kimi_acp.auth.tokens import OAuthToken, credentials_path
from kimi_acp.config import Config, resolve_model
from kimi_acp.errors import SignInRequired
from kimi_acp.llm import create_provider
from kimi_acp.llm.errors import APIStatusError
from kimi_acp.llm.types import Message
from tests.auth.conftest import account_config, write_credentials
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import ErrorReply, FakeLLMServer, text_reply

HISTORY = [Message(role="user", content="hi")]
ACCESS = "at-reference-7f3c9e1d2b"
REFRESH = "rt-reference-0a9b8c7d6e"


def provider_for(base_url: str, **kwargs):  # type: ignore[no-untyped-def]
    resolved = resolve_model(Config.model_validate(account_config(base_url, **kwargs)))
    assert resolved is not None
    return create_provider(resolved)


async def run(provider) -> str:  # type: ignore[no-untyped-def]
    try:
        parts = [p async for p in provider.stream("sys", [], HISTORY)]
    finally:
        await provider.aclose()
    return "".join(getattr(p, "text", "") for p in parts)


def stored(share_dir: Path) -> dict:
    return json.loads((share_dir / "credentials" / "kimi-code.json").read_text())


async def test_reference_credentials_file_is_used_as_is(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    path = write_credentials(share_dir, ACCESS, REFRESH)
    before = path.read_bytes()
    llm.enqueue(text_reply("hello"))

    assert await run(provider_for(llm.base_url)) == "hello"

    headers = llm.requests[0].headers
    assert headers["authorization"] == f"Bearer {ACCESS}"
    assert headers["x-msh-platform"] == "kimi_cli"
    assert len(headers["x-msh-device-id"]) == 32
    for name in ("x-msh-version", "x-msh-device-name", "x-msh-device-model", "x-msh-os-version"):
        assert headers[name]
    assert oauth.requests == []  # a fresh token: no refresh
    assert path.read_bytes() == before
    device_id = share_dir / "device_id"
    assert stat.S_IMODE(device_id.stat().st_mode) == 0o600
    assert device_id.read_text() == headers["x-msh-device-id"]


async def test_expired_token_is_refreshed_and_saved(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    refresh = oauth.add_refresh_token(REFRESH)
    write_credentials(share_dir, ACCESS, refresh, expires_at=time.time() - 60)
    llm.enqueue(text_reply("ok"))

    assert await run(provider_for(llm.base_url)) == "ok"

    assert oauth.refresh_calls == [(REFRESH, "ok")]
    new_access = oauth.issued_access[-1]
    assert llm.requests[0].headers["authorization"] == f"Bearer {new_access}"
    saved = stored(share_dir)
    assert saved["access_token"] == new_access
    assert saved["refresh_token"] != REFRESH  # rotated
    assert saved["expires_at"] > time.time() + 800
    assert set(saved) == {"access_token", "refresh_token", "expires_at", "scope", "token_type", "expires_in"}
    path = credentials_path("oauth/kimi-code")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [r.headers.get("x-msh-platform") for r in oauth.requests] == ["kimi_cli"]
    assert oauth.requests[0].form["grant_type"] == "refresh_token"
    assert oauth.requests[0].form["client_id"] == "17e5f671-d194-4dfb-9706-5516cb48c098"


async def test_token_near_expiry_is_refreshed_before_the_request(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    oauth.add_refresh_token(REFRESH)
    write_credentials(share_dir, ACCESS, REFRESH, expires_in=900, expires_at=time.time() + 200)  # under 450 s left
    llm.enqueue(text_reply("ok"))

    await run(provider_for(llm.base_url))

    assert len(oauth.refresh_calls) == 1
    assert llm.requests[0].headers["authorization"] != f"Bearer {ACCESS}"


async def test_401_refreshes_once_and_retries_once(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    oauth.add_refresh_token(REFRESH)
    write_credentials(share_dir, ACCESS, REFRESH)  # looks fresh, but the server revoked the access token
    llm.enqueue(ErrorReply(401, {"error": {"message": "invalid token"}}), text_reply("after retry"))

    assert await run(provider_for(llm.base_url)) == "after retry"

    assert [r.headers["authorization"] for r in llm.requests] == [f"Bearer {ACCESS}", f"Bearer {oauth.issued_access[-1]}"]
    assert oauth.refresh_calls == [(REFRESH, "ok")]


async def test_401_after_the_retry_is_a_sign_in_error_not_a_loop(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    oauth.add_refresh_token(REFRESH)
    write_credentials(share_dir, ACCESS, REFRESH)
    llm.enqueue(ErrorReply(401, {"error": "no"}), ErrorReply(401, {"error": "no"}), text_reply("never"))

    with pytest.raises(SignInRequired, match="kimi login"):
        await run(provider_for(llm.base_url))

    assert len(llm.requests) == 2
    assert len(oauth.refresh_calls) == 1


async def test_revoked_refresh_token_gives_a_clear_error_once(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    write_credentials(share_dir, ACCESS, "rt-revoked-1234567", expires_at=time.time() - 10)  # unknown to the server

    for _ in range(2):
        with pytest.raises(SignInRequired) as info:
            await run(provider_for(llm.base_url))
        assert "Run `kimi login` to sign in again." in str(info.value)
        assert "rt-revoked" not in str(info.value) and ACCESS not in str(info.value)
        assert isinstance(info.value, APIStatusError) and info.value.status_code == 401

    assert len(oauth.refresh_calls) == 1  # the refused token is never sent again
    assert llm.requests == []
    assert stored(share_dir)["refresh_token"] == "rt-revoked-1234567"  # not deleted: a new login replaces it


async def test_no_login_file_is_a_sign_in_error(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    with pytest.raises(SignInRequired, match="not signed in"):
        await run(provider_for(llm.base_url))
    assert llm.requests == []


async def test_api_key_is_the_fallback_when_there_is_no_login(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    llm.enqueue(text_reply("k"), text_reply("t"))
    await run(provider_for(llm.base_url, api_key="sk-fallback-key-1234"))
    assert llm.requests[0].headers["authorization"] == "Bearer sk-fallback-key-1234"

    write_credentials(share_dir, ACCESS, REFRESH)  # a login takes precedence over the key
    await run(provider_for(llm.base_url, api_key="sk-fallback-key-1234"))
    assert llm.requests[1].headers["authorization"] == f"Bearer {ACCESS}"


async def test_unreachable_oauth_service_keeps_a_still_valid_token(share_dir: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("KIMI_CODE_OAUTH_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setattr("kimi_acp.auth.oauth_client._sleep", lambda s: None)
    write_credentials(share_dir, ACCESS, REFRESH, expires_in=900, expires_at=time.time() + 100)
    llm.enqueue(text_reply("still"))

    assert await run(provider_for(llm.base_url)) == "still"
    assert llm.requests[0].headers["authorization"] == f"Bearer {ACCESS}"


def test_refresh_threshold_follows_the_reference() -> None:
    assert refresh_threshold(0) == 300
    assert refresh_threshold(300) == 300
    assert refresh_threshold(3600) == 1800
    now = 1_000_000.0
    assert needs_refresh(OAuthToken("a", "r", expires_at=now + 299, expires_in=0), now)
    assert not needs_refresh(OAuthToken("a", "r", expires_at=now + 301, expires_in=0), now)
    assert not needs_refresh(OAuthToken("a", "r", expires_at=0), now)  # unknown expiry: only on 401


def test_token_repr_hides_secrets() -> None:
    token = OAuthToken("at-secret-value", "rt-secret-value", expires_at=1.0)
    assert "secret" not in repr(token)


async def test_anthropic_type_with_oauth_sends_the_token_as_its_key(share_dir: Path, oauth: FakeOAuthServer, llm: FakeLLMServer) -> None:
    from tests.fakes.openai_server import anthropic_text_reply

    oauth.add_refresh_token(REFRESH)
    write_credentials(share_dir, ACCESS, REFRESH)
    llm.enqueue(ErrorReply(401, {"error": {"message": "expired"}}), anthropic_text_reply("claude-ish"))
    data = account_config(llm.url)
    data["providers"]["managed:kimi-code"]["type"] = "anthropic"
    resolved = resolve_model(Config.model_validate(data))
    assert resolved is not None

    assert await run(create_provider(resolved)) == "claude-ish"

    assert [r.headers["x-api-key"] for r in llm.requests] == [ACCESS, oauth.issued_access[-1]]
    assert oauth.refresh_calls == [(REFRESH, "ok")]
