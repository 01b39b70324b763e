"""The LLM provider layer: `create_provider` builds a `ChatProvider` for a resolved model.

Provider modules are imported only when one is created, so importing this package stays cheap
(no httpx) for code paths that never talk to a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The types are defined with the config, which rejects any other at load (see config.py).
from ..config import PROVIDER_TYPES, PUBLIC_PROVIDER_TYPES, TEST_PROVIDER_TYPES
from .errors import ChatProviderError

if TYPE_CHECKING:
    from ..config import ResolvedModel
    from .http import HTTPChatProvider
    from .types import ChatProvider, ThinkingEffort

__all__ = [
    "PROVIDER_TYPES", "PUBLIC_PROVIDER_TYPES", "TEST_PROVIDER_TYPES", "create_provider", "thinking_effort",
]


def thinking_effort(resolved: ResolvedModel, thinking: bool | None) -> ThinkingEffort | None:
    """A model that thinks (`ResolvedModel.thinks`) → "high"; an explicit False → "off";
    otherwise None (the provider's default)."""
    if resolved.thinks(thinking):
        return "high"
    if thinking is False:
        return "off"
    return None


def create_provider(
    resolved: ResolvedModel, *, thinking: bool | None = None, session_id: str | None = None
) -> ChatProvider:
    """A provider for `resolved`; raises `ChatProviderError` for an unsupported or incomplete one."""
    ptype = resolved.provider.type
    effort = thinking_effort(resolved, thinking)
    if ptype == "_echo":
        from .echo import EchoProvider

        return EchoProvider(model_name=resolved.model.model or "echo", thinking=effort)
    if ptype == "_scripted_echo":
        from .echo import ScriptedEchoProvider

        return ScriptedEchoProvider.from_env(resolved.provider.env, thinking=effort, session_id=session_id)
    if ptype not in PROVIDER_TYPES:
        supported = ", ".join(PUBLIC_PROVIDER_TYPES)  # the test types are never suggested
        raise ChatProviderError(f"provider type {ptype!r} is not supported by kimi-acp (supported: {supported})")
    if not resolved.usable:
        raise ChatProviderError(
            f"model {resolved.alias!r} cannot be used: provider {resolved.provider_name!r} needs a base_url "
            "and the model needs a model name"
        )
    options = {"thinking": effort, "session_id": session_id, **_account_options(resolved)}
    return provider_class(ptype).from_resolved(resolved, **options)


# Each type that talks to a real model: its module here and its class, imported when a session
# first creates such a provider (the table names them so nothing is imported before).
PROVIDER_CLASSES: dict[str, tuple[str, str]] = {
    "kimi": ("kimi", "KimiProvider"),
    "openai_legacy": ("openai_legacy", "OpenAILegacyProvider"),
    "openai_responses": ("openai_responses", "OpenAIResponsesProvider"),
    "anthropic": ("anthropic", "AnthropicProvider"),
    "gemini": ("gemini", "GeminiProvider"),
    "google_genai": ("gemini", "GeminiProvider"),
    "vertexai": ("vertexai", "VertexAIProvider"),
}


def provider_module(ptype: str) -> str | None:
    """The module (`kimi_acp.llm.<name>`) of a type that talks to a real model over HTTP; None for
    the test types and anything unknown."""
    found = PROVIDER_CLASSES.get(ptype)
    return f"{__name__}.{found[0]}" if found else None


def provider_class(ptype: str) -> type[HTTPChatProvider]:
    """The class of a provider type: ChatProviderError for a type without one, never a guess."""
    module = provider_module(ptype)
    if module is None:
        raise ChatProviderError(f"provider type {ptype!r} has no provider class in kimi-acp")
    import importlib

    # The table names HTTP providers only (checked by tests/llm/test_factory.py).
    found: type[HTTPChatProvider] = getattr(importlib.import_module(module), PROVIDER_CLASSES[ptype][1])
    return found


def _account_options(resolved: ResolvedModel) -> dict[str, Any]:
    """A Kimi account's token source for a provider with `oauth = {storage, key}`."""
    ref = resolved.provider.oauth
    if ref is None:
        return {}
    from ..auth.source import OAuthTokenSource

    return {"token_source": OAuthTokenSource(ref, fallback_api_key=resolved.provider.api_key.get_secret_value())}
