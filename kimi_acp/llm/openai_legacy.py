"""OpenAI-compatible Chat Completions streaming (`openai_legacy`); `kimi` builds on it.

The HTTP plumbing (client, SSE reading, error mapping) is `llm.http`'s; this module holds what is
specific to Chat Completions: the request body, message conversion, usage and tool-call assembly.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import ResolvedModel, model_sampling_overrides
from ..wire.types import (
    AudioURLPart,
    FunctionBody,
    ImageURLPart,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
    VideoURLPart,
)
from .errors import APIConnectionError, APIEmptyResponseError, ChatProviderError
from .http import HTTPChatProvider
from .types import ChatStream, Message, StreamPart, ToolSpec, token_count

logger = logging.getLogger(__name__)

DEFAULT_REASONING_KEY = "reasoning_content"


# --------------------------------------------------------------------------- request conversion


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _media_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, ImageURLPart):
        return {"type": "image_url", "image_url": _url_obj(part.image_url)}
    if isinstance(part, VideoURLPart):
        return {"type": "video_url", "video_url": _url_obj(part.video_url)}
    if isinstance(part, AudioURLPart):
        return {"type": "audio_url", "audio_url": _url_obj(part.audio_url)}
    return None


def _url_obj(media: Any) -> dict[str, Any]:
    return {"url": media.url}


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    parts = [p for p in message.content if not isinstance(p, ThinkPart)]
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        else:
            media = _media_part(part)
            if media is not None:
                out.append(media)
    return out


def _assistant_message(message: Message, reasoning_key: str | None) -> dict[str, Any]:
    parts = message.parts()
    text = "".join(p.text for p in parts if isinstance(p, TextPart))
    out: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        out["content"] = text or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"},
            }
            for call in message.tool_calls
        ]
    else:
        out["content"] = text
    if reasoning_key:
        think = "".join(p.think for p in parts if isinstance(p, ThinkPart))
        if think:
            out[reasoning_key] = think
    return out


def to_openai_messages(
    system_prompt: str, history: Sequence[Message], *, reasoning_key: str | None = None
) -> list[dict[str, Any]]:
    """Kimi-format history to Chat Completions messages.

    Think parts go back into `reasoning_key` only when one is given (kimi, or a configured key):
    servers that do not know the field may reject it.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for message in history:
        if message.role == "system":
            out.append({"role": "system", "content": message.text()})
        elif message.role == "user":
            out.append({"role": "user", "content": _user_content(message)})
        elif message.role == "assistant":
            out.append(_assistant_message(message, reasoning_key))
        elif message.role == "tool":
            # Media in a tool result (ReadMediaFile) goes as content parts, as Kimi sends it; else text.
            media = any(_media_part(p) is not None for p in message.parts() if not isinstance(p, (TextPart, ThinkPart)))
            content = _user_content(message) if media else message.text()
            out.append({"role": "tool", "tool_call_id": message.tool_call_id or "", "content": content})
    return out


def reported_cost(usage: Mapping[str, Any]) -> float | None:
    """What the request cost, when the server says so in its usage (OpenRouter's `cost`, in credits
    worth one US dollar each); None otherwise."""
    cost = usage.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None


def usage_from_openai(usage: Mapping[str, Any]) -> TokenUsage:
    """OpenAI usage → TokenUsage; cached tokens from `prompt_tokens_details` or Moonshot's field."""
    prompt = token_count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or token_count(usage.get("cached_tokens"))
    return TokenUsage(
        input_other=max(prompt - cached, 0),
        input_cache_read=cached,
        output=token_count(usage.get("completion_tokens")),
    )


# --------------------------------------------------------------------------- tool-call assembly


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    emitted: bool = False


class ToolCallAssembler:
    """Turns `delta.tool_calls` fragments into ToolCall + ToolCallPart runs, one call at a time.

    The first call seen streams live. Deltas of other indexes are buffered and emitted, in index
    order, by `finish()`: the consumer treats a new ToolCall as "the previous one is complete", so
    parts of one call must never be separated by another call's parts. A live call is announced
    once its first argument fragment arrives (so a name split over chunks is complete).
    """

    def __init__(self) -> None:
        self._calls: dict[int, _PendingCall] = {}
        self._live: int | None = None
        self._last_index: int | None = None

    @property
    def started(self) -> bool:
        return bool(self._calls)

    def add(self, deltas: Sequence[Any]) -> list[StreamPart]:
        indexed = [(self._index_of(d), d) for d in deltas if isinstance(d, dict)]
        for index, delta in sorted(indexed, key=lambda pair: pair[0]):
            self._apply(index, delta)
            if self._live is None:
                self._live = index
        return self._drain(self._live, force=False) if self._live is not None else []

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        if self._live is not None:
            out += self._drain(self._live, force=True)
        for index in sorted(self._calls):
            if index == self._live:
                continue
            call = self._calls[index]
            arguments = "".join(call.fragments) or None
            out.append(
                ToolCall(
                    id=call.id or _new_call_id(), function=FunctionBody(name=call.name, arguments=arguments)
                )
            )
        self._calls.clear()
        self._live = None
        return out

    def _index_of(self, delta: dict[str, Any]) -> int:
        index = delta.get("index")
        if isinstance(index, int):
            self._last_index = index
            return index
        # Some servers omit `index`: a new id opens a new call, anything else continues the last.
        call_id = delta.get("id")
        known = {c.id: i for i, c in self._calls.items() if c.id}
        if call_id and call_id in known:
            index = known[call_id]
        elif call_id or self._last_index is None:
            index = max(self._calls, default=-1) + 1
        else:
            index = self._last_index
        self._last_index = index
        return index

    def _apply(self, index: int, delta: dict[str, Any]) -> None:
        call = self._calls.setdefault(index, _PendingCall())
        if isinstance(delta.get("id"), str) and delta["id"] and not call.id:
            call.id = delta["id"]
        function: dict[str, Any] = delta["function"] if isinstance(delta.get("function"), dict) else {}
        name = function.get("name")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send parsed arguments
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(name, str) and name and name != call.name and not call.emitted and not call.fragments:
            # A name may be split over deltas, but only before argument text; a repeat is ignored.
            call.name += name
        if isinstance(arguments, str) and arguments:
            call.fragments.append(arguments)

    def _drain(self, index: int, *, force: bool) -> list[StreamPart]:
        call = self._calls[index]
        out: list[StreamPart] = []
        if not call.emitted:
            if not force and not (call.name and call.fragments):
                return out
            first = call.fragments.pop(0) if call.fragments else None
            out.append(
                ToolCall(id=call.id or _new_call_id(), function=FunctionBody(name=call.name, arguments=first))
            )
            call.emitted = True
        out += [ToolCallPart(arguments_part=fragment) for fragment in call.fragments]
        call.fragments.clear()
        return out


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# --------------------------------------------------------------------------- the provider


class OpenAILegacyProvider(HTTPChatProvider):
    """Chat Completions over SSE for any OpenAI-compatible server."""

    provider_type = "openai_legacy"

    def __init__(self, *, reasoning_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reasoning_key = reasoning_key or DEFAULT_REASONING_KEY
        # Only echo reasoning back when the user said the server knows the field.
        self._send_reasoning = reasoning_key is not None

    @classmethod
    def _options_from(cls, resolved: ResolvedModel) -> dict[str, Any]:
        return {"reasoning_key": resolved.provider.reasoning_key}

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def build_body(
        self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The JSON request body (exposed for tests and debugging)."""
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": to_openai_messages(
                system_prompt, history, reasoning_key=self.reasoning_key if self._send_reasoning else None
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = openai_tools(tools)
        sampling = model_sampling_overrides()
        for key in ("temperature", "top_p"):
            if key in sampling:
                body[key] = sampling[key]
        max_tokens = sampling.get("max_completion_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0:
            body["max_tokens"] = max_tokens
        body.update(self._extra_body())
        return body

    def _extra_body(self) -> dict[str, Any]:
        """Provider-specific fields; openai_legacy maps a thinking effort to `reasoning_effort`."""
        if self.thinking in ("low", "medium", "high"):
            return {"reasoning_effort": self.thinking}
        return {}

    async def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[list[StreamPart]]:
        calls = ToolCallAssembler()
        deferred: list[StreamPart] = []  # text that arrives while a tool call is still open
        state = {"text": False, "complete": False}
        on_event = lambda event, out: self._on_event(chat, event, calls, deferred, state, out)  # noqa: E731
        async for out in self._part_batches(body, on_event, with_done=True):
            yield out
        if not state["complete"]:
            raise APIConnectionError("the connection closed before the response was complete")
        saw_call = calls.started
        tail = calls.finish() + deferred
        if tail:
            yield tail
        if not (state["text"] or saw_call):
            raise APIEmptyResponseError("the model returned an empty response (no text and no tool call)")

    def _on_event(
        self,
        chat: ChatStream,
        event: Any,
        calls: ToolCallAssembler,
        deferred: list[StreamPart],
        state: dict[str, bool],
        out: list[StreamPart],
    ) -> None:
        """One SSE event of the reply: its parts appended to `out` (or to `deferred`)."""
        if event.is_done:
            state["complete"] = True
            return
        chunk = self._decode(event.data)
        if chat.id is None and isinstance(chunk.get("id"), str) and chunk["id"]:
            chat.id = chunk["id"]
        choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        usage = chunk.get("usage") or choice.get("usage")
        if isinstance(usage, dict):
            chat.usage = usage_from_openai(usage)
            chat.cost = reported_cost(usage)
        if choice.get("finish_reason"):
            state["complete"] = True
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            return
        for part in self._content_parts(delta):
            if isinstance(part, TextPart):
                state["text"] = True
            if calls.started:
                deferred.append(part)
            else:
                out.append(part)
        if isinstance(delta.get("tool_calls"), list) and delta["tool_calls"]:
            out.extend(calls.add(delta["tool_calls"]))

    def _decode(self, data: str) -> dict[str, Any]:
        chunk = super()._decode(data)
        error = chunk.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise ChatProviderError(self._redact(f"error in streamed response: {message or error}"))
        return chunk

    def _content_parts(self, delta: dict[str, Any]) -> list[StreamPart]:
        out: list[StreamPart] = []
        reasoning = delta.get(self.reasoning_key)
        if isinstance(reasoning, str) and reasoning:
            out.append(ThinkPart(think=reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.append(TextPart(text=content))
        return out
