"""FetchURL with `[services.moonshot_fetch]`: the service's request (body and headers), its answer
returned as is, and the local GET when the service fails (HTTP error, timeout, unreachable, no
key, empty answer), with the failure logged and the key redacted everywhere."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kimi_acp.config import ServiceConfig, Services
from kimi_acp.tools import fetch
from kimi_acp.tools.base import ToolEnv
from kimi_acp.tools.fetch import FetchURL
from tests.fakes.web_server import FakeWebServer
from tests.fakes.web_services import FETCHED_MARKDOWN, FakeWebServices, Reply
from tests.tools.conftest import Call, InSession

KEY = "sk-fetch-secret-9876"


@pytest.fixture
def services() -> Iterator[FakeWebServices]:
    with FakeWebServices() as fake:
        yield fake


@pytest.fixture
def web() -> Iterator[FakeWebServer]:
    with FakeWebServer(huge_bytes=1024) as server:
        yield server


def via(base_url: str, **extra: Any) -> InSession:
    config = Services(moonshot_fetch=ServiceConfig(base_url=base_url, **{"api_key": KEY, **extra}))
    return InSession(FetchURL(), ToolEnv(services=config))


async def test_the_service_is_asked_first(call: Call, services: FakeWebServices, web: FakeWebServer) -> None:
    tool = via(f"{services.url}/fetch", custom_headers={"X-Team": "blue"})
    result = await call(tool, url=f"{web.url}/page")
    assert not result.is_error
    assert result.output == FETCHED_MARKDOWN
    assert result.message == "The returned content is the main content extracted from the page."
    (request,) = services.of("/fetch")
    assert request.body == {"url": f"{web.url}/page"}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["accept"] == "text/markdown"
    assert request.headers["x-msh-tool-call-id"] == "call-1"
    assert request.headers["x-team"] == "blue"
    assert web.paths == []  # no local GET


@pytest.mark.parametrize("status", [404, 500, 503])
async def test_an_http_error_falls_back_to_the_local_fetch(
    call: Call, services: FakeWebServices, web: FakeWebServer, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    services.replies["/fetch"] = Reply(status, f"upstream broke; key {KEY}".encode(), "text/plain")
    with caplog.at_level(logging.WARNING, logger="kimi_acp.tools.fetch"):
        result = await call(via(f"{services.url}/fetch"), url=f"{web.url}/page")
    assert not result.is_error and "# Main heading" in result.output  # the local Markdown
    assert web.paths == ["/page"]
    assert f"HTTP {status}" in caplog.text and KEY not in caplog.text and "[redacted]" in caplog.text


async def test_a_timeout_falls_back(
    call: Call, services: FakeWebServices, web: FakeWebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "SERVICE_TIMEOUT", httpx.Timeout(0.3))
    services.replies["/fetch"] = Reply(200, b"too late", "text/markdown", delay=3.0)
    result = await call(via(f"{services.url}/fetch"), url=f"{web.url}/text")
    assert not result.is_error and result.output.startswith("plain text")


async def test_an_unreachable_service_falls_back(call: Call, web: FakeWebServer) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = await call(via(f"http://127.0.0.1:{port}/fetch"), url=f"{web.url}/text")
    assert not result.is_error and result.output.startswith("plain text")


async def test_no_key_or_an_empty_answer_falls_back(call: Call, services: FakeWebServices, web: FakeWebServer) -> None:
    result = await call(via(f"{services.url}/fetch", api_key=""), url=f"{web.url}/text")
    assert not result.is_error and result.output.startswith("plain text")
    assert services.requests == []  # nothing to authenticate with: not even asked
    services.replies["/fetch"] = Reply(200, b"  \n", "text/markdown")
    result = await call(via(f"{services.url}/fetch"), url=f"{web.url}/text")
    assert not result.is_error and result.output.startswith("plain text")


async def test_when_both_fail_the_error_says_so_without_the_key(
    call: Call, services: FakeWebServices, web: FakeWebServer
) -> None:
    services.replies["/fetch"] = Reply(502, f'{{"detail": "{KEY} rejected"}}'.encode())
    result = await call(via(f"{services.url}/fetch"), url=f"{web.url}/missing")
    assert result.is_error
    assert "Status: 404" in result.message and "The fetch service failed first: HTTP 502" in result.message
    assert KEY not in json.dumps(result.model_dump(mode="json"))


async def test_without_the_service_only_the_local_fetch_runs(call: Call, web: FakeWebServer) -> None:
    tool = InSession(FetchURL(), ToolEnv(services=Services()))
    result = await call(tool, url=f"{web.url}/text")
    assert not result.is_error and web.paths == ["/text"]
