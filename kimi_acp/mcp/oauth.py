"""OAuth for remote MCP servers (`"auth": "oauth"` in mcp.json, as in Kimi Code CLI).

The MCP SDK's `OAuthClientProvider` (an `httpx.Auth`) does the protocol: discovery of the
authorization server, dynamic client registration, the authorization code with PKCE, the token
exchange and refreshing. Around it:

- Tokens live in `OAuthStore` (Kimi Code CLI's files), so a server authorized with `kimi mcp auth`
  there works here and the other way round.
- The SDK forgets when a stored access token runs out (it keeps `expires_in`, relative to a time
  it does not store), so `_StoredProvider` reads the absolute expiry back (through two private
  hooks of the SDK, _compat/mcp_oauth.py; without them the refresh waits for the first 401). An expired token is then
  refreshed before the first request. When the refresh must go elsewhere than `<server>/token`,
  the authorization server's metadata is looked up first.
- The servers (`kimi acp`, `kimi --wire`) cannot open a browser for a person who may not be
  there: when only a new authorization would help, the connection fails with
  `AuthorizationRequired`, whose message says to run `kimi mcp auth NAME`. That command
  (`authorize`) is the one place that opens the browser and listens on a loopback port.

Imported only when an OAuth server is connected or authorized.
"""

from __future__ import annotations

import asyncio
import logging
import time
import webbrowser
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

import httpx
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    handle_auth_metadata_response,
    handle_protected_resource_response,
)
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyHttpUrl, AnyUrl

from .._compat.mcp_oauth import hooked_provider_class
from .._version import __version__
from ..errors import AccountError
from ..util.secrets import register as register_secrets
from .config import redact_url
from .oauth_store import OAuthStore, token_secrets

log = logging.getLogger(__name__)

CLIENT_NAME = "kimi-acp"
AUTHORIZE_TIMEOUT_S = 300.0  # how long `kimi mcp auth` waits for the person in the browser
DISCOVERY_TIMEOUT_S = 10.0
SERVER_REDIRECT_URI = "http://127.0.0.1:0/callback"  # never used: the servers do not authorize


class AuthorizationRequired(AccountError):
    """Only a person in a browser can authorize this server now."""

    def __init__(self, name: str) -> None:
        super().__init__(f"not authorized: run `kimi mcp auth {name}` in a terminal, then start a new session")
        self.name = name


class NoAuthorizationNeeded(AccountError):
    """`kimi mcp auth` connected without being asked to sign in: nothing to store."""

    def __init__(self, tools: int) -> None:
        super().__init__(f"the server did not ask for authorization ({tools} tools without signing in)")
        self.tools = tools


class _PendingStore:
    """Where `kimi mcp auth` keeps a new authorization until it has worked (then it is saved)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens
        register_secrets(token_secrets(tokens))

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


if TYPE_CHECKING:  # what hooked_provider_class() returns: the SDK's class or a subclass of it
    from mcp.client.auth import OAuthClientProvider as _ProviderBase
else:
    _ProviderBase = hooked_provider_class()


class _StoredProvider(_ProviderBase):
    """The SDK's provider, knowing when a stored token expires, and where to refresh it."""

    def __init__(self, store: OAuthStore | _PendingStore, **kwargs: Any) -> None:
        super().__init__(storage=store, **kwargs)
        self._store = store

    async def after_initialize(self) -> None:
        context = self.context
        if context.current_tokens is not None and isinstance(self._store, OAuthStore):
            expiry = self._store.token_expiry()
            if expiry is not None:
                context.token_expiry_time = expiry
        if not context.is_token_valid() and context.can_refresh_token() and context.oauth_metadata is None:
            await self._discover()

    async def _discover(self) -> None:
        """Find the token endpoint before a refresh (the SDK otherwise guesses `<server>/token`)."""
        context = self.context
        try:
            async with httpx.AsyncClient(timeout=DISCOVERY_TIMEOUT_S, follow_redirects=True) as client:
                for url in build_protected_resource_metadata_discovery_urls(None, context.server_url):
                    prm = await handle_protected_resource_response(await client.get(url))
                    if prm is not None:
                        context.protected_resource_metadata = prm
                        context.auth_server_url = str(prm.authorization_servers[0])
                        break
                for url in build_oauth_authorization_server_metadata_discovery_urls(
                    context.auth_server_url, context.server_url
                ):
                    ok, metadata = await handle_auth_metadata_response(await client.get(url))
                    if metadata is not None:
                        context.oauth_metadata = metadata
                        break
                    if not ok:
                        break
        except httpx.HTTPError as exc:  # the refresh then tries the SDK's guess, and a 401 says the rest
            log.info("MCP OAuth: discovery for %s failed: %s", redact_url(context.server_url), type(exc).__name__)

    def after_refresh(self, refreshed: bool) -> None:
        if refreshed:
            log.info("MCP OAuth: refreshed the token for %s", redact_url(self.context.server_url))


def client_metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        client_uri=AnyHttpUrl("https://github.com/MoonshotAI/kimi-cli"),
        software_id="kimi-acp",
        software_version=__version__,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def server_auth(name: str, url: str) -> httpx.Auth:
    """The auth of a connection made by a server: stored tokens, refreshed; never a browser.

    With nothing stored the requests go out without a token, as in Kimi Code CLI: a server that
    lets anyone in works, and one that answers 401 fails with `AuthorizationRequired`."""
    store = OAuthStore(url)

    async def no_browser(authorization_url: str) -> None:
        raise AuthorizationRequired(name)

    async def no_callback() -> tuple[str, str | None]:
        raise AuthorizationRequired(name)

    return _StoredProvider(
        store,
        server_url=url,
        client_metadata=client_metadata(SERVER_REDIRECT_URI),
        redirect_handler=no_browser,
        callback_handler=no_callback,
    )


# ---------------------------------------------------------------------- `kimi mcp auth`


class LoopbackCallback:
    """The redirect target of an authorization: `http://127.0.0.1:<port>/callback` for one request."""

    def __init__(self) -> None:
        self._server: asyncio.base_events.Server | None = None
        self._result: asyncio.Future[tuple[str, str | None]] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> LoopbackCallback:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def wait(self, timeout: float = AUTHORIZE_TIMEOUT_S) -> tuple[str, str | None]:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise TimeoutError(f"no answer from the browser within {timeout:g} s") from None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.split()
            target = urlparse(parts[1]) if len(parts) >= 2 else None
            if target is None or target.path != "/callback":
                _respond(writer, 404, "Not found.")
                return
            query = parse_qs(target.query)
            if "error" in query:
                reason = query.get("error_description", query["error"])[0]
                self._settle(RuntimeError(f"the authorization server refused: {reason}"))
                _respond(writer, 400, f"Authorization failed: {reason}. You can close this window.")
            elif "code" in query:
                state = query.get("state")
                self._settle((query["code"][0], state[0] if state else None))
                _respond(writer, 200, "Authorization complete. You can close this window and return to the terminal.")
            else:
                _respond(writer, 400, "This is not an authorization answer.")
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _settle(self, outcome: tuple[str, str | None] | Exception) -> None:
        """What `wait` returns (the code and state) or raises; the first answer only."""
        if self._result is None or self._result.done():
            return
        if isinstance(outcome, Exception):
            self._result.set_exception(outcome)
        else:
            self._result.set_result(outcome)


def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = f"<!doctype html><meta charset=utf-8><title>kimi</title><p>{text}</p>".encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    )


async def authorize(
    name: str,
    url: str,
    connect: Callable[[httpx.Auth], Awaitable[int]],
    say: Callable[[str], None],
) -> int:
    """`kimi mcp auth NAME`: a fresh authorization in the browser; returns what `connect` returns
    (the number of tools). The new registration and tokens replace the stored ones only once the
    connection worked, so an aborted attempt leaves an earlier authorization in place. (A new
    loopback port needs a new registration: a registered redirect URI names its port.)"""
    pending = _PendingStore()
    async with LoopbackCallback() as callback:

        opening: set[asyncio.Task[bool]] = set()

        def said_if_not_opened(task: asyncio.Task[bool]) -> None:
            if not (task.cancelled() or task.exception() or task.result()):
                say("(no browser could be started; open the address above yourself)")

        async def open_browser(authorization_url: str) -> None:
            say("Opening the browser to authorize. If it does not open, visit:")
            say(f"  {authorization_url}")
            # In a thread, not awaited: a BROWSER command may wait for its browser to exit, which
            # happens after the callback this loop serves has answered.
            task = asyncio.create_task(asyncio.to_thread(webbrowser.open, authorization_url))
            opening.add(task)
            task.add_done_callback(said_if_not_opened)

        provider = _StoredProvider(
            pending,
            server_url=url,
            client_metadata=client_metadata(callback.redirect_uri),
            redirect_handler=open_browser,
            callback_handler=callback.wait,
            timeout=AUTHORIZE_TIMEOUT_S,
        )
        started = time.monotonic()
        tools = await connect(provider)
    if pending.tokens is None:  # the server did not ask for authorization at all
        raise NoAuthorizationNeeded(tools)
    store = OAuthStore(url)
    store.clear()
    if pending.client_info is not None:
        await store.set_client_info(pending.client_info)
    await store.set_tokens(pending.tokens)
    log.info("MCP OAuth: %s authorized in %.1f s", redact_url(url), time.monotonic() - started)
    return tools
