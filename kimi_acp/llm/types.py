"""What providers consume (messages, tool specs) and produce (a stream of parts)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

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
StreamPart = TextPart | ThinkPart | ImageURLPart | AudioURLPart | VideoURLPart | ToolCall | ToolCallPart


def arguments_object(arguments: str | None) -> dict[str, Any]:
    """A tool call's JSON arguments as the object the providers' APIs want; {} when they are
    missing, malformed or not an object."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int:
    """A token figure from a provider's usage object; 0 when it is missing or not a number."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class Message(BaseModel):
    """One message of the model history, as stored in `context.jsonl` (Kimi's format)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    role: Role
    content: str | list[ContentPart] = ""
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
    """One streamed reply. Iterate it for parts; `id`, `usage` and `cost` are known once it is exhausted.

    Providers build it around an async generator that fills in `id`/`usage` as it goes: either of
    parts (`bind`) or of batches of parts (`bind_batches`, the HTTP providers: one batch per
    network read). Iterating yields one part per model delta either way; `batches()` yields the
    batches (a single part each for a source of parts), so a consumer can merge what arrived
    together. Nothing touches the network until iteration starts; `aclose()` releases the
    connection early.
    """

    def __init__(self, parts: AsyncIterator[StreamPart] | None = None) -> None:
        self._parts = parts
        self._batches: AsyncIterator[list[StreamPart]] | None = None
        self.id: str | None = None
        self.usage: TokenUsage | None = None
        self.cost: float | None = None  # in USD, when the provider reports what the request cost (OpenRouter)

    def bind(self, parts: AsyncIterator[StreamPart]) -> ChatStream:
        self._parts = parts
        return self

    def bind_batches(self, batches: AsyncIterator[list[StreamPart]]) -> ChatStream:
        self._batches = batches
        return self

    def __aiter__(self) -> AsyncIterator[StreamPart]:
        if self._batches is not None:
            return self._flatten(self._batches)
        if self._parts is None:
            raise RuntimeError("ChatStream has no source")
        return self._parts

    def batches(self) -> AsyncIterator[list[StreamPart]]:
        """The parts grouped as they arrived (one network read each, for the HTTP providers)."""
        if self._batches is not None:
            return self._batches
        return self._singles(aiter(self))

    @staticmethod
    async def _flatten(batches: AsyncIterator[list[StreamPart]]) -> AsyncIterator[StreamPart]:
        async for batch in batches:
            for part in batch:
                yield part

    @staticmethod
    async def _singles(parts: AsyncIterator[StreamPart]) -> AsyncIterator[list[StreamPart]]:
        async for part in parts:
            yield [part]

    async def aclose(self) -> None:
        source = self._batches if self._batches is not None else self._parts
        closer = getattr(source, "aclose", None)
        if closer is not None:
            await closer()


def merge_deltas(batch: list[StreamPart]) -> list[StreamPart]:
    """Adjacent deltas of one kind in one batch joined into one part: text, unsigned thinking, and
    the argument fragments of the open tool call.

    What the user reads is the same; the parts after the model (the stream, the session record,
    the ACP and Wire messages) are paid once per network read instead of once per delta.
    """
    if len(batch) < 2:
        return batch
    out: list[StreamPart] = []
    run: list[Any] = []  # adjacent parts of one kind, still to be joined

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run and type(run[0]) is TextPart:
            out.append(TextPart(text="".join(p.text for p in run)))
        elif run and type(run[0]) is ThinkPart:
            out.append(ThinkPart(think="".join(p.think for p in run)))
        elif run:
            out.append(ToolCallPart(arguments_part="".join(p.arguments_part or "" for p in run)))
        run.clear()

    for part in batch:
        kind = type(part)
        if kind is TextPart or kind is ToolCallPart or (type(part) is ThinkPart and not part.encrypted):
            if run and type(run[0]) is not kind:
                close()
            run.append(part)
        else:
            close()
            out.append(part)
    close()
    return out


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
