"""`vertexai`: the Gemini format at Vertex AI's paths, with a service-account key exchanged for an
access token at a loopback token endpoint (a key generated here; the endpoint checks the JWT with
its public key), refreshed before expiry, and never logged."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from kimi_acp.config import Config, resolve_model
from kimi_acp.llm import create_provider
from kimi_acp.llm.errors import APIStatusError, ChatProviderError, is_retryable
from kimi_acp.llm.types import ChatStream, Message, StreamPart
from kimi_acp.llm.vertexai import REFRESH_MARGIN_S, GoogleCredentials, VertexAIProvider, sign_jwt
from kimi_acp.util import secrets
from kimi_acp.wire.types import TextPart
from tests.fakes.gemini_server import FakeGeminiServer, GeminiScript, service_account, text_stream

HISTORY = [Message(role="user", content="hi")]


@pytest.fixture(autouse=True)
def _no_ambient_google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials or project from the machine running the tests."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(vertex=True) as fake:
        yield fake
        assert fake.problems == []  # every body validated against the SDK, as Vertex AI takes it


class Clock:
    """Real time shifted back an hour, so tokens issued now may be fast-forwarded to near expiry
    while every JWT stays valid for the real token endpoint's checks."""

    def __init__(self) -> None:
        self.offset = -3400.0

    def __call__(self) -> float:
        return time.time() + self.offset


def resolved(server: FakeGeminiServer, *, api_key: str = "", env: dict[str, str] | None = None, base_url: str | None = None, model: str = "gemini-2.5-pro") -> Any:
    config = Config.model_validate(
        {
            "default_model": "v",
            "models": {"v": {"provider": "vertex", "model": model, "max_context_size": 1_000_000}},
            "providers": {
                "vertex": {
                    "type": "vertexai",
                    "base_url": base_url if base_url is not None else server.url,
                    "api_key": api_key,
                    "env": env or {},
                    "custom_headers": {"X-Team": "agents"},
                }
            },
        }
    )
    return resolve_model(config)


def with_key(server: FakeGeminiServer, tmp_path: Path, **env: str) -> dict[str, str]:
    path, public_key = service_account(tmp_path, server.token_uri)
    server.public_key = public_key
    return {"GOOGLE_APPLICATION_CREDENTIALS": str(path), **env}


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


async def test_a_service_account_key_is_exchanged_for_a_token(server: FakeGeminiServer, tmp_path: Path) -> None:
    env = with_key(server, tmp_path, GOOGLE_CLOUD_PROJECT="proj-1", GOOGLE_CLOUD_LOCATION="europe-west4")
    provider = create_provider(resolved(server, env=env), thinking=True)
    assert isinstance(provider, VertexAIProvider) and provider.provider_type == "vertexai"
    server.enqueue(GeminiScript().thought("hm").text("Hello").stream())
    assert [p for p in await collect(provider.stream("sys", [], HISTORY)) if isinstance(p, TextPart)] == [TextPart(text="Hello")]
    grant, request = server.requests
    assert grant.path == "/token" and "assertion=" in grant.raw_body.decode()
    (claims,) = server.assertions  # the fake verified the RS256 signature with the key's public half
    assert claims["iss"] == "agent@fake-project.iam.gserviceaccount.com" and claims["aud"] == server.token_uri
    assert claims["exp"] - claims["iat"] == 3600
    assert request.path == (
        "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert request.headers["authorization"] == f"Bearer {server.issued[0]}"
    assert request.headers["x-team"] == "agents" and "x-goog-api-key" not in request.headers
    await provider.aclose()


async def test_the_token_is_refreshed_before_it_expires(server: FakeGeminiServer, tmp_path: Path) -> None:
    provider = create_provider(resolved(server, env=with_key(server, tmp_path)))
    clock = Clock()
    provider._token_source._clock = clock  # type: ignore[attr-defined]
    server.enqueue(text_stream("one"), text_stream("two"), text_stream("three"))
    await collect(provider.stream("", [], HISTORY))
    await collect(provider.stream("", [], HISTORY))  # well within the hour: the same token
    assert len(server.issued) == 1
    clock.offset += 3600 - REFRESH_MARGIN_S + 1  # less than five minutes left
    await collect(provider.stream("", [], HISTORY))
    assert len(server.issued) == 2
    bearers = [r.headers["authorization"] for r in server.requests if r.path != "/token"]
    assert bearers == [f"Bearer {server.issued[0]}"] * 2 + [f"Bearer {server.issued[1]}"]
    # the project came from the key file; the location defaults to global
    assert "/projects/fake-project/locations/global/" in server.requests[-1].path
    await provider.aclose()


async def test_a_refused_token_is_refreshed_once(server: FakeGeminiServer, tmp_path: Path) -> None:
    provider = create_provider(resolved(server, env=with_key(server, tmp_path)))
    server.enqueue(text_stream("one"), text_stream("two"))
    await collect(provider.stream("", [], HISTORY))
    server.issued.append("ya29.revoked-elsewhere")  # the provider's token is no longer the current one
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="two")]
    assert len(server.issued) == 3
    await provider.aclose()


async def test_the_token_is_never_logged(server: FakeGeminiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provider = create_provider(resolved(server, env=with_key(server, tmp_path)))
    server.enqueue(text_stream("ok"), GeminiScript().blocked_prompt())
    await collect(provider.stream("", [], HISTORY))
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    token = server.issued[0]
    assert secrets.holds_secret(f"x {token} y")  # registered: every log line and output is scrubbed of it
    assert secrets.redact(f"Bearer {token}") == "Bearer [redacted]"
    texts = [record.getMessage() for record in caplog.records] + [str(info.value), repr(provider), repr(provider._token_source)]
    assert any("Google access token" in t for t in texts)
    assert not any(token in t for t in texts)
    key = json.loads(Path(provider._token_source.source).read_text())["private_key"]  # type: ignore[attr-defined]
    assert secrets.holds_secret(key)
    await provider.aclose()


async def test_a_refused_key_says_what_to_fix(server: FakeGeminiServer, tmp_path: Path) -> None:
    server.refuse_grants = True
    provider = create_provider(resolved(server, env=with_key(server, tmp_path)))
    with pytest.raises(APIStatusError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert info.value.status_code == 401 and not is_retryable(info.value)
    assert "invalid_grant" in str(info.value) and "GOOGLE_APPLICATION_CREDENTIALS" in str(info.value)
    await provider.aclose()


async def test_an_unreachable_token_endpoint_is_retryable(server: FakeGeminiServer, tmp_path: Path) -> None:
    path, _ = service_account(tmp_path, "http://127.0.0.1:9/token")
    provider = create_provider(resolved(server, env={"GOOGLE_APPLICATION_CREDENTIALS": str(path)}))
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert is_retryable(info.value) and "token endpoint" in str(info.value)
    await provider.aclose()


async def test_a_gcloud_user_login_is_refreshed(server: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    (gcloud / "application_default_credentials.json").write_text(
        json.dumps(
            {
                "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
                "refresh_token": "1//0g-fake-refresh-token", "quota_project_id": "quota-proj", "token_uri": server.token_uri,
            }
        )
    )
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(gcloud))
    server.user_refresh_token = "1//0g-fake-refresh-token"
    provider = create_provider(resolved(server))
    server.enqueue(text_stream("ok"))
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="ok")]
    request = server.requests[-1]
    assert request.headers["authorization"] == f"Bearer {server.issued[0]}"
    assert request.headers["x-goog-user-project"] == "quota-proj"
    assert "/projects/quota-proj/" in request.path
    await provider.aclose()


async def test_an_api_key_uses_express_mode(server: FakeGeminiServer) -> None:
    server.api_keys = {"AQ.vertex-express-key-0123"}
    server.vertex = True
    provider = create_provider(resolved(server, api_key="AQ.vertex-express-key-0123", env={"GOOGLE_CLOUD_PROJECT": "ignored"}))
    server.enqueue(text_stream("ok"))
    await collect(provider.stream("", [], HISTORY))
    (request,) = server.requests
    assert request.path == "/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "AQ.vertex-express-key-0123"
    await provider.aclose()


def test_no_credentials_says_exactly_what_to_set(server: FakeGeminiServer) -> None:
    with pytest.raises(ChatProviderError) as info:
        create_provider(resolved(server, env={"GOOGLE_CLOUD_PROJECT": "p"}))
    message = str(info.value)
    assert "[providers.vertex]" in message and "api_key" in message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message and "gcloud auth application-default login" in message


def test_a_missing_key_file_is_named(server: FakeGeminiServer, tmp_path: Path) -> None:
    with pytest.raises(ChatProviderError, match="does not exist"):
        create_provider(resolved(server, env={"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "nope.json")}))


def test_location_from_a_regional_base_url(server: FakeGeminiServer, tmp_path: Path) -> None:
    env = with_key(server, tmp_path, GOOGLE_CLOUD_PROJECT="p")
    provider = create_provider(resolved(server, env=env, base_url="https://us-central1-aiplatform.googleapis.com"))
    assert provider.url == (  # type: ignore[attr-defined]
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
        "publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )


def test_sign_jwt_is_standard_rs256(tmp_path: Path) -> None:
    path, public_key = service_account(tmp_path, "https://oauth2.googleapis.com/token")
    info = json.loads(path.read_text())
    token = sign_jwt({"iss": "a", "aud": "b", "iat": 1, "exp": 2}, info["private_key"], "kid-1")
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "typ": "JWT", "kid": "kid-1"}
    assert jwt.decode(token, public_key, algorithms=["RS256"], audience="b", options={"verify_exp": False})["iss"] == "a"


def test_unusable_credential_types_are_named() -> None:
    with pytest.raises(ChatProviderError, match="external_account"):
        GoogleCredentials({"type": "external_account"}, source="x.json")


async def test_sessions_on_one_key_share_its_token(server: FakeGeminiServer, tmp_path: Path) -> None:
    env = with_key(server, tmp_path)
    first, second = create_provider(resolved(server, env=env)), create_provider(resolved(server, env=env))
    server.enqueue(text_stream("one"), text_stream("two"))
    await collect(first.stream("", [], HISTORY))
    await collect(second.stream("", [], HISTORY))
    assert len(server.issued) == 1  # one exchange for both
    await first.aclose()
    await second.aclose()
