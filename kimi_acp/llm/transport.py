"""A faster HTTP transport under the httpx API, for streamed model replies.

httpx's own transport (httpcore + h11, pure Python) spends CPU on every network read of a
streamed reply; aiohttp's C parser a fraction of that (figures: docs/performance.md, Streaming
and Figures that used to live in the code). Providers keep talking httpx
(`httpx.AsyncClient`, its timeouts, headers, response and error types); only the bytes move
through aiohttp.

`client_transport()` chooses per client: httpx's own transport where a user's setup needs it (a
proxy from the environment, which httpx honours and this transport does not; aiohttp not
installed; `KIMI_HTTP_TRANSPORT=httpx`), else `SwitchingTransport`. aiohttp's import is slow,
so it is never paid on a request: until it has been imported (in a worker thread, started
once the first reply has been read) requests go through httpx's transport.

Errors keep their meaning: aiohttp failures are raised as the httpx exceptions `llm.http` maps
(connection refused -> ConnectError, a dropped stream -> RemoteProtocolError, a read timeout ->
ReadTimeout, a bad scheme -> UnsupportedProtocol), so a connection error stays a connection error
and a timeout a timeout.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import importlib.util
import logging
import os
import sys
import threading
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import httpx

log = logging.getLogger(__name__)

# "httpx": always httpx's own transport; "aiohttp": import aiohttp with the first client (tests,
# measurements); anything else: automatic (see `client_transport`).
TRANSPORT_ENV = "KIMI_HTTP_TRANSPORT"
_import_started = False
_import_lock = threading.Lock()
_imported = threading.Event()  # set once an import of aiohttp by this module has returned


def aiohttp_module() -> Any | None:
    """aiohttp once this module's import of it has completed (never imports it here), else None:
    a module another thread is still importing is in `sys.modules` already, half made."""
    module = sys.modules.get("aiohttp") if _imported.is_set() else None
    return module if hasattr(module, "ClientSession") else None


def _import_aiohttp() -> None:
    importlib.import_module("aiohttp")
    _imported.set()


def import_aiohttp_in_background() -> None:
    """Start importing aiohttp in a background thread (once); a missing aiohttp is fine."""
    global _import_started
    with _import_lock:
        if _import_started:
            return
        _import_started = True

    def load() -> None:
        try:
            _import_aiohttp()
        except Exception as exc:  # any failure keeps httpx's transport
            log.debug("aiohttp not usable, staying on httpx's transport: %s", exc)
            return
        # Its ~11k long-lived objects out of the collector's sight (as `early.settle_heap` does
        # for start-up): a full collection walking them would land in some streamed answer.
        gc.freeze()

    # Not a daemon: a process exiting while a daemon thread is inside a C extension's import (or
    # OpenSSL) can crash in interpreter finalization (seen as SIGSEGV at exit in the e2e tests);
    # a normal thread is joined first, which costs an exit at most the rest of the import.
    threading.Thread(target=load, name="kimi-aiohttp-import", daemon=False).start()


def _env_proxies() -> bool:
    return any(key in ("http", "https", "all") for key in urllib.request.getproxies())


def client_transport(ssl_context: Any) -> httpx.AsyncBaseTransport | None:
    """The transport for a provider's client; None means httpx's own (it reads proxies itself)."""
    choice = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if choice == "httpx" or _env_proxies() or importlib.util.find_spec("aiohttp") is None:
        return None
    if choice == "aiohttp":
        _import_aiohttp()
    return SwitchingTransport(ssl_context)


class SwitchingTransport(httpx.AsyncBaseTransport):
    """aiohttp once it is imported, httpx's own transport until then."""

    def __init__(self, ssl_context: Any) -> None:
        self._ssl_context = ssl_context
        self._fallback = httpx.AsyncHTTPTransport(verify=ssl_context)
        self._aio: AiohttpTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._aio is None:
            aiohttp = aiohttp_module()
            if aiohttp is None:
                response = await self._fallback.handle_async_request(request)
                response.stream = _ImportWhenRead(response.stream)
                return response
            self._aio = AiohttpTransport(self._ssl_context, aiohttp)
        return await self._aio.handle_async_request(request)

    async def aclose(self) -> None:
        await self._fallback.aclose()
        if self._aio is not None:
            await self._aio.aclose()


class _ImportWhenRead(httpx.AsyncByteStream):
    """A reply from httpx's transport; once it is read (or closed), aiohttp is loaded for the next
    requests, in a thread: while a reply streams, the import would compete with it for the GIL."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in self._stream:
            yield data

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            import_aiohttp_in_background()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp `ClientSession` (keep-alive pool) behind the httpx transport interface."""

    def __init__(self, ssl_context: Any, aiohttp: Any) -> None:
        self._aiohttp = aiohttp
        self._ssl_context = ssl_context
        self._session: Any = None

    def _get_session(self) -> Any:
        if self._session is None or self._session.closed:
            aiohttp = self._aiohttp
            connector = aiohttp.TCPConnector(ssl=self._ssl_context, limit=100, keepalive_timeout=5.0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),  # httpx's client keeps the cookies
                auto_decompress=False,  # httpx decodes Content-Encoding itself
                trust_env=False,  # proxies: `client_transport` left those to httpx
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{request.url.scheme}://'.")
        aiohttp = self._aiohttp
        timeout = request.extensions.get("timeout", {})
        client_timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeout.get("pool"),
            sock_connect=timeout.get("connect"),
            sock_read=timeout.get("read"),
        )
        content = await request.aread()
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "transfer-encoding"]
        try:
            response = await self._get_session().request(
                request.method,
                str(request.url),
                headers=headers,
                data=content or None,
                allow_redirects=False,  # httpx follows redirects itself when asked
                timeout=client_timeout,
                compress=False,
            )
        except Exception as exc:
            mapped = _mapped(aiohttp, exc, request, connecting=True)
            if mapped is exc:
                raise
            raise mapped from exc
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_ResponseStream(aiohttp, response, request),
            request=request,
            extensions=extensions,
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _ResponseStream(httpx.AsyncByteStream):
    """The body as it arrives: whatever one read got, not fixed-size pieces (SSE wants it now)."""

    def __init__(self, aiohttp: Any, response: Any, request: httpx.Request) -> None:
        self._aiohttp = aiohttp
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while True:
                data = await content.readany()
                if not data:
                    return
                yield data
        except Exception as exc:
            mapped = _mapped(self._aiohttp, exc, self._request, connecting=False)
            if mapped is exc:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        self._response.release()  # back to the pool when read to the end, else closed


def _mapped(aiohttp: Any, exc: BaseException, request: httpx.Request, *, connecting: bool) -> BaseException:
    """The httpx exception that means what `exc` means (anything else is returned as it is)."""
    if isinstance(exc, httpx.HTTPError):
        return exc
    message = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message, request=request)
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return httpx.ReadTimeout(message, request=request)
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return (httpx.PoolTimeout if connecting else httpx.ReadTimeout)(message, request=request)
    if isinstance(exc, (aiohttp.InvalidURL, getattr(aiohttp, "NonHttpUrlClientError", ()))):
        return httpx.UnsupportedProtocol(message, request=request)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message, request=request)
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError)):
        return httpx.RemoteProtocolError(message, request=request)
    if isinstance(exc, (aiohttp.ClientError, OSError)):
        return (httpx.ConnectError if connecting else httpx.ReadError)(message, request=request)
    return exc
