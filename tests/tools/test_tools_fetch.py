"""FetchURL against a loopback HTTP server: HTML to Markdown, text passed through, redirects
(bounded, and only on the approved host), HTTP errors with their status, the body cap, binary refused, bad URLs."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from kimi_acp.tools import fetch
from kimi_acp.tools.fetch import FetchURL
from tests.fakes.web_server import FakeWebServer
from tests.tools.conftest import Call, FakeApprover


@pytest.fixture
def web() -> Iterator[FakeWebServer]:
    with FakeWebServer(huge_bytes=3 * 1024 * 1024) as server:
        yield server


async def test_html_becomes_markdown_without_scripts_or_nav(call: Call, web: FakeWebServer, approver: FakeApprover) -> None:
    result = await call(FetchURL(), url=f"{web.url}/page")
    assert not result.is_error, result.message
    out = result.output
    assert isinstance(out, str)
    assert out.startswith("# Fake Page\n")
    assert "# Main heading" in out and "Hello **world**" in out and "[link](https://example.com/x)" in out
    assert "- first" in out and "- second" in out
    for gone in ("do-not-show", "color:red", "Nav link", "footer text"):
        assert gone not in out
    assert result.message == "The returned content is the main text content extracted from the page."
    (asked,) = approver.requests  # unlike Kimi, FetchURL asks per host (the agent's own egress)
    assert asked.action == "fetch from the network" and asked.scope.values == (web.url.split("//")[1],)
    assert asked.description == f"Fetch `{web.url}/page`"


async def test_plain_text_passes_through(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/text")
    assert not result.is_error
    assert result.output == "plain text ünïcode\nline 2\n"
    assert result.message == "The returned content is the full content of the page."


async def test_redirect_is_followed(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/redirect")
    assert not result.is_error and "# Main heading" in result.output
    assert web.paths[-2:] == ["/redirect", "/page"]


async def test_a_redirect_to_another_host_is_handed_back_not_followed(
    call: Call, web: FakeWebServer, approver: FakeApprover
) -> None:
    with FakeWebServer() as elsewhere:
        target = f"{elsewhere.url}/page?k=what-the-first-host-put-here"
        result = await call(FetchURL(), url=f"{web.url}/away?to={quote(target, safe='')}")
        assert not result.is_error and result.output == f"Redirected to {target}"
        host = elsewhere.url.split("//")[1]
        assert f"redirects to another host ({host})" in result.message and f"call FetchURL with {target}" in result.message
        assert elsewhere.paths == []  # nothing reached the host the user was not asked about
        followed = await call(FetchURL(), url=target)  # the model follows it: that host is asked about
        assert "# Main heading" in followed.output
        assert [asked.scope.values for asked in approver.requests] == [(web.url.split("//")[1],), (host,)]


async def test_redirect_loop_is_bounded(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/loop")
    assert result.is_error and "redirects" in result.message
    assert len(web.paths) == fetch.MAX_REDIRECTS + 1


async def test_http_error_reports_the_status(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/missing")
    assert result.is_error
    assert "Status: 404" in result.message
    assert result.display[0].text == "HTTP 404 error"


async def test_huge_body_stops_at_the_cap(call: Call, web: FakeWebServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "MAX_FETCH_BYTES", 64 * 1024)
    result = await call(FetchURL(), url=f"{web.url}/huge")
    assert not result.is_error
    assert len(result.output) <= 64 * 1024
    assert "truncated" in result.message


async def test_output_is_capped_like_other_tools(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/huge")  # 3 MiB < the byte cap, > the output cap
    assert not result.is_error
    assert result.output.endswith("[...truncated]") and len(result.output) <= 50_000 + len("[...truncated]")
    assert "truncated" in result.message


async def test_binary_is_a_clear_error(call: Call, web: FakeWebServer) -> None:
    result = await call(FetchURL(), url=f"{web.url}/binary")
    assert result.is_error and "binary content (image/png)" in result.message


async def test_bad_urls(call: Call) -> None:
    result = await call(FetchURL(), url="file:///etc/passwd")
    assert result.is_error and "not an http(s) URL" in result.message
    result = await call(FetchURL(), url="http://127.0.0.1:1/")  # nothing listens on port 1
    assert result.is_error and result.display[0].text == "Network error"
