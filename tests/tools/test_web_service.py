"""The headers of a call to one of Kimi's web services, built in one place, and redaction."""

from __future__ import annotations

import pytest

from kimi_acp.config import OAuthRef, ServiceConfig
from kimi_acp.tools import web_service
from kimi_acp.tools.web_service import ServiceAuth, redact, service_headers


@pytest.fixture(autouse=True)
def no_token_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_service, "_oauth_token_source", None)


async def test_headers_from_the_api_key() -> None:
    service = ServiceConfig(base_url="https://s.example/search", api_key="sk-1234",
                            custom_headers={"X-Api-Key": "extra-secret", "X-Team": "blue"})
    creds = await service_headers(service, "tc-9", accept="text/markdown")
    assert creds is not None
    assert creds.headers["Authorization"] == "Bearer sk-1234"
    assert creds.headers["X-Msh-Tool-Call-Id"] == "tc-9"
    assert creds.headers["Accept"] == "text/markdown"
    assert creds.headers["User-Agent"].startswith("kimi-acp/")
    assert creds.headers["X-Team"] == "blue"
    # the key and credential-like custom headers are redacted; ordinary values are not
    assert creds.redact("sk-1234 extra-secret blue") == "[redacted] [redacted] blue"


async def test_no_credential_is_none() -> None:
    assert await service_headers(ServiceConfig(base_url="https://s.example"), "tc") is None


async def test_oauth_token_wins_when_connected_and_the_key_is_the_fallback() -> None:
    service = ServiceConfig(base_url="https://s.example", api_key="sk-fallback", oauth={"key": "oauth/kimi-code"})
    creds = await service_headers(service, "tc")
    assert creds is not None and creds.headers["Authorization"] == "Bearer sk-fallback"  # nothing connected yet

    async def signed_out(ref: OAuthRef) -> ServiceAuth | None:
        return None

    web_service.set_oauth_token_source(signed_out)
    creds = await service_headers(service, "tc")
    assert creds is not None and creds.headers["Authorization"] == "Bearer sk-fallback"

    async def signed_in(ref: OAuthRef) -> ServiceAuth | None:
        return ServiceAuth("acct-token", {"X-Msh-Platform": "kimi_cli"})

    web_service.set_oauth_token_source(signed_in)
    creds = await service_headers(service, "tc")
    assert creds is not None
    assert creds.headers["Authorization"] == "Bearer acct-token" and creds.headers["X-Msh-Platform"] == "kimi_cli"
    assert creds.redact("acct-token and sk-fallback") == "[redacted] and [redacted]"


def test_redact_leaves_short_values_alone() -> None:
    assert redact("a b abc", ["a", "abc"]) == "a b abc"
    assert redact("token=abcd1234", ["abcd1234"]) == "token=[redacted]"
