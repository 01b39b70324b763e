"""The state of a Kimi account login, without its secrets: for `kimi info` and the ACP gate."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from ..config import OAuthRef
from .errors import KeyringUnavailable
from .source import is_rejected
from .tokens import load_token


@dataclass(frozen=True)
class LoginStatus:
    signed_in: bool
    detail: str  # e.g. "signed in with Kimi account (expires 2026-12-01 14:00 UTC)"


def login_status(ref: OAuthRef, *, now: float | None = None) -> LoginStatus:
    """Whether a request could go out (a token, or one that can be refreshed), in words."""
    try:
        token = load_token(ref)
    except KeyringUnavailable as exc:
        return LoginStatus(False, f"not usable: {exc}")
    if token is None or not (token.access_token or token.refresh_token):
        return LoginStatus(False, "not signed in (run `kimi login`)")
    if is_rejected(ref.key, token):
        return LoginStatus(False, "sign-in expired or revoked (run `kimi login`)")
    now = time.time() if now is None else now
    if token.expires_at:
        when = datetime.fromtimestamp(token.expires_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if token.expires_at <= now:
            if not token.refresh_token:
                return LoginStatus(False, f"sign-in expired {when} (run `kimi login`)")
            return LoginStatus(True, f"signed in with Kimi account (token expired {when}; refreshed on next use)")
        return LoginStatus(True, f"signed in with Kimi account (expires {when})")
    return LoginStatus(True, "signed in with Kimi account")
