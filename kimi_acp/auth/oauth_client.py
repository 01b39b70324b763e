"""HTTP calls to the Kimi OAuth service (RFC 8628 device authorization, RFC 6749 refresh).

Endpoints under the OAuth host (`kimi_code.oauth_host()`): `POST /api/oauth/device_authorization`
and `POST /api/oauth/token`, form-encoded, with the public client id and the device headers.
Synchronous on purpose: `kimi login` is a terminal dialog, and the servers run a refresh in a
worker thread, where it may also wait for the cross-process lock without blocking the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from .device import device_headers
from .errors import OAuthError, RefreshRejected
from .kimi_code import CLIENT_ID, oauth_host
from .tokens import OAuthToken

TIMEOUT = httpx.Timeout(connect=10.0, read=20.0, write=10.0, pool=10.0)
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
RETRYABLE = frozenset({429, 500, 502, 503, 504})
REFRESH_ATTEMPTS = 3
# Refusals of a refresh token: it is revoked, expired or already spent (RFC 6749 §5.2 says 400
# invalid_grant; the service has answered 401/403 too).
REJECTING_ERRORS = frozenset({"invalid_grant", "invalid_token", "unauthorized_client", "access_denied"})


@dataclass(frozen=True)
class DeviceAuthorization:
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: float
    interval: float


PollOutcome = Literal["token", "pending", "slow_down", "expired", "denied"]


@dataclass(frozen=True)
class PollResult:
    outcome: PollOutcome
    token: OAuthToken | None = None
    detail: str = ""


def _post(path: str, data: dict[str, str], *, client: httpx.Client | None = None) -> tuple[int, dict[str, Any]]:
    """POST a form; (status, JSON object or {}). Transport failures raise httpx errors."""
    url = f"{oauth_host()}{path}"
    headers = {"Accept": "application/json", **device_headers()}
    if client is None:
        with httpx.Client(timeout=TIMEOUT) as own:
            response = own.post(url, data=data, headers=headers)
    else:
        response = client.post(url, data=data, headers=headers)
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status_code, body if isinstance(body, dict) else {}


def _describe(status: int, body: dict[str, Any]) -> str:
    text = body.get("error_description") or body.get("error") or ""
    text = " ".join(str(text).split())[:200]
    return f"HTTP {status}: {text}" if text else f"HTTP {status}"


def _transport(exc: httpx.HTTPError) -> str:
    return f"cannot reach {oauth_host()} ({type(exc).__name__})"


def request_device_authorization(*, client: httpx.Client | None = None) -> DeviceAuthorization:
    try:
        status, body = _post("/api/oauth/device_authorization", {"client_id": CLIENT_ID}, client=client)
    except httpx.HTTPError as exc:
        raise OAuthError(_transport(exc)) from None
    if status != 200:
        raise OAuthError(f"the sign-in service refused to start ({_describe(status, body)})")
    try:
        complete = str(body.get("verification_uri_complete") or body["verification_uri"])
        return DeviceAuthorization(
            device_code=str(body["device_code"]),
            user_code=str(body["user_code"]),
            verification_uri=str(body.get("verification_uri") or complete),
            verification_uri_complete=complete,
            expires_in=float(body.get("expires_in") or 0),
            interval=float(body.get("interval") or 5),
        )
    except (KeyError, TypeError, ValueError):
        raise OAuthError("the sign-in service sent an incomplete device authorization") from None


def poll_device_token(auth: DeviceAuthorization, *, client: httpx.Client | None = None) -> PollResult:
    """One poll of the token endpoint; transient failures count as "pending"."""
    data = {"client_id": CLIENT_ID, "device_code": auth.device_code, "grant_type": DEVICE_GRANT}
    try:
        status, body = _post("/api/oauth/token", data, client=client)
    except httpx.HTTPError as exc:
        return PollResult("pending", detail=_transport(exc))
    if status == 200 and body.get("access_token"):
        try:
            return PollResult("token", OAuthToken.from_response(body))
        except ValueError:
            raise OAuthError("the sign-in service sent an unusable token answer") from None
    error = str(body.get("error") or "")
    detail = str(body.get("error_description") or "")
    if error == "slow_down":
        return PollResult("slow_down", detail=detail)
    if error == "expired_token":
        return PollResult("expired", detail=detail)
    if error in ("access_denied", "authorization_declined"):
        return PollResult("denied", detail=detail)
    if error == "authorization_pending" or status in RETRYABLE:
        return PollResult("pending", detail=detail)
    raise OAuthError(f"sign-in failed ({_describe(status, body)})")


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # a module function, so tests can skip the backoff


def refresh(refresh_token: str, *, sleep: Callable[[float], None] | None = None) -> OAuthToken:
    """A new token pair; RefreshRejected when the service refuses this refresh token.

    Transient failures (connection, 429, 5xx) are retried with a short backoff; after that an
    OAuthError says the service could not be reached.
    """
    data = {"client_id": CLIENT_ID, "grant_type": "refresh_token", "refresh_token": refresh_token}
    last = ""
    for attempt in range(REFRESH_ATTEMPTS):
        if attempt:
            (sleep or _sleep)(float(2 ** (attempt - 1)))
        try:
            status, body = _post("/api/oauth/token", data)
        except httpx.HTTPError as exc:
            last = _transport(exc)
            continue
        if status == 200:
            try:
                return OAuthToken.from_response(body)
            except ValueError:
                raise OAuthError("the sign-in service sent an unusable refresh answer") from None
        if status in RETRYABLE:
            last = _describe(status, body)
            continue
        if status in (400, 401, 403) and (status != 400 or str(body.get("error") or "") in REJECTING_ERRORS or not body):
            raise RefreshRejected(_describe(status, body).replace(refresh_token, "***"))
        raise OAuthError(f"token refresh failed ({_describe(status, body)})".replace(refresh_token, "***"))
    raise OAuthError(f"token refresh failed: {last}".replace(refresh_token, "***"))
