"""The Moonshot/Kimi API (`type = "kimi"`): Chat Completions with Kimi's extensions.

Differences from plain `openai_legacy`: reasoning always travels in `reasoning_content` (and is
sent back, which thinking models need across tool calls), thinking is switched with
`thinking.type` instead of `reasoning_effort`, and the session id is the prompt-cache key.
"""

from __future__ import annotations

from typing import Any

from ..config import ResolvedModel
from .openai_legacy import DEFAULT_REASONING_KEY, OpenAILegacyProvider


class KimiProvider(OpenAILegacyProvider):
    provider_type = "kimi"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("reasoning_key", None)
        super().__init__(reasoning_key=DEFAULT_REASONING_KEY, **kwargs)

    @classmethod
    def _options_from(cls, resolved: ResolvedModel) -> dict[str, Any]:
        return {}  # a configured `reasoning_key` does not apply: kimi always uses reasoning_content

    def _extra_body(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.thinking == "off":
            extra["thinking"] = {"type": "disabled"}
        elif self.thinking is not None:
            extra["thinking"] = {"type": "enabled"}
        if self.session_id:
            extra["prompt_cache_key"] = self.session_id
        return extra
