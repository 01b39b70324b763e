"""What providers consume (messages, tool specs) and produce (a stream of parts)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union

from pydantic import BaseModel, ConfigDict

from ..wire.types import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
    VideoURLPart,
)

Role = Literal["system", "user", "assistant", "tool"]
ThinkingEffort = Literal["off", "low", "medium", "high"]

# A streamed reply is a sequence of these. A ToolCall opens a call (its `arguments` may hold the
# first fragment or None); each following ToolCallPart appends to the arguments of that call.
StreamPart = Union[TextPart, ThinkPart, ImageURLPart, AudioURLPart, VideoURLPart, ToolCall, ToolCallPart]


class Message(BaseModel):
    """One message of the model history, as stored in `context.jsonl` (Kimi's format)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    role: Role
    content: Union[str, list[ContentPart]] = ""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def text(self) -> str:
        """Concatenated text parts (think parts excluded)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    def parts(self) -> list[ContentPart]:
        """The content as a list of parts, whatever form it was stored in."""
        if isinstance(self.content, str):
            return [TextPart(text=self.content)] if self.content else []
        return list(self.content)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class ChatStream:
    """One streamed reply. Iterate it for parts; `id` and `usage` are known once it is exhausted.

    Providers build it around an async generator that fills in `id`/`usage` as it goes. Nothing
    touches the network until iteration starts; `aclose()` releases the connection early.
    """

    def __init__(self, parts: AsyncIterator[StreamPart] | None = None) -> None:
        self._parts = parts
        self.id: str | None = None
        self.usage: TokenUsage | None = None

    def bind(self, parts: AsyncIterator[StreamPart]) -> ChatStream:
        self._parts = parts
        return self

    def __aiter__(self) -> AsyncIterator[StreamPart]:
        if self._parts is None:
            raise RuntimeError("ChatStream has no source")
        return self._parts

    async def aclose(self) -> None:
        closer = getattr(self._parts, "aclose", None)
        if closer is not None:
            await closer()


class ChatProvider(Protocol):
    """A chat model that streams. Errors are `llm.errors.ChatProviderError` subclasses."""

    provider_type: str
    model_name: str
    thinking: ThinkingEffort | None

    def stream(self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]) -> ChatStream:
        """Start one completion over the history (system prompt first)."""
        ...

    async def aclose(self) -> None:
        """Release pooled connections."""
        ...
