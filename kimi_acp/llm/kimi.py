"""The Moonshot/Kimi API (`type = "kimi"`): Chat Completions with Kimi's extensions.

Differences from plain `openai_legacy`: reasoning always travels in `reasoning_content` (and is
sent back, which thinking models need across tool calls), thinking is switched with
`thinking.type` instead of `reasoning_effort`, and the session id is the prompt-cache key.
"""

from __future__ import annotations

from typing import Any

from ..config import ResolvedModel
from .openai_legacy import DEFAULT_REASONING_KEY, OpenAILegacyProvider
from .types import ThinkingEffort


class KimiProvider(OpenAILegacyProvider):
    provider_type = "kimi"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("reasoning_key", None)
        super().__init__(reasoning_key=DEFAULT_REASONING_KEY, **kwargs)

    @classmethod
    def from_resolved(
        cls,
        resolved: ResolvedModel,
        *,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> KimiProvider:
        provider = resolved.provider
        return cls(
            model=resolved.model.model,
            base_url=provider.base_url,
            api_key=provider.api_key.get_secret_value(),
            custom_headers=provider.custom_headers,
            thinking=thinking,
            session_id=session_id,
            **kwargs,
        )

    def _extra_body(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.thinking == "off":
            extra["thinking"] = {"type": "disabled"}
        elif self.thinking is not None:
            extra["thinking"] = {"type": "enabled"}
        if self.session_id:
            extra["prompt_cache_key"] = self.session_id
        return extra
