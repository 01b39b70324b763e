"""The Kimi Code service's fixed facts, shared with Kimi Code CLI so both read the same login."""

from __future__ import annotations

import os

CLIENT_ID = "17e5f671-d194-4dfb-9706-5516cb48c098"  # the public client: no secret
OAUTH_KEY = "oauth/kimi-code"  # `oauth = {storage = "file", key = "oauth/kimi-code"}`
DEFAULT_OAUTH_HOST = "https://auth.kimi.com"
DEFAULT_BASE_URL = "https://api.kimi.com/coding/v1"
KEYRING_SERVICE = "kimi-code"
PLATFORM_ID = "kimi-code"
PROVIDER_KEY = f"managed:{PLATFORM_ID}"  # `[providers."managed:kimi-code"]`
FALLBACK_CONTEXT = 262144  # when the model list does not say (the config needs a positive size)


def oauth_host() -> str:
    """`KIMI_CODE_OAUTH_HOST`, else `KIMI_OAUTH_HOST`, else the production host (no trailing /)."""
    host = os.environ.get("KIMI_CODE_OAUTH_HOST") or os.environ.get("KIMI_OAUTH_HOST") or DEFAULT_OAUTH_HOST
    return host.rstrip("/")


def base_url() -> str:
    """The models' base URL; `KIMI_CODE_BASE_URL` overrides it, as in Kimi Code CLI."""
    return (os.environ.get("KIMI_CODE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def model_key(model_id: str) -> str:
    """The `[models.<key>]` name login writes: `kimi-code/<model id>`."""
    return f"{PLATFORM_ID}/{model_id}"
