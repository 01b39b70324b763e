"""The MCP SDK's OAuth provider with two hooks: after it loads stored tokens, after a refresh.

kimi-acp reads a stored token's absolute expiry back into the provider (the SDK keeps only a
relative `expires_in`) and looks up the token endpoint before a refresh (mcp/oauth.py). The SDK
offers no hook for either, so `hooked_provider_class()` overrides two private methods,
`OAuthClientProvider._initialize` and `_handle_refresh_response`, to call ours after them.

Checked with mcp 1.24–1.30. Another release, a provider without those methods, or
`KIMI_PLAIN_STARTUP` gives the SDK's provider as it is: an expired stored token is then refreshed
after the server's first 401 instead of before the first request, and nothing else changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import MCP_SDK, applies, installed_version

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider

TRICK = "mcp-oauth-hooks"
PRIVATE_METHODS = ("_initialize", "_handle_refresh_response")


def hooked_provider_class() -> type[OAuthClientProvider]:
    """A subclass of the SDK's `OAuthClientProvider` whose `after_initialize()` and
    `after_refresh(refreshed)` run when checked, else the SDK's class itself."""
    from mcp.client.auth import OAuthClientProvider

    if not applies(TRICK, (MCP_SDK, installed_version("mcp", "mcp"))):
        return OAuthClientProvider
    if not all(callable(getattr(OAuthClientProvider, name, None)) for name in PRIVATE_METHODS):
        from . import fell_back

        fell_back(TRICK, AttributeError(f"OAuthClientProvider has no {' / '.join(PRIVATE_METHODS)}"))
        return OAuthClientProvider

    class HookedProvider(OAuthClientProvider):
        async def after_initialize(self) -> None:
            """Stored tokens are loaded into `self.context`."""

        def after_refresh(self, refreshed: bool) -> None:
            """A refresh answer was handled."""

        async def _initialize(self) -> None:
            await super()._initialize()
            await self.after_initialize()

        async def _handle_refresh_response(self, response: Any) -> bool:
            refreshed = await super()._handle_refresh_response(response)
            self.after_refresh(refreshed)
            return refreshed

    return HookedProvider
