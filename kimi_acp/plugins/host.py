"""The host values a plugin may ask to have injected: the default model's `api_key` and `base_url`.

A provider signed in with a Kimi account gives its current access token (refreshed when close to
expiry), as Kimi Code CLI does; an API-key provider its key (KIMI_API_KEY & co. applied).
"""

from __future__ import annotations

from typing import Any

from ..config import resolve_model
from ..util.secrets import register


async def host_values(config: Any) -> dict[str, str]:
    if config is None:
        return {}
    resolved = resolve_model(config)
    if resolved is None:
        return {}
    provider = resolved.provider
    values: dict[str, str] = {}
    if provider.base_url:
        values["base_url"] = provider.base_url
    key = provider.api_key.get_secret_value()
    if provider.oauth is not None:
        from ..auth.services import service_auth

        account = await service_auth(provider.oauth)
        if account is not None:
            key = account.token
    if key:
        values["api_key"] = key
        register([key])  # what a plugin is given never comes back in a result or a log line
    return values
