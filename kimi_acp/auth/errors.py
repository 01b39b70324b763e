"""Why a Kimi account cannot be used. Messages are safe to show: they never contain a token.

`SignInRequired` and `RefreshUnavailable` are provider errors (a model request fails with them),
so they live with the provider errors in kimi_acp/errors.py."""

from __future__ import annotations

from ..errors import AccountError


class OAuthError(AccountError):
    """The OAuth service answered something unusable (device flow, refresh)."""


class RefreshRejected(OAuthError):
    """The service refused the refresh token (revoked, expired, already spent)."""


class KeyringUnavailable(OAuthError):
    """`storage = "keyring"` but no usable keyring (package missing or no backend)."""
