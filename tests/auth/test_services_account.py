"""`[services.*]` with `oauth`: SearchWeb/FetchURL calls carry the account's (refreshed) token."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kimi_acp.config import ServiceConfig
from kimi_acp.tools import web_service
from tests.auth.conftest import write_credentials
from tests.fakes.oauth_server import FakeOAuthServer


@pytest.fixture(autouse=True)
def account_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_service, "_oauth_token_source", None)  # the default: the Kimi account


async def test_service_gets_the_account_token_and_device_headers(share_dir: Path, oauth: FakeOAuthServer) -> None:
    refresh = oauth.add_refresh_token()
    write_credentials(share_dir, "at-old-svc-1234", refresh, expires_at=time.time() - 1)
    service = ServiceConfig(base_url="https://s.example/search", api_key="", oauth={"storage": "file", "key": "oauth/kimi-code"})

    creds = await web_service.service_headers(service, "tc-1")

    assert creds is not None
    assert creds.headers["Authorization"] == f"Bearer {oauth.issued_access[0]}"  # refreshed first
    assert creds.headers["X-Msh-Platform"] == "kimi_cli"
    assert creds.redact(oauth.issued_access[0]) == "[redacted]"


async def test_service_without_a_login_falls_back_to_its_key(share_dir: Path, oauth: FakeOAuthServer) -> None:
    service = ServiceConfig(base_url="https://s.example/fetch", api_key="sk-svc-fallback", oauth={"key": "oauth/kimi-code"})
    creds = await web_service.service_headers(service, "tc-2")
    assert creds is not None and creds.headers["Authorization"] == "Bearer sk-svc-fallback"
    service = ServiceConfig(base_url="https://s.example/fetch", oauth={"key": "oauth/kimi-code"})
    assert await web_service.service_headers(service, "tc-3") is None  # "not configured", not a crash
