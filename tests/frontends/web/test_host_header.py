"""`kimi web` answers only to its own address (frontends/web/host_check.py): a request whose Host
header names another host, or another port, is refused before the token is even looked at."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from kimi_acp.frontends.web.host_check import HostGuard, host_allowed
from tests.frontends.web.conftest import StartWeb

TIMEOUT = httpx.Timeout(30.0)
REFUSED = "answers only to its own address"


def test_a_foreign_host_header_is_refused_and_loopback_names_are_served(start_web: StartWeb) -> None:
    server = start_web(["text: hi"])
    port = int(server.base.rsplit(":", 1)[1])
    paths = ["/", "/static/app.js", "/api/sessions"]
    for host in ["evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", f"localhost.evil.example:{port}",
                 f"192.168.1.20:{port}", f"127.0.0.1.nip.io:{port}"]:  # fmt: skip
        for path in paths:
            response = httpx.get(server.base + path, params={"token": server.token}, headers={"Host": host}, timeout=TIMEOUT)
            assert response.status_code == 403, (host, path)
            assert REFUSED in response.text
            assert server.token not in response.text
        bare = httpx.get(server.base + "/api/sessions", headers={"Host": host}, timeout=TIMEOUT)
        assert bare.status_code == 403 and REFUSED in bare.text  # no token either: the Host answers first
    posted = httpx.post(server.base + "/api/sessions", json={}, headers={**server.headers, "Host": f"evil.example:{port}"},
                        timeout=TIMEOUT)  # fmt: skip
    assert posted.status_code == 403

    for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"]:
        response = httpx.get(server.base + "/api/sessions", headers={**server.headers, "Host": host}, timeout=TIMEOUT)
        assert response.status_code == 200, host
        assert "sessions" in response.json()
    page = httpx.get(server.url, timeout=TIMEOUT)  # the printed URL, as a browser sends it
    assert page.status_code == 200 and "<title>kimi web</title>" in page.text
    assert httpx.get(server.base + "/api/sessions", headers={"Host": f"localhost:{port}"}, timeout=TIMEOUT).status_code == 401


@pytest.mark.parametrize(
    ("header", "bound", "allowed"),
    [
        ("127.0.0.1:8123", "127.0.0.1", True),
        ("localhost:8123", "127.0.0.1", True),
        ("[::1]:8123", "::1", True),
        ("[::1]:8124", "::1", False),
        ("[::1]", "::1", False),  # port 80 implied
        ("evil.example:8123", "127.0.0.1", False),
        ("127.0.0.1:8123:1", "127.0.0.1", False),
        ("127.0.0.1:http", "127.0.0.1", False),
        ("", "127.0.0.1", False),
        ("10.0.0.5:8123", "10.0.0.5", True),  # `--host 10.0.0.5`: the printed URL works
        ("10.0.0.6:8123", "10.0.0.5", False),
        ("10.0.0.6:8123", "0.0.0.0", True),  # every interface: any IP address, no names
        ("evil.example:8123", "0.0.0.0", False),
    ],
)
def test_host_allowed(header: str, bound: str, allowed: bool) -> None:
    assert host_allowed(header, bound, 8123) is allowed


def test_a_websocket_with_a_foreign_host_is_closed_before_the_app_sees_it() -> None:
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    guard = HostGuard(app, bound_host="127.0.0.1", port=8123)
    foreign = {"type": "websocket", "headers": [(b"host", b"evil.example:8123")], "path": "/"}
    asyncio.run(guard(foreign, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}] and reached == []
    own = {"type": "websocket", "headers": [(b"host", b"localhost:8123")], "path": "/"}
    asyncio.run(guard(own, receive, send))
    assert reached == ["websocket"]
