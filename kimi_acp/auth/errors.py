"""Why a Kimi account cannot be used. Messages are safe to show: they never contain a token."""

from __future__ import annotations

from ..llm.errors import APIConnectionError, APIStatusError

SIGN_IN_AGAIN = "Run `kimi login` to sign in again."


class OAuthError(Exception):
    """The OAuth service answered something unusable (device flow, refresh)."""


class RefreshRejected(OAuthError):
    """The service refused the refresh token (revoked, expired, already spent)."""


class SignInRequired(APIStatusError):
    """The user must sign in again: no token, or one the service refuses and cannot be refreshed.

    An `APIStatusError` with status 401 so that the agent core treats it as a final provider
    error (never retried); the front ends map it to Wire -32004 and ACP `auth_required`.
    """

    def __init__(self, reason: str) -> None:
        text = reason.strip()
        if SIGN_IN_AGAIN not in text:
            text = f"{text.rstrip('.')}. {SIGN_IN_AGAIN}"
        super().__init__(401, text)


class RefreshUnavailable(APIConnectionError):
    """The OAuth service could not be reached to refresh the token; worth retrying later."""


class KeyringUnavailable(OAuthError):
    """`storage = "keyring"` but no usable keyring (package missing or no backend)."""
