"""What an HTTP provider asks for its credentials when its config has `oauth = {storage, key}`.

`OAuthTokenSource.access_token()` is cheap and synchronous (one `stat` to notice that another
process refreshed or that the user signed out); `ensure_fresh()` runs before a request and
refreshes a token close to expiry; `after_unauthorized()` runs once on a 401 and forces a
refresh unless another process already did. Refreshing happens in a worker thread under an
in-process lock and the cross-process lock file, after re-reading the stored token, so one
refresh token is spent once however many sessions and processes need a new one.

Precedence, as in Kimi Code CLI: the account's access token when there is one, else the
provider's `api_key`. A refresh token the service refused is remembered for the life of the
process (never sent again) until the stored login changes, e.g. after `kimi login`; what the
user sees is one "sign in again" error, never a loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import replace

from ..config import OAuthRef
from ..errors import RefreshUnavailable, SignInRequired
from ..util import process_state
from .device import device_headers
from .errors import KeyringUnavailable, OAuthError, RefreshRejected
from .lock import LockTimeout, RefreshLock
from .tokens import OAuthToken, file_signature, load_token, lock_path, save_token

log = logging.getLogger(__name__)

MIN_REFRESH_THRESHOLD = 300.0  # seconds before expiry
REFRESH_THRESHOLD_RATIO = 0.5  # ... or half the token's lifetime, whichever is longer

NOT_SIGNED_IN = "You are not signed in to your Kimi account"
EXPIRED = "Your Kimi account sign-in has expired or was revoked"

_thread_locks: dict[str, threading.Lock] = process_state.container(f"{__name__}._thread_locks", {})
_thread_locks_guard = threading.Lock()
_rejected: dict[str, str] = process_state.container(f"{__name__}._rejected", {})  # key → the refresh token the service refused


def refresh_threshold(expires_in: float) -> float:
    return max(MIN_REFRESH_THRESHOLD, expires_in * REFRESH_THRESHOLD_RATIO) if expires_in > 0 else MIN_REFRESH_THRESHOLD


def needs_refresh(token: OAuthToken, now: float | None = None) -> bool:
    """Close to expiry (or past it); a token without `expires_at` is refreshed only on a 401."""
    if not token.expires_at:
        return False
    now = time.time() if now is None else now
    return token.expires_at - now < refresh_threshold(token.expires_in)


def is_rejected(key: str, token: OAuthToken) -> bool:
    return bool(token.refresh_token) and _rejected.get(key) == token.refresh_token


def _thread_lock(key: str) -> threading.Lock:
    with _thread_locks_guard:
        return _thread_locks.setdefault(key, threading.Lock())


def refresh_stored(ref: OAuthRef, *, stale_access: str | None = None, force: bool = False) -> OAuthToken:
    """The stored token, refreshed first when needed; blocking (call it from a worker thread).

    `force` refreshes even a token that is not near expiry (after a 401), unless the stored access
    token differs from `stale_access`: then someone else refreshed already and that token is used.
    """
    with _thread_lock(ref.key):
        lock = RefreshLock(lock_path(ref.key))
        try:
            lock.__enter__()
            locked = True
        except LockTimeout:
            log.warning("token refresh lock held too long by another process; refreshing without it")
            locked = False
        except OSError as exc:
            log.warning("cannot create the token refresh lock (%s); refreshing without it", exc.strerror or type(exc).__name__)
            locked = False
        try:
            return _refresh_locked(ref, stale_access=stale_access, force=force)
        finally:
            if locked:
                lock.__exit__(None, None, None)


def _refresh_locked(ref: OAuthRef, *, stale_access: str | None, force: bool) -> OAuthToken:
    from . import oauth_client

    try:
        current = load_token(ref)
    except KeyringUnavailable as exc:
        raise SignInRequired(str(exc)) from None
    if current is None or (not current.access_token and not current.refresh_token):
        raise SignInRequired(NOT_SIGNED_IN)
    if stale_access is not None and current.access_token and current.access_token != stale_access:
        return current  # another session or process refreshed while we waited
    if not force and not needs_refresh(current):
        return current
    if not current.refresh_token or is_rejected(ref.key, current):
        raise SignInRequired(EXPIRED)
    try:
        new = oauth_client.refresh(current.refresh_token)
    except RefreshRejected as exc:
        _rejected[ref.key] = current.refresh_token
        log.warning("the Kimi OAuth service refused the refresh token (%s); the user must sign in again", exc)
        raise SignInRequired(EXPIRED) from None
    except OAuthError as exc:
        raise RefreshUnavailable(f"could not refresh the Kimi account sign-in: {exc}") from None
    if not new.refresh_token:  # a service that does not rotate keeps the old one valid
        new = replace(new, refresh_token=current.refresh_token)
    save_token(ref, new)
    log.info("refreshed the Kimi account token (expires in %.0f s)", new.expires_in)
    return new


class OAuthTokenSource:
    """The credentials of one provider (or service) configured with `oauth`."""

    def __init__(self, ref: OAuthRef, *, fallback_api_key: str = "") -> None:
        self.ref = ref
        self._fallback = fallback_api_key
        self._signature: tuple[int, int] | None = None
        self._token: OAuthToken | None = None
        self._loaded = False
        self._keyring_error: str = ""

    def __repr__(self) -> str:
        return f"OAuthTokenSource(key={self.ref.key!r}, storage={self.ref.storage!r})"

    # -- reading

    def token(self) -> OAuthToken | None:
        """The stored token, re-read when the file changed (refresh elsewhere, logout, login)."""
        signature = file_signature(self.ref.key)
        if self._loaded and signature == self._signature and (signature is not None or self.ref.storage != "keyring"):
            return self._token
        try:
            self._token = load_token(self.ref)
            self._keyring_error = ""
        except KeyringUnavailable as exc:
            self._token, self._keyring_error = None, str(exc)
        self._signature = file_signature(self.ref.key)
        self._loaded = True
        return self._token

    def _usable(self) -> OAuthToken | None:
        token = self.token()
        if token is None or not token.access_token or is_rejected(self.ref.key, token):
            return None
        return token

    def access_token(self) -> str:
        """What goes into `Authorization: Bearer`: the account's token, else the api_key, else ""."""
        token = self._usable()
        return token.access_token if token is not None else self._fallback

    def headers(self) -> dict[str, str]:
        """The device headers the Kimi service expects next to the token."""
        return device_headers()

    # -- refreshing

    def _missing(self) -> SignInRequired:
        if self._keyring_error:
            return SignInRequired(self._keyring_error)
        token = self.token()
        return SignInRequired(EXPIRED if token is not None else NOT_SIGNED_IN)

    async def ensure_fresh(self) -> None:
        """Before a request: refresh a token close to expiry; fail clearly when there is none."""
        token = self._usable()
        if token is None:
            if self._fallback:
                return
            raise self._missing()
        if not needs_refresh(token):
            return
        try:
            await asyncio.to_thread(refresh_stored, self.ref)
        except RefreshUnavailable as exc:
            if token.expires_at > time.time():
                log.warning("%s; using the current token until it expires", exc)
                return
            raise
        except SignInRequired:
            if self._fallback:
                return
            raise
        self.token()

    async def after_unauthorized(self, request_headers: Mapping[str, str]) -> bool:
        """The server answered 401 to a request with these headers: refresh once; True when a
        retry can help (the caller retries once, and only once)."""
        sent_token = _sent_token(request_headers)
        token = self._usable()
        if token is None:
            if self._fallback and sent_token == self._fallback:
                return False  # the api_key itself was refused: an ordinary 401
            raise self._missing()
        if sent_token and sent_token != token.access_token:
            return True  # the login changed since the request was built
        try:
            await asyncio.to_thread(refresh_stored, self.ref, stale_access=sent_token, force=True)
        except SignInRequired:
            if self._fallback:
                return True  # the retry goes out with the api_key
            raise
        self.token()
        return True


def _sent_token(headers: Mapping[str, str]) -> str:
    """The credential a request carried: `Authorization: Bearer …`, or Anthropic's `x-api-key`."""
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    return headers.get("x-api-key", "")
