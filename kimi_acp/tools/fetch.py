"""FetchURL: a web page (or any text resource) as text the model can read.

With `[services.moonshot_fetch]` configured (the session's config, read from the call's
`ToolEnv.services`), the page is first asked of that service, as Kimi Code CLI does: POST `{"url": ...}` with
`Accept: text/markdown`, and a 200 answer's body is the page's main content. When the service
fails (an HTTP error, a timeout, unreachable, no credential, an empty answer) the failure is
logged and the local fetch runs instead.

The local fetch: an HTTP GET, redirects followed (bounded) while they stay on the host the user
approved (a redirect elsewhere is handed back to the model, whose next fetch of it asks about
that host), timeouts, the body streamed and cut at a size cap, HTML reduced to Markdown
(markdownify over BeautifulSoup, imported lazily), other text passed through, binary refused.
Every fetch asks per host first (tools/permits.py, issue #21).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import Field

from ..util.visible_text import code_span
from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, cap_output, tool_error, tool_ok
from .permits import permit_fetch, url_host

log = logging.getLogger(__name__)

NAME = "FetchURL"
MAX_FETCH_BYTES = 5 * 1024 * 1024  # the most of a body read; the rest is not downloaded
MAX_REDIRECTS = 5
# (connect, read, write, pool): httpx.Timeout's tuple form, so httpx loads only when a fetch runs
TIMEOUT = (15.0, 30.0, 30.0, 30.0)
# The fetch service loads and extracts the page itself: give it longer than a plain GET.
SERVICE_TIMEOUT = (15.0, 60.0, 30.0, 30.0)
# Sites often refuse unknown clients; Kimi sends a browser's User-Agent too.
USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/x-sh",
    "application/rss+xml",
    "application/atom+xml",
)
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "form", "button")

DESCRIPTION = """Fetch a web page from a URL and extract its main text content.

- HTML pages are converted to Markdown; plain text, JSON and other text resources are returned as is.
- Binary content (images, archives, PDFs...) is not returned.
- Large pages are truncated.
"""


class FetchURLParams(Params):
    url: str = Field(description="The URL to fetch content from.")


class FetchURL(Tool[FetchURLParams]):
    name = NAME
    description = DESCRIPTION
    params = FetchURLParams

    async def run(self, params: FetchURLParams, ctx: ToolContext) -> ToolReturnValue:
        url = params.url.strip()
        if not re.match(r"https?://", url, re.IGNORECASE):
            return tool_error(
                f"`{params.url}` is not an http(s) URL. Give a full URL starting with http:// or https://.",
                brief="Invalid URL",
            )
        await permit_fetch(ctx, url, f"Fetch {code_span(url)}")
        services = ctx.env.services
        service = getattr(services, "moonshot_fetch", None) if services is not None else None
        if service is not None:
            fetched = await _fetch_with_service(service, url, ctx.tool_call_id)
            if isinstance(fetched, ToolReturnValue):
                return fetched
            log.warning("FetchURL: the fetch service failed (%s); fetching %s locally", fetched, url)
            result = await _fetch_locally(url)
            if result.is_error:
                note = f" (The fetch service failed first: {fetched}.)"
                result = result.model_copy(update={"message": result.message + note})
            return result
        return await _fetch_locally(url)


async def _fetch_with_service(service: Any, url: str, tool_call_id: str) -> ToolReturnValue | str:
    """The page from the fetch service, or why the service did not give it (credentials redacted)."""
    from .web_service import ServiceFailure, post

    try:
        reply = await post(service, tool_call_id, {"url": url}, timeout=SERVICE_TIMEOUT, accept="text/markdown")
    except ServiceFailure as failure:
        return failure.message
    if reply.status != 200:
        excerpt = reply.error_excerpt(200)
        return f"HTTP {reply.status}" + (f": {excerpt}" if excerpt else "")
    text = reply.text
    if not text.strip():
        return "an empty answer"
    output, truncated = cap_output(text)
    message = "The returned content is the main content extracted from the page."
    if truncated or len(reply.body) >= MAX_FETCH_BYTES:
        message = "The content was truncated: only the beginning of the page is returned."
    return tool_ok(output, message=message)


async def _fetch_locally(url: str) -> ToolReturnValue:
    """The page by a GET from here: the tool without a fetch service, or when it failed."""
    import httpx

    try:
        fetched = await _get(url)
    except _TooManyRedirects:
        return tool_error(
            f"Failed to fetch URL: more than {MAX_REDIRECTS} redirects.", brief="Too many redirects"
        )
    except httpx.TimeoutException as exc:
        return tool_error(f"Failed to fetch URL: the request timed out ({type(exc).__name__}).", brief="Timeout")
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return tool_error(
            f"Failed to fetch URL due to network error: {exc or type(exc).__name__}. "
            "This may indicate the URL is invalid or the server is unreachable.",
            brief="Network error",
        )
    if isinstance(fetched, _ElsewhereRedirect):
        return tool_ok(
            f"Redirected to {fetched.url}",
            message=(
                f"The page redirects to another host ({fetched.host}); its content was not fetched. "
                f"To follow the redirect, call FetchURL with {fetched.url} (the user is asked before "
                "the agent contacts a new host)."
            ),
            brief="Redirected to another host",
        )
    status, content_type, charset, body, cut = fetched
    if status >= 400:
        return tool_error(
            f"Failed to fetch URL. Status: {status}. "
            "This may indicate the page is not accessible or the server is down.",
            brief=f"HTTP {status} error",
        )
    if not body:
        return tool_ok("", message="The response body is empty.", brief="Empty response body")
    is_html = content_type.startswith(_HTML_TYPES) or (not content_type and _looks_like_html(body))
    if not is_html and not _is_text(content_type, body):
        what = content_type or "unknown type"
        return tool_error(
            f"The URL returned binary content ({what}), which cannot be shown as text. "
            "Download it with a shell command if you need it.",
            brief="Binary content",
        )
    text = _decode(body, charset)
    if is_html:
        text = html_to_markdown(text)
        if not text.strip():
            return tool_error(
                "Failed to extract meaningful content from the page. The page may need JavaScript "
                "to render its content.",
                brief="No content extracted",
            )
        message = "The returned content is the main text content extracted from the page."
    else:
        message = "The returned content is the full content of the page."
    output, truncated = cap_output(text)
    if cut or truncated:
        message = "The content was truncated: only the beginning of the page is returned."
    return tool_ok(output, message=message)


class _Fetched(NamedTuple):
    status: int
    content_type: str
    charset: str | None
    body: bytes  # up to the cap
    cut: bool  # whether the body was cut


@dataclass(frozen=True)
class _ElsewhereRedirect:
    """A redirect to another host: not followed, since the user approved only the first host."""

    url: str
    host: str


class _TooManyRedirects(Exception):
    pass


async def _get(url: str) -> _Fetched | _ElsewhereRedirect:
    """The GET, following redirects that stay on the approved host (and port; http → https
    included); a redirect to another host ends it, so that host is asked about like any other."""
    import httpx

    from ..llm.http import shared_ssl_context

    async with httpx.AsyncClient(
        follow_redirects=False,
        timeout=TIMEOUT,
        verify=shared_ssl_context(),
        headers={"User-Agent": USER_AGENT, "Accept": "text/html,text/plain,text/markdown,*/*;q=0.8"},
    ) as client:
        host = url_host(url)
        request = client.build_request("GET", url)
        for _ in range(MAX_REDIRECTS + 1):
            response = await client.send(request, stream=True)
            try:
                following = response.next_request
                if following is None:
                    return await _read(response)
            finally:
                await response.aclose()
            target = str(following.url)
            if url_host(target) != host:
                return _ElsewhereRedirect(target, url_host(target))
            request = following
    raise _TooManyRedirects


async def _read(response: Any) -> _Fetched:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if response.status_code >= 400:
        return _Fetched(response.status_code, content_type, None, b"", False)
    chunks: list[bytes] = []
    size = 0
    cut = False
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_FETCH_BYTES:
            cut = True
            break
    body = b"".join(chunks)[:MAX_FETCH_BYTES]
    return _Fetched(response.status_code, content_type, response.charset_encoding, body, cut)


def _is_text(content_type: str, body: bytes) -> bool:
    if content_type.startswith(_TEXT_TYPES) or content_type.endswith(("+json", "+xml")):
        return True
    if content_type and content_type != "application/octet-stream":
        return False
    return b"\x00" not in body[:8192]  # no (useful) type: sniff


def _looks_like_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def html_to_markdown(html: str) -> str:
    """The readable part of a page as Markdown: scripts, styles and navigation dropped, the
    `<main>`/`<article>` element preferred over the whole body, the title as a heading."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    focused = soup.find("main") or soup.find("article")
    root: Any = focused or soup.body or soup
    if focused is None:
        for tag in root(("header", "footer", "aside")):
            tag.decompose()
    if soup.title is not None:
        soup.title.decompose()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(root)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if title and not text.startswith(f"# {title}"):
        text = f"# {title}\n\n{text}" if text else ""
    return text + "\n" if text else ""
