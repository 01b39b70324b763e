"""A real loopback stand-in for the Kimi OAuth service (device authorization, token, refresh).

Point the code at it with `KIMI_CODE_OAUTH_HOST=server.url` (what a test passes to a subprocess,
or sets with monkeypatch in-process):

    with FakeOAuthServer() as oauth:
        oauth.polls_before_approval = 2           # two "authorization_pending" answers first
        refresh = oauth.add_refresh_token()       # a refresh token the server will honour once
        ...
        oauth.refresh_calls                       # every refresh attempt: (token, outcome)

Refresh tokens rotate: a refresh answers a new pair and the old refresh token is spent; using a
spent or unknown one answers 400 `invalid_grant` and is recorded in `double_spends` when it had
been valid before (the bug the cross-process lock prevents). `refresh_delay` holds each refresh
answer back, to make concurrent refreshes overlap. `device_script` lists what the first polls
answer ("pending", "slow_down", "expired", "denied"); after it, `polls_before_approval` pending
answers, then the token. Requests are recorded with their headers and form fields.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from .serving import serve_in_thread

__all__ = ["FakeOAuthServer", "OAuthRequest", "credentials_json"]

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass(frozen=True)
class OAuthRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    form: dict[str, str]


def credentials_json(access: str, refresh: str, *, expires_in: float = 900.0, expires_at: float | None = None) -> str:
    """A credentials file exactly as Kimi Code CLI writes it."""
    return json.dumps({
        "access_token": access,
        "refresh_token": refresh,
        "expires_at": time.time() + expires_in if expires_at is None else expires_at,
        "scope": "kimi-code",
        "token_type": "Bearer",
        "expires_in": expires_in,
    })


class FakeOAuthServer:
    def __init__(self, *, interval: float = 0.05, token_lifetime: float = 900.0, device_expires_in: float = 600.0) -> None:
        self.interval = interval
        self.token_lifetime = token_lifetime
        self.device_expires_in = device_expires_in
        self.polls_before_approval = 0
        self.device_script: deque[str] = deque()
        self.refresh_delay = 0.0
        self.refresh_status: int | None = None  # force an answer (e.g. 503) to every refresh
        self.requests: list[OAuthRequest] = []
        self.refresh_calls: list[tuple[str, str]] = []
        self.double_spends: list[str] = []
        self.issued_access: list[str] = []
        self.user_codes: list[str] = []
        self._valid_refresh: set[str] = set()
        self._spent_refresh: set[str] = set()
        self._devices: dict[str, int] = {}  # device_code → polls answered
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle

    def __enter__(self) -> FakeOAuthServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._serving = serve_in_thread(httpd, "fake-oauth-server")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._serving.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # -- tokens

    def add_refresh_token(self, token: str | None = None) -> str:
        token = token or f"rt-seed-{secrets.token_hex(8)}"
        with self._lock:
            self._valid_refresh.add(token)
        return token

    def revoke_all(self) -> None:
        with self._lock:
            self._spent_refresh |= self._valid_refresh
            self._valid_refresh.clear()

    def _issue(self) -> dict[str, Any]:
        n = next(self._counter)
        access, refresh = f"at-{n}-{secrets.token_hex(12)}", f"rt-{n}-{secrets.token_hex(12)}"
        self._valid_refresh.add(refresh)
        self.issued_access.append(access)
        return {
            "access_token": access, "refresh_token": refresh, "expires_in": self.token_lifetime,
            "scope": "kimi-code", "token_type": "Bearer",
        }

    # -- endpoints (called by the handler thread)

    def device_authorization(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if not form.get("client_id"):
            return 400, {"error": "invalid_client"}
        with self._lock:
            code = f"dc-{secrets.token_hex(8)}"
            user_code = f"{secrets.token_hex(2).upper()}-{secrets.token_hex(2).upper()}"
            self._devices[code] = 0
            self.user_codes.append(user_code)
        return 200, {
            "device_code": code, "user_code": user_code,
            "verification_uri": f"{self.url}/device",
            "verification_uri_complete": f"{self.url}/device?user_code={user_code}",
            "expires_in": self.device_expires_in, "interval": self.interval,
        }

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = form.get("grant_type")
        if grant == DEVICE_GRANT:
            return self._device_token(form.get("device_code", ""))
        if grant == "refresh_token":
            return self._refresh(form.get("refresh_token", ""))
        return 400, {"error": "unsupported_grant_type"}

    def _device_token(self, code: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if code not in self._devices:
                return 400, {"error": "invalid_grant", "error_description": "unknown device code"}
            if self.device_script:
                step = self.device_script.popleft()
                errors = {"pending": "authorization_pending", "slow_down": "slow_down", "expired": "expired_token", "denied": "access_denied"}
                if step == "expired":
                    del self._devices[code]
                return 400, {"error": errors[step], "error_description": step}
            polls = self._devices[code]
            self._devices[code] = polls + 1
            if polls < self.polls_before_approval:
                return 400, {"error": "authorization_pending", "error_description": "waiting for the user"}
            del self._devices[code]
            return 200, self._issue()

    def _refresh(self, token: str) -> tuple[int, dict[str, Any]]:
        if self.refresh_delay:
            time.sleep(self.refresh_delay)
        with self._lock:
            if self.refresh_status is not None:
                self.refresh_calls.append((token, f"status {self.refresh_status}"))
                return self.refresh_status, {"error": "server_error"}
            if token in self._valid_refresh:
                self._valid_refresh.discard(token)
                self._spent_refresh.add(token)
                self.refresh_calls.append((token, "ok"))
                return 200, self._issue()
            if token in self._spent_refresh:
                self.double_spends.append(token)
            self.refresh_calls.append((token, "rejected"))
            return 400, {"error": "invalid_grant", "error_description": "The refresh token is invalid or expired."}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake: FakeOAuthServer = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        form = {k: v[0] for k, v in parse_qs(raw).items()}
        with fake._lock:
            fake.requests.append(OAuthRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, form))
        if self.path == "/api/oauth/device_authorization":
            status, body = fake.device_authorization(form)
        elif self.path == "/api/oauth/token":
            status, body = fake.token(form)
        else:
            status, body = 404, {"error": "not_found"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
