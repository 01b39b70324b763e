"""A real loopback MCP server protected by OAuth, with its own authorization server, for e2e tests.

It fakes what an MCP client meets on the internet when a server requires authorization (the MCP
authorization spec): one origin, `http://127.0.0.1:PORT`, that is at the same time

- the protected resource `/mcp` (streamable HTTP transport, stateful sessions, tools `whoami` and
  `echo`), which answers 401 + `WWW-Authenticate: Bearer resource_metadata="…"` to a request
  without a live bearer token, and publishes RFC 9728 protected resource metadata;
- the authorization server (issuer `http://127.0.0.1:PORT`, endpoints under `/oauth/`, which only
  its metadata tells): RFC 8414 metadata, RFC 7591 dynamic
  client registration (public clients, no secret), an authorization endpoint that plays a user who
  clicks "Allow" (it validates the request, then redirects straight back with a code), and a token
  endpoint for the authorization code grant with PKCE S256 and for rotating refresh tokens.

Run it as a script; everything a test needs goes through the state directory:

    python tests/fakes/mcp_oauth_server.py --state DIR [--access-ttl SECONDS] [--port PORT]

- `DIR/ready.json` is written (atomically) once the server accepts connections:
  `{"url": "http://127.0.0.1:PORT/mcp", "issuer": "http://127.0.0.1:PORT", "pid": PID}`.
  A stale one is removed at start, but only after Python has imported the SDK (~0.5 s): use a fresh
  DIR, or wait for a ready.json whose pid is the process you started.
- `DIR/log.jsonl` gets one JSON object per line (plus a `"time"`) for every request to a
  metadata or authorization server endpoint and for every 401 of `/mcp`, e.g.
  `{"endpoint": "/token", "status": 200, "grant_type": "refresh_token", "client_id": "…"}`,
  `{"endpoint": "/authorize", "status": 302, "client_id": "…"}`,
  `{"endpoint": "/register", "status": 201, "client_id": "…", "redirect_uris": […]}`,
  `{"endpoint": "/mcp", "status": 401, "reason": "missing" | "unknown" | "expired", "method": "POST"}`,
  `{"endpoint": "/.well-known/oauth-authorization-server", "status": 200}`.
  Failed requests carry `"error"`: the OAuth error code (`invalid_grant`, `invalid_client`, …), or
  for a 400 of /authorize (plain text, never a redirect) the reason.

Access tokens live `--access-ttl` seconds (default 3600; fractions allowed) from the moment they
are issued; the token response says so in `expires_in` (rounded down to whole seconds). Refresh tokens do not expire but rotate: each refresh
answers a new pair and spends the old refresh token (a spent one answers `invalid_grant`); the old
access token stays valid until it expires. Authorization codes are single-use (an attempt spends
one even when it fails) and live 5 minutes. The metadata advertises no scopes, so clients ask for
none and are granted `mcp`. A `resource` parameter (RFC 8707), when sent, must name `/mcp`.
An MCP session belongs to the client_id that opened it; a refreshed token keeps using it.

All state is in memory: a restart forgets every client and token. SIGTERM / SIGINT stop the server
cleanly (exit status 0). Nothing is written to stdout; errors go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import uvicorn
from anyio import ClosedResourceError
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.fastmcp import Context, FastMCP
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["FakeAuthServer", "build_app", "main"]

# The authorization server's endpoints are not at the origin's root, as with many real ones: a
# client must take them from the metadata (a client guessing `<origin>/token` gets a 404).
AS_PREFIX = "/oauth"
MCP_PATH = "/mcp"
AUTHORIZATION_CODE_TTL = 300.0
DEFAULT_SCOPE = "mcp"  # granted when the client asks for no scope (the metadata advertises none)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


@dataclass(frozen=True)
class RegisteredClient:
    client_id: str
    redirect_uris: tuple[str, ...]
    metadata: dict[str, Any]  # the registration response, as sent


@dataclass
class AuthorizationCode:
    client_id: str
    redirect_uri: str
    code_challenge: str
    scope: str
    resource: str | None
    expires_at: float
    used: bool = False


@dataclass(frozen=True)
class IssuedAccessToken:
    client_id: str
    scope: str
    resource: str | None
    expires_at: float


@dataclass(frozen=True)
class IssuedRefreshToken:
    client_id: str
    scope: str
    resource: str | None


class OAuthError(Exception):
    """An RFC 6749 §5.2 error answer of the token (or registration) endpoint."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


def _same_url(a: str, b: str) -> bool:
    """URL comparison for resource indicators: case of scheme/host and a trailing slash do not matter."""

    def canonical(url: str) -> str:
        parts = urlsplit(url)
        return urlunsplit(
            (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")
        )

    return canonical(a) == canonical(b)


def _s256(verifier: str) -> str:
    return (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest())
        .decode("ascii")
        .rstrip("=")
    )


class FakeAuthServer:
    """The authorization server's state and endpoints, plus the bearer check for the resource."""

    def __init__(self, *, origin: str, access_ttl: float, log_path: Path) -> None:
        self.issuer = origin
        self.resource = origin + MCP_PATH
        self.resource_metadata_url = f"{origin}/.well-known/oauth-protected-resource{MCP_PATH}"
        self.access_ttl = access_ttl
        self.log_path = log_path
        self.clients: dict[str, RegisteredClient] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, IssuedAccessToken] = {}
        self.refresh_tokens: dict[str, IssuedRefreshToken] = {}
        self.spent_refresh_tokens: set[str] = set()

    # -- log

    def log(self, endpoint: str, status: int, **fields: Any) -> None:
        entry: dict[str, Any] = {"endpoint": endpoint, "status": status}
        entry.update({k: v for k, v in fields.items() if v is not None})
        entry["time"] = round(time.time(), 3)
        # One short write per line in append mode: concurrent readers never see half a line.
        with self.log_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    # -- metadata

    def authorization_server_metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}{AS_PREFIX}/authorize",
            "token_endpoint": f"{self.issuer}{AS_PREFIX}/token",
            "registration_endpoint": f"{self.issuer}{AS_PREFIX}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }

    def protected_resource_metadata(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        }

    async def as_metadata_endpoint(self, request: Request) -> Response:
        self.log(request.url.path, 200)
        return JSONResponse(self.authorization_server_metadata())

    async def pr_metadata_endpoint(self, request: Request) -> Response:
        self.log(request.url.path, 200)
        return JSONResponse(self.protected_resource_metadata())

    async def not_served_endpoint(self, request: Request) -> Response:
        """A well-known URL clients may probe that this server does not publish (e.g. OIDC discovery)."""
        self.log(request.url.path, 404)
        return PlainTextResponse("Not Found", status_code=404)

    # -- RFC 7591 registration

    async def register_endpoint(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return self._registration_error("invalid_client_metadata", "the body is not JSON")
        if not isinstance(body, dict):
            return self._registration_error("invalid_client_metadata", "the body is not a JSON object")
        redirect_uris = body.get("redirect_uris")
        if (
            not isinstance(redirect_uris, list)
            or not redirect_uris
            or not all(
                isinstance(u, str) and urlsplit(u).scheme and urlsplit(u).netloc for u in redirect_uris
            )
        ):
            return self._registration_error(
                "invalid_redirect_uri", "redirect_uris must be a non-empty list of URLs"
            )
        method = body.get("token_endpoint_auth_method", "none")
        if method != "none":
            return self._registration_error(
                "invalid_client_metadata",
                f"token_endpoint_auth_method {method!r} is not supported, only 'none'",
            )
        grant_types = body.get("grant_types", ["authorization_code"])
        response_types = body.get("response_types", ["code"])
        if not isinstance(grant_types, list) or "authorization_code" not in grant_types:
            return self._registration_error(
                "invalid_client_metadata", "grant_types must include authorization_code"
            )
        if response_types != ["code"]:
            return self._registration_error("invalid_client_metadata", "response_types must be ['code']")

        client_id = "client-" + secrets.token_urlsafe(12)
        metadata: dict[str, Any] = dict(body)
        metadata.update(
            {
                "client_id": client_id,
                "client_id_issued_at": int(time.time()),
                "token_endpoint_auth_method": "none",
                "grant_types": grant_types,
                "response_types": response_types,
            }
        )
        self.clients[client_id] = RegisteredClient(client_id, tuple(redirect_uris), metadata)
        self.log("/register", 201, client_id=client_id, redirect_uris=redirect_uris)
        return JSONResponse(metadata, status_code=201, headers=NO_STORE)

    def _registration_error(self, error: str, description: str) -> Response:
        self.log("/register", 400, error=error, error_description=description)
        return JSONResponse(
            {"error": error, "error_description": description}, status_code=400, headers=NO_STORE
        )

    # -- authorization endpoint (auto-approving)

    async def authorize_endpoint(self, request: Request) -> Response:
        params = request.query_params
        client_id = params.get("client_id")
        problem = self._check_authorization_request(dict(params))
        if problem is not None:
            self.log("/authorize", 400, error=problem, client_id=client_id)
            return PlainTextResponse(f"invalid authorization request: {problem}\n", status_code=400)
        assert client_id is not None
        redirect_uri = params["redirect_uri"]
        code = "code-" + secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            client_id=client_id,
            redirect_uri=redirect_uri,
            code_challenge=params["code_challenge"],
            scope=params.get("scope") or DEFAULT_SCOPE,
            resource=params.get("resource"),
            expires_at=time.time() + AUTHORIZATION_CODE_TTL,
        )
        separator = "&" if urlsplit(redirect_uri).query else "?"
        location = redirect_uri + separator + urlencode({"code": code, "state": params["state"]})
        self.log(
            "/authorize", 302, client_id=client_id, scope=params.get("scope"), resource=params.get("resource")
        )
        return RedirectResponse(location, status_code=302, headers=NO_STORE)

    def _check_authorization_request(self, params: dict[str, str]) -> str | None:
        """None when the request is acceptable, else why not (errors are shown, never redirected)."""
        if params.get("response_type") != "code":
            return f"response_type must be 'code', got {params.get('response_type')!r}"
        client = self.clients.get(params.get("client_id", ""))
        if client is None:
            return f"unknown client_id {params.get('client_id')!r}"
        redirect_uri = params.get("redirect_uri")
        if not redirect_uri:
            return "redirect_uri is required"
        if redirect_uri not in client.redirect_uris:
            return f"redirect_uri {redirect_uri!r} is not registered for this client"
        if not params.get("code_challenge"):
            return "code_challenge is required (PKCE)"
        if params.get("code_challenge_method") != "S256":
            return f"code_challenge_method must be 'S256', got {params.get('code_challenge_method')!r}"
        if not params.get("state"):
            return "state is required"
        resource = params.get("resource")
        if resource is not None and not _same_url(resource, self.resource):
            return f"resource {resource!r} is not {self.resource!r}"
        return None

    # -- token endpoint

    async def token_endpoint(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        grant_type = form.get("grant_type")
        client_id = form.get("client_id")
        try:
            if grant_type == "authorization_code":
                body = self._authorization_code_grant(form)
            elif grant_type == "refresh_token":
                body = self._refresh_token_grant(form)
            elif not grant_type:
                raise OAuthError("invalid_request", "grant_type is required")
            else:
                raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
        except OAuthError as e:
            self.log("/token", e.status, grant_type=grant_type, client_id=client_id, error=e.error)
            return JSONResponse(
                {"error": e.error, "error_description": e.description}, status_code=e.status, headers=NO_STORE
            )
        self.log("/token", 200, grant_type=grant_type, client_id=client_id)
        return JSONResponse(body, headers=NO_STORE)

    def _client(self, form: dict[str, str]) -> RegisteredClient:
        client_id = form.get("client_id")
        if not client_id:
            raise OAuthError("invalid_client", "client_id is required (public client)")
        client = self.clients.get(client_id)
        if client is None:
            raise OAuthError("invalid_client", f"unknown client_id {client_id!r}")
        return client

    def _check_resource(self, form: dict[str, str], granted: str | None) -> str | None:
        resource = form.get("resource")
        if resource is None:
            return granted
        if not _same_url(resource, self.resource) or (
            granted is not None and not _same_url(resource, granted)
        ):
            raise OAuthError("invalid_target", f"resource {resource!r} was not granted")
        return resource

    def _authorization_code_grant(self, form: dict[str, str]) -> dict[str, Any]:
        client = self._client(form)
        code_value = form.get("code")
        if not code_value:
            raise OAuthError("invalid_request", "code is required")
        code = self.codes.get(code_value)
        if code is None:
            raise OAuthError("invalid_grant", "unknown authorization code")
        if code.used:
            raise OAuthError("invalid_grant", "authorization code already used")
        code.used = True  # spent by any attempt, successful or not
        if time.time() > code.expires_at:
            raise OAuthError("invalid_grant", "authorization code expired")
        if code.client_id != client.client_id:
            raise OAuthError("invalid_grant", "authorization code was issued to another client")
        if form.get("redirect_uri") != code.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
        verifier = form.get("code_verifier")
        if not verifier:
            raise OAuthError("invalid_request", "code_verifier is required (PKCE)")
        if not secrets.compare_digest(_s256(verifier), code.code_challenge):
            raise OAuthError("invalid_grant", "PKCE verification failed")
        resource = self._check_resource(form, code.resource)
        return self._issue(client.client_id, code.scope, resource)

    def _refresh_token_grant(self, form: dict[str, str]) -> dict[str, Any]:
        client = self._client(form)
        token = form.get("refresh_token")
        if not token:
            raise OAuthError("invalid_request", "refresh_token is required")
        grant = self.refresh_tokens.get(token)
        if grant is None:
            spent = token in self.spent_refresh_tokens
            raise OAuthError(
                "invalid_grant", "refresh token already used" if spent else "unknown refresh token"
            )
        if grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "refresh token was issued to another client")
        requested_scope = form.get("scope")
        if requested_scope and not set(requested_scope.split()) <= set(grant.scope.split()):
            raise OAuthError("invalid_scope", "a refresh cannot widen the scope")
        resource = self._check_resource(form, grant.resource)
        del self.refresh_tokens[token]  # rotation: the old refresh token is spent
        self.spent_refresh_tokens.add(token)
        return self._issue(client.client_id, requested_scope or grant.scope, resource)

    def _issue(self, client_id: str, scope: str, resource: str | None) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        self.access_tokens[access] = IssuedAccessToken(
            client_id, scope, resource, time.time() + self.access_ttl
        )
        self.refresh_tokens[refresh] = IssuedRefreshToken(client_id, scope, resource)
        # RFC 6749 (and the SDK's OAuthToken) want an integer; rounding down keeps the client's idea of
        # the expiry no later than the server's.
        expires_in = int(self.access_ttl)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": expires_in,
            "refresh_token": refresh,
            "scope": scope,
        }

    # -- resource server side

    def check_bearer(self, authorization: str | None) -> tuple[str, IssuedAccessToken] | str:
        """The token and its grant, or the reason it is refused: "missing", "unknown" or "expired"."""
        if not authorization:
            return "missing"
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return "missing"
        issued = self.access_tokens.get(token)
        if issued is None:
            return "unknown"
        if time.time() >= issued.expires_at:
            return "expired"
        return token, issued


class RequireBearer:
    """ASGI wrapper for /mcp: 401 without a live bearer token this server issued, else pass it on.

    The accepted token is put in `scope["user"]` as the SDK's `AuthenticatedUser`, which is what the
    streamable HTTP session manager binds a session to (same client_id after a refresh: same owner)
    and what the tools read the client_id from.
    """

    def __init__(self, app: ASGIApp, auth: FakeAuthServer) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        checked = self.auth.check_bearer(Headers(scope=scope).get("authorization"))
        if isinstance(checked, str):
            await self._unauthorized(scope, receive, send, checked)
            return
        token, issued = checked
        access = AccessToken(
            token=token,
            client_id=issued.client_id,
            scopes=issued.scope.split(),
            expires_at=int(issued.expires_at),
            resource=issued.resource,
        )
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        await self.app(scope, receive, send)

    async def _unauthorized(self, scope: Scope, receive: Receive, send: Send, reason: str) -> None:
        self.auth.log(MCP_PATH, 401, reason=reason, method=scope.get("method"))
        challenge = f'Bearer resource_metadata="{self.auth.resource_metadata_url}"'
        if reason == "missing":
            body = {"error": "unauthorized", "error_description": "a bearer token is required"}
        else:
            description = (
                "the access token expired" if reason == "expired" else "the access token is not known"
            )
            challenge += f', error="invalid_token", error_description="{description}"'
            body = {"error": "invalid_token", "error_description": description}
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def build_mcp() -> FastMCP:
    mcp = FastMCP("fake-oauth-mcp", log_level="WARNING", streamable_http_path=MCP_PATH)

    @mcp.tool(description="Who the server thinks is calling: the OAuth client_id of the bearer token.")
    def whoami(ctx: Context) -> str:  # type: ignore[type-arg]
        request = ctx.request_context.request
        user = request.scope.get("user") if isinstance(request, Request) else None
        if not isinstance(user, AuthenticatedUser):
            return "not authorized"
        return f"authorized as {user.access_token.client_id}"

    @mcp.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    return mcp


def build_app(auth: FakeAuthServer) -> Starlette:
    mcp = build_mcp()
    mcp.streamable_http_app()  # creates mcp.session_manager; the app itself is not used
    session_manager = mcp.session_manager

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await session_manager.handle_request(scope, receive, send)

    wk = "/.well-known"
    routes = [
        Route(f"{wk}/oauth-protected-resource", auth.pr_metadata_endpoint, methods=["GET"]),
        Route(f"{wk}/oauth-protected-resource{MCP_PATH}", auth.pr_metadata_endpoint, methods=["GET"]),
        Route(f"{wk}/oauth-authorization-server", auth.as_metadata_endpoint, methods=["GET"]),
        # Not RFC 8414 for a root issuer, but clients that derive the URL from the MCP URL's path try it.
        Route(f"{wk}/oauth-authorization-server{MCP_PATH}", auth.as_metadata_endpoint, methods=["GET"]),
        Route(f"{wk}/openid-configuration", auth.not_served_endpoint, methods=["GET"]),
        Route(f"{wk}/openid-configuration{MCP_PATH}", auth.not_served_endpoint, methods=["GET"]),
        Route(f"{MCP_PATH}{wk}/openid-configuration", auth.not_served_endpoint, methods=["GET"]),
        Route(f"{AS_PREFIX}/register", auth.register_endpoint, methods=["POST"]),
        Route(f"{AS_PREFIX}/authorize", auth.authorize_endpoint, methods=["GET"]),
        Route(f"{AS_PREFIX}/token", auth.token_endpoint, methods=["POST"]),
        Route(MCP_PATH, RequireBearer(mcp_endpoint, auth)),
    ]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with session_manager.run():
            yield

    return Starlette(routes=routes, lifespan=lifespan)


class _DropClosedStandaloneStream(logging.Filter):
    """Drops the SDK's ERROR "Error in standalone SSE writer" + anyio.ClosedResourceError, which
    mcp 1.30 logs whenever a client ends a session (DELETE) while its GET stream is open: not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (
            record.getMessage() == "Error in standalone SSE writer" and isinstance(exc, ClosedResourceError)
        )


class _QuietShutdown(logging.Filter):
    """Drops uvicorn's ERROR "ASGI callable returned without completing response." while the server
    stops: that is how sse-starlette ends an open SSE stream (an MCP GET stream) on shutdown."""

    def __init__(self, server: uvicorn.Server) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            self.server.should_exit
            and record.getMessage() == "ASGI callable returned without completing response."
        )


class _Server(uvicorn.Server):
    """uvicorn, except that after a graceful shutdown on SIGINT/SIGTERM the process exits with status 0
    (uvicorn re-raises the signal, so the process would die of it). The handlers are still uvicorn's
    `handle_exit` (a second SIGINT forces the exit), installed with `signal.signal` as uvicorn does:
    sse-starlette finds the server through them and ends open SSE streams when it stops."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _write_ready(state: Path, port: int) -> None:
    origin = f"http://127.0.0.1:{port}"
    tmp = state / f".ready.json.{os.getpid()}.tmp"
    tmp.write_text(
        json.dumps({"url": origin + MCP_PATH, "issuer": origin, "pid": os.getpid()}), encoding="utf-8"
    )
    os.replace(tmp, state / "ready.json")


async def _serve(state: Path, port: int, access_ttl: float) -> int:
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when their proto says TCP
    # (with proto 0, every keep-alive response waits ~40 ms for a delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    auth = FakeAuthServer(
        origin=f"http://127.0.0.1:{port}", access_ttl=access_ttl, log_path=state / "log.jsonl"
    )
    config = uvicorn.Config(
        build_app(auth),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,  # a backstop: sse-starlette ends open SSE streams within 0.5 s
    )
    server = _Server(config)
    logging.getLogger("uvicorn.error").addFilter(_QuietShutdown(server))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            break
        await asyncio.sleep(0.01)
    if server.started:
        _write_ready(state, port)
    await serving
    sock.close()
    return 0 if server.started else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--state", required=True, type=Path, help="directory for ready.json and log.jsonl")
    parser.add_argument("--access-ttl", type=float, default=3600.0, help="access token lifetime in seconds")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args(argv)
    if args.access_ttl <= 0:
        parser.error("--access-ttl must be positive")

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("mcp.server.streamable_http").addFilter(_DropClosedStandaloneStream())
    state: Path = args.state
    state.mkdir(parents=True, exist_ok=True)
    (state / "ready.json").unlink(missing_ok=True)
    try:
        return asyncio.run(_serve(state, args.port, args.access_ttl))
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"mcp_oauth_server: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
