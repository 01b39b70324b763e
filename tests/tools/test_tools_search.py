"""SearchWeb against a loopback stand-in for Kimi's search service: the request (body and
headers), the rendering of results, the errors (HTTP status, bad JSON, a wrong shape, a timeout,
an unreachable service, no credential), offered only when configured, and the key never shown."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kimi_acp.config import ServiceConfig, Services
from kimi_acp.core.toolset import FixedHost, Toolset
from kimi_acp.tools import search, web_service
from kimi_acp.tools.base import ToolEnv
from kimi_acp.tools.search import SearchWeb
from kimi_acp.wire.types import BriefDisplayBlock
from tests.fakes.web_services import FakeWebServices, Reply, search_reply
from tests.tools.conftest import Call, FakeApprover, InSession

KEY = "sk-search-secret-1234"


@pytest.fixture
def services() -> Iterator[FakeWebServices]:
    with FakeWebServices() as fake:
        yield fake


def configured(base_url: str, **extra: Any) -> InSession:
    config = Services(moonshot_search=ServiceConfig(base_url=base_url, api_key=KEY, **extra))
    return InSession(SearchWeb(), ToolEnv(services=config))


def brief(result: Any) -> str:
    return next(b.text for b in result.display if isinstance(b, BriefDisplayBlock))


async def test_request_shape_and_headers(call: Call, services: FakeWebServices, approver: FakeApprover) -> None:
    tool = configured(f"{services.url}/search", custom_headers={"X-Team": "blue", "User-Agent": "custom/1"})
    result = await call(tool, query="install widgets", limit=3, include_content=True)
    assert not result.is_error, result.message
    (request,) = services.of("/search")
    assert request.body == {"text_query": "install widgets", "limit": 3, "enable_page_crawling": True,
                            "timeout_seconds": 30}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-msh-tool-call-id"] == "call-1"  # the ctx fixture's tool call id
    assert request.headers["x-team"] == "blue"
    assert request.headers["user-agent"] == "custom/1"  # custom headers win, as in Kimi
    (asked,) = approver.requests  # unlike Kimi, the query leaving the machine asks, per host
    assert asked.scope.values == (services.url.split("//")[1],) and "widgets" in asked.description


async def test_defaults_and_our_user_agent(call: Call, services: FakeWebServices) -> None:
    await call(configured(f"{services.url}/search"), query="widgets")
    (request,) = services.of("/search")
    assert request.body["limit"] == 5 and request.body["enable_page_crawling"] is False
    assert request.headers["user-agent"].startswith("kimi-acp/")


async def test_results_are_rendered_as_kimi_does(call: Call, services: FakeWebServices) -> None:
    result = await call(configured(f"{services.url}/search"), query="widgets")
    assert result.output == (
        "Title: Installing widgets\nDate: 2025-01-02\nURL: https://docs.example.com/widgets\n"
        "Summary: How to install widgets on any platform.\n\n"
        "---\n\n"
        "Title: Widgets 2.0 released\nDate: \nURL: https://blog.example.com/widgets-2\n"
        "Summary: Faster and smaller widgets.\n\n"
        "Widgets 2.0 is out. It is faster.\n\n"
    )
    assert result.message == "Found 2 results."


async def test_no_results_says_so(call: Call, services: FakeWebServices) -> None:
    services.replies["/search"] = search_reply([])
    result = await call(configured(f"{services.url}/search"), query="zzzz")
    assert not result.is_error and result.output == ""
    assert "No results found" in result.message


async def test_huge_content_is_capped(call: Call, services: FakeWebServices) -> None:
    page = {"title": "Big", "url": "https://x.example", "snippet": "s", "content": "word " * 40_000}
    services.replies["/search"] = search_reply([page])
    result = await call(configured(f"{services.url}/search"), query="big", include_content=True)
    assert not result.is_error
    assert len(result.output) <= 50_000 + 20 and "truncated" in result.message


@pytest.mark.parametrize("status", [404, 500])
async def test_http_errors_name_the_status(call: Call, services: FakeWebServices, status: int) -> None:
    services.replies["/search"] = Reply(status, b'{"error": "quota exceeded"}')
    result = await call(configured(f"{services.url}/search"), query="widgets")
    assert result.is_error
    assert f"Failed to search. Status: {status}." in result.message and "quota exceeded" in result.message
    assert brief(result) == "Failed to search"


async def test_an_error_body_echoing_the_key_is_redacted(
    call: Call, services: FakeWebServices, caplog: pytest.LogCaptureFixture
) -> None:
    services.replies["/search"] = Reply(401, f'{{"error": "bad key {KEY}"}}'.encode())
    with caplog.at_level(logging.DEBUG):
        result = await call(configured(f"{services.url}/search"), query="widgets")
    assert result.is_error and "Status: 401" in result.message
    assert KEY not in json.dumps(result.model_dump(mode="json"))
    assert "[redacted]" in result.message
    assert KEY not in caplog.text


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>not json</html>", "not JSON"),
        (b'{"results": []}', "search_results"),
        (b'{"search_results": [{"title": "no url"}]}', "url"),
    ],
)
async def test_unreadable_answers(call: Call, services: FakeWebServices, body: bytes, reason: str) -> None:
    services.replies["/search"] = Reply(200, body)
    result = await call(configured(f"{services.url}/search"), query="widgets")
    assert result.is_error
    assert result.message.startswith("Failed to parse search results:") and reason in result.message
    assert brief(result) == "Failed to parse search results"


async def test_timeout_is_a_clear_error(call: Call, services: FakeWebServices, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "TIMEOUT", httpx.Timeout(0.3))
    services.replies["/search"] = Reply(200, b"{}", delay=3.0)
    result = await call(configured(f"{services.url}/search"), query="widgets")
    assert result.is_error and "timed out" in result.message
    assert brief(result) == "Search timed out"


async def test_unreachable_service(call: Call) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = await call(configured(f"http://127.0.0.1:{port}/search"), query="widgets")
    assert result.is_error and result.message.startswith("Failed to search due to network error:")
    assert brief(result) == "Network error"


async def test_not_configured_or_no_key(call: Call, services: FakeWebServices) -> None:
    result = await call(SearchWeb(), query="widgets")
    assert result.is_error and result.message.startswith("Search service is not configured.")
    keyless = Services(moonshot_search=ServiceConfig(base_url=f"{services.url}/search"))
    tool = InSession(SearchWeb(), ToolEnv(services=keyless))
    result = await call(tool, query="widgets")
    assert result.is_error and brief(result) == "Search service not configured"
    assert services.requests == []


async def test_empty_query_is_refused(call: Call, services: FakeWebServices) -> None:
    result = await call(configured(f"{services.url}/search"), query="  ")
    assert result.is_error and "empty" in result.message
    assert services.requests == []


def test_offered_only_when_the_service_is_configured() -> None:
    session = FixedHost()
    toolset = Toolset([SearchWeb()], session)
    assert [s.name for s in toolset.specs()] == []
    session.env = ToolEnv(services=Services())
    assert [s.name for s in toolset.specs()] == []
    session.env = ToolEnv(services=Services(moonshot_search=ServiceConfig(base_url="https://search.example/api")))
    assert [s.name for s in toolset.specs()] == ["SearchWeb"]
    params = toolset.specs()[0].parameters
    assert params["required"] == ["query"]
    assert params["properties"]["limit"]["minimum"] == 1 and params["properties"]["limit"]["maximum"] == 20


async def test_limit_out_of_range_is_rejected(call: Call, services: FakeWebServices) -> None:
    with pytest.raises(ValueError):
        await call(configured(f"{services.url}/search"), query="x", limit=21)


async def test_oauth_token_source_plugs_in(
    call: Call, services: FakeWebServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kimi_acp.config import OAuthRef

    seen: list[OAuthRef] = []

    async def source(ref: OAuthRef) -> web_service.ServiceAuth | None:
        seen.append(ref)
        return web_service.ServiceAuth("account-token-5678", {"X-Msh-Device-Id": "dev-1"})

    monkeypatch.setattr(web_service, "_oauth_token_source", None)
    web_service.set_oauth_token_source(source)
    tool = configured(f"{services.url}/search", oauth={"key": "oauth/kimi-code"})
    result = await call(tool, query="widgets")
    assert not result.is_error
    (request,) = services.of("/search")
    assert request.headers["authorization"] == "Bearer account-token-5678"
    assert request.headers["x-msh-device-id"] == "dev-1"
    assert seen and seen[0].key == "oauth/kimi-code"
