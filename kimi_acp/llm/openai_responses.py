"""The OpenAI Responses API, streamed (`type = "openai_responses"`).

`POST {base_url}/responses` with `stream: true` and `store: false`: every request carries the whole
history, as for the other providers (no `previous_response_id`), so a session moves freely between
providers and nothing is kept on OpenAI's side. Reasoning summaries are shown as thinking; with
thinking on, the encrypted reasoning comes back too and goes out again with the next request, so
the model keeps its reasoning across tool calls. Tool results are `function_call_output` items.

The HTTP plumbing (client, SSE reading, status → error mapping) is `llm.http`'s.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import model_sampling_overrides
from ..wire.types import (
    FunctionBody,
    ImageURLPart,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
)
from .errors import APIConnectionError, APIEmptyResponseError, APIStatusError, ChatProviderError
from .http import HTTPChatProvider
from .types import ChatStream, Message, StreamPart, ToolSpec, token_count

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# OpenAI's encrypted reasoning is a Fernet token ("gAAAAA..."). Only such a value goes back as a
# reasoning item: a think part signed by another provider (an Anthropic signature) would be refused.
OPENAI_ENCRYPTED_PREFIX = "gAAAAA"
# Codes of errors reported inside the stream (`error`, `response.failed`) that mean an HTTP status.
_ERROR_STATUS = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "internal_error": 500,
    "server_is_overloaded": 503,
    "slow_down": 503,
    "context_length_exceeded": 400,
}


# --------------------------------------------------------------------------- request conversion


def _input_content(message: Message) -> list[dict[str, Any]]:
    """A user message's parts as Responses input content (text and images; audio and video have
    no input type here and are left out)."""
    out: list[dict[str, Any]] = []
    for part in message.parts():
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "input_image", "image_url": part.image_url.url, "detail": "auto"})
    return out


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    """An assistant message as output items: reasoning (when OpenAI's), text, function calls."""
    items: list[dict[str, Any]] = []
    parts = message.parts()
    for part in parts:
        if isinstance(part, ThinkPart) and part.encrypted and part.encrypted.startswith(OPENAI_ENCRYPTED_PREFIX):
            summary = [{"type": "summary_text", "text": part.think}] if part.think else []
            # No item id: with `store: false` the encrypted content is what counts (Codex sends
            # reasoning items the same way).
            items.append({"type": "reasoning", "summary": summary, "encrypted_content": part.encrypted})
    text = "".join(p.text for p in parts if isinstance(p, TextPart))
    if text:
        items.append({"type": "message", "role": "assistant", "content": text})
    for call in message.tool_calls or []:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.function.name,
                "arguments": call.function.arguments or "{}",
            }
        )
    return items


def _tool_output(message: Message) -> str | list[dict[str, Any]]:
    """A tool result: its text, or text and images (ReadMediaFile) as content items."""
    if any(isinstance(p, ImageURLPart) for p in message.parts()):
        return _input_content(message)
    return message.text()


def to_responses_input(history: Sequence[Message]) -> list[dict[str, Any]]:
    """Kimi-format history to Responses `input` items."""
    out: list[dict[str, Any]] = []
    for message in history:
        if message.role == "user":
            content = _input_content(message)
            if content:
                out.append({"type": "message", "role": "user", "content": content})
        elif message.role == "assistant":
            out.extend(_assistant_items(message))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            out.append({"type": "function_call_output", "call_id": call_id, "output": _tool_output(message)})
        elif message.role == "system":
            text = message.text()
            if text:
                out.append({"type": "message", "role": "system", "content": text})
    return out


def responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # Not strict: strict mode needs every property required and no additionalProperties, which
    # the tools' schemas do not promise.
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
        for t in tools
    ]


def usage_from_responses(usage: Mapping[str, Any]) -> TokenUsage:
    """Responses usage → TokenUsage; `input_tokens` includes the tokens read from and written to
    the prompt cache (`input_tokens_details`)."""
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    cached = token_count(details.get("cached_tokens"))
    written = token_count(details.get("cache_write_tokens"))
    return TokenUsage(
        input_other=max(token_count(usage.get("input_tokens")) - cached - written, 0),
        input_cache_read=cached,
        input_cache_creation=written,
        output=token_count(usage.get("output_tokens")),
    )


# --------------------------------------------------------------------------- the stream


@dataclass
class _Call:
    call_id: str
    name: str
    fragments: list[str] = field(default_factory=list)
    final: str | None = None  # the whole arguments, from `...arguments.done` / `output_item.done`
    done: bool = False
    streamed: bool = False  # a delta of it went out live


@dataclass
class _Reply:
    """What one streamed response has shown so far."""

    complete: bool = False
    saw_text: bool = False
    saw_call: bool = False
    thought: bool = False  # thinking text went out (the next summary part gets a blank line first)
    live: str | None = None  # item id of the function call whose ToolCall went out last, still open
    calls: dict[str, _Call] = field(default_factory=dict)
    waiting: list[str] = field(default_factory=list)  # calls announced while another one was open
    deferred: list[StreamPart] = field(default_factory=list)  # text/thinking while a call is open
    text_items: set[str] = field(default_factory=set)  # message items that streamed deltas
    think_items: set[str] = field(default_factory=set)  # reasoning items that streamed deltas


class OpenAIResponsesProvider(HTTPChatProvider):
    """The Responses API over SSE."""

    provider_type = "openai_responses"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.base_url:
            self.base_url = DEFAULT_BASE_URL

    @property
    def url(self) -> str:
        return f"{self.base_url}/responses"

    def build_body(
        self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The JSON request body (exposed for tests and debugging)."""
        body: dict[str, Any] = {
            "model": self.model_name,
            "input": to_responses_input(history),
            "stream": True,
            "store": False,
        }
        if system_prompt:
            body["instructions"] = system_prompt
        if tools:
            body["tools"] = responses_tools(tools)
            body["parallel_tool_calls"] = True
        if self.thinking in ("low", "medium", "high"):
            body["reasoning"] = {"effort": self.thinking, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        if self.session_id:
            body["prompt_cache_key"] = self.session_id
        sampling = model_sampling_overrides()
        for key in ("temperature", "top_p"):
            if key in sampling:
                body[key] = sampling[key]
        max_tokens = sampling.get("max_completion_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0:
            body["max_output_tokens"] = max_tokens
        return body

    async def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[list[StreamPart]]:
        state = _Reply()
        async for out in self._part_batches(body, lambda event, out: self._on_event(chat, event, state, out)):
            yield out
        if not state.complete:
            raise APIConnectionError("the connection closed before the response was complete")
        tail: list[StreamPart] = []
        if state.live is not None:
            self._close_live(state, tail)
        for item_id in state.waiting:
            call = state.calls[item_id]
            tail.append(self._tool_call(call, "".join(call.fragments) or call.final))
        state.waiting.clear()
        tail += state.deferred
        if tail:
            yield tail
        if not (state.saw_text or state.saw_call):
            raise APIEmptyResponseError("the model returned an empty response (no text and no tool call)")

    # -- one event

    def _on_event(self, chat: ChatStream, event: Any, state: _Reply, out: list[StreamPart]) -> None:
        """One SSE event of the response: its parts appended to `out` (or kept back)."""
        data = self._decode(event.data)
        kind = data.get("type") or event.event
        # The frequent ones first: one check per delta.
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = data.get("delta")
            if isinstance(delta, str) and delta:
                state.saw_text = True
                state.text_items.add(str(data.get("item_id")))
                self._emit(state, out, TextPart(text=delta))
        elif kind == "response.function_call_arguments.delta":
            delta = data.get("delta")
            call = state.calls.get(str(data.get("item_id")))
            if call is not None and isinstance(delta, str) and delta:
                if state.live == data.get("item_id"):
                    call.streamed = True
                    out.append(ToolCallPart(arguments_part=delta))
                else:
                    call.fragments.append(delta)
        elif kind == "response.reasoning_summary_text.delta" or kind == "response.reasoning_text.delta":
            delta = data.get("delta")
            if isinstance(delta, str) and delta:
                state.think_items.add(str(data.get("item_id")))
                state.thought = True
                self._emit(state, out, ThinkPart(think=delta))
        elif kind == "response.reasoning_summary_part.added":
            if state.thought:  # summaries are paragraphs: keep them apart
                self._emit(state, out, ThinkPart(think="\n\n"))
        elif kind == "response.output_item.added":
            self._item_added(data.get("item"), state, out)
        elif kind == "response.function_call_arguments.done":
            call = state.calls.get(str(data.get("item_id")))
            if call is not None and isinstance(data.get("arguments"), str):
                call.final = data["arguments"]
        elif kind == "response.output_item.done":
            self._item_done(data.get("item"), state, out)
        elif kind == "response.created" or kind == "response.in_progress":
            response = data.get("response")
            if isinstance(response, Mapping) and isinstance(response.get("id"), str):
                chat.id = response["id"]
        elif kind == "response.completed" or kind == "response.incomplete":
            self._finished(chat, data.get("response"), state)
        elif kind == "response.failed":
            response = data.get("response")
            raise self._stream_error(response.get("error") if isinstance(response, Mapping) else None)
        elif kind == "error":
            raise self._stream_error(data)

    def _emit(self, state: _Reply, out: list[StreamPart], part: StreamPart) -> None:
        # A text or thinking part would close the open call for the consumer: wait for it to end.
        if state.live is not None:
            state.deferred.append(part)
        else:
            out.append(part)

    def _item_added(self, item: Any, state: _Reply, out: list[StreamPart]) -> None:
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            return
        item_id = str(item.get("id") or item.get("call_id") or len(state.calls))
        call = _Call(call_id=str(item.get("call_id") or item_id), name=str(item.get("name") or ""))
        if isinstance(item.get("arguments"), str) and item["arguments"]:
            call.fragments.append(item["arguments"])
        state.calls[item_id] = call
        state.saw_call = True
        if state.live is None and not state.waiting:
            self._open(item_id, state, out)
        else:
            state.waiting.append(item_id)

    def _open(self, item_id: str, state: _Reply, out: list[StreamPart]) -> None:
        call = state.calls[item_id]
        first = "".join(call.fragments) or None
        call.fragments.clear()
        call.streamed = first is not None
        out.append(self._tool_call(call, first))
        state.live = item_id

    def _close_live(self, state: _Reply, out: list[StreamPart]) -> None:
        call = state.calls[state.live] if state.live is not None else None
        if call is not None and not call.streamed and call.final:
            out.append(ToolCallPart(arguments_part=call.final))  # a server that sent no deltas
        state.live = None

    def _item_done(self, item: Any, state: _Reply, out: list[StreamPart]) -> None:
        if not isinstance(item, Mapping):
            return
        itype = item.get("type")
        item_id = str(item.get("id") or item.get("call_id") or "")
        if itype == "function_call":
            call = state.calls.get(item_id)
            if call is None:  # never announced (a proxy that sends only `done`)
                call = _Call(call_id=str(item.get("call_id") or item_id), name=str(item.get("name") or ""))
                state.calls[item_id] = call
                state.saw_call = True
                state.waiting.append(item_id)
            call.done = True
            if isinstance(item.get("arguments"), str):
                call.final = item["arguments"]
            if state.live == item_id:
                self._close_live(state, out)
                self._advance(state, out)
        elif itype == "reasoning":
            if item_id not in state.think_items:  # no deltas came: the summary whole
                summary = item.get("summary")
                if not isinstance(summary, list):
                    summary = []
                text = "\n\n".join(s.get("text", "") for s in summary if isinstance(s, Mapping) and s.get("text"))
                if text:
                    if state.thought:
                        text = "\n\n" + text
                    state.thought = True
                    self._emit(state, out, ThinkPart(think=text))
            encrypted = item.get("encrypted_content")
            if isinstance(encrypted, str) and encrypted:
                self._emit(state, out, ThinkPart(think="", encrypted=encrypted))
        elif itype == "message" and item_id not in state.text_items:
            content = item.get("content")
            if not isinstance(content, list):
                content = []
            text = "".join(
                c.get("text") or c.get("refusal") or ""
                for c in content
                if isinstance(c, Mapping) and c.get("type") in ("output_text", "refusal")
            )
            if text:
                state.saw_text = True
                self._emit(state, out, TextPart(text=text))

    def _advance(self, state: _Reply, out: list[StreamPart]) -> None:
        """The open call ended: what waited goes out (finished calls whole), then the next call
        still streaming becomes the open one."""
        out.extend(state.deferred)
        state.deferred.clear()
        while state.waiting:
            item_id = state.waiting.pop(0)
            call = state.calls[item_id]
            if call.done:
                out.append(self._tool_call(call, "".join(call.fragments) or call.final))
                continue
            self._open(item_id, state, out)
            return

    @staticmethod
    def _tool_call(call: _Call, arguments: str | None) -> ToolCall:
        return ToolCall(id=call.call_id, function=FunctionBody(name=call.name, arguments=arguments))

    def _finished(self, chat: ChatStream, response: Any, state: _Reply) -> None:
        if not isinstance(response, Mapping):
            state.complete = True
            return
        if isinstance(response.get("id"), str):
            chat.id = response["id"]
        if isinstance(response.get("usage"), Mapping):
            chat.usage = usage_from_responses(response["usage"])
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason == "content_filter":
            raise ChatProviderError("OpenAI stopped the response: its content filter was triggered (content_filter)")
        state.complete = True  # `max_output_tokens`: the reply so far is the reply

    def _stream_error(self, error: Any) -> ChatProviderError:
        error = error if isinstance(error, Mapping) else {}
        code = str(error.get("code") or error.get("type") or "error")
        message = self._redact(f"{code}: {error.get('message') or 'error in streamed response'}")
        status = _ERROR_STATUS.get(code)
        return APIStatusError(status, message) if status else ChatProviderError(message)
