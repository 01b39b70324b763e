"""The `Host` header check of `kimi web`: a defence against DNS rebinding.

A web page on `evil.example` can point its own name at 127.0.0.1 and then talk to this server
as a same-origin page: the browser sends `Host: evil.example:<port>`. The token already stops it
from driving the agent; refusing every Host that is not this server's own name and port also
keeps it from probing the server at all. Allowed: the loopback names (`127.0.0.1`, `localhost`,
`[::1]`) and the host `kimi web` was told to listen on, each with the server's port; when
listening on every interface (`0.0.0.0`, `::`), any IP address too (a rebinding needs a name).
"""

from __future__ import annotations

import ipaddress

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
POLICY_VIOLATION = 1008  # the WebSocket close code for a refused request


def host_allowed(header: str, bound_host: str, port: int) -> bool:
    """Whether a request's Host header names this server: an allowed name, with `port`."""
    name, given_port = _split(header.strip().lower())
    if name is None or given_port != port:
        return False
    bound = bound_host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name == bound:
        return True
    return bound in WILDCARDS and _is_ip(name)


def _split(value: str) -> tuple[str | None, int | None]:
    """`name:port` or `[v6]:port` into (name, port); no port means 80, as HTTP says."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None, None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None, None
        port_text = rest[1:]
    else:
        name, _, port_text = value.partition(":")
        if ":" in port_text:
            return None, None
    if not port_text:
        return name, 80
    return (name, int(port_text)) if port_text.isdigit() else (None, None)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostGuard:
    """ASGI middleware: refuse an HTTP request (403) or a WebSocket (closed) with a foreign Host."""

    def __init__(self, app: ASGIApp, *, bound_host: str, port: int) -> None:
        self.app = app
        self.bound_host = bound_host
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("host", "")
        if host_allowed(header, self.bound_host, self.port):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})
            return
        text = "This kimi web server answers only to its own address (the Host header names another): open the URL it printed."
        headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
        await Response(text + "\n", status_code=403, media_type="text/plain", headers=headers)(scope, receive, send)
