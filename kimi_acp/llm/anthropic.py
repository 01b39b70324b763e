"""The Anthropic Messages API, streamed (`type = "anthropic"`).

Converts Kimi-format history to Messages blocks (think parts become signed `thinking` blocks,
tool results become user `tool_result` blocks) and the event stream back to parts. Prompt
caching is opt-in on this API, so the system prompt, the tool list and the last message carry an
ephemeral `cache_control` breakpoint.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
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
from .types import ChatStream, Message, StreamPart, ToolSpec, arguments_object

logger = logging.getLogger(__name__)

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 32_000
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16_000}
_MIN_THINKING_BUDGET = 1024
_CACHE = {"type": "ephemeral"}
_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+/-]+);base64,(?P<data>.*)$", re.DOTALL)
OPENAI_ENCRYPTED_PREFIX = "gAAAAA"  # llm/openai_responses.py: a Fernet token, not an Anthropic signature


# --------------------------------------------------------------------------- request conversion


def _image_block(part: ImageURLPart) -> dict[str, Any]:
    url = part.image_url.url
    match = _DATA_URL.match(url)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match["media"], "data": match["data"]},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts():
        if isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            blocks.append(_image_block(part))
        # Audio/video have no Messages equivalent; think parts of user messages mean nothing.
    return blocks


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    think: list[str] = []
    signature: str | None = None

    def close_thinking() -> None:
        nonlocal think, signature
        # Unsigned thinking (e.g. from another provider's turn) would be rejected: drop it.
        if signature:
            blocks.append({"type": "thinking", "thinking": "".join(think), "signature": signature})
        think, signature = [], None

    for part in message.parts():
        if isinstance(part, ThinkPart):
            think.append(part.think)
            # OpenAI's encrypted reasoning (a session that used the Responses API) is no signature.
            if part.encrypted and not part.encrypted.startswith(OPENAI_ENCRYPTED_PREFIX):
                signature = part.encrypted
            continue
        close_thinking()
        if isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
    close_thinking()
    for call in message.tool_calls or []:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": arguments_object(call.function.arguments),
            }
        )
    return blocks


def _tool_result_block(message: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
    images = [p for p in message.parts() if isinstance(p, ImageURLPart)]
    text = message.text()
    if images:
        block["content"] = ([{"type": "text", "text": text}] if text else []) + [
            _image_block(p) for p in images
        ]
    elif text:
        block["content"] = text
    return block


def to_anthropic_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """Kimi-format history to Messages API turns (consecutive same-role turns are merged)."""
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in history:
        if message.role == "user":
            push("user", _user_blocks(message))
        elif message.role == "assistant":
            push("assistant", _assistant_blocks(message))
        elif message.role == "tool":
            push("user", [_tool_result_block(message)])
        elif message.role == "system":
            text = message.text()
            if text:
                push("user", [{"type": "text", "text": f"<system>{text}</system>"}])
    return out


def _mark_cache_breakpoint(messages: list[dict[str, Any]]) -> None:
    if not messages:
        return
    for block in reversed(messages[-1]["content"]):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            block["cache_control"] = dict(_CACHE)
            return


def usage_from_anthropic(usage: dict[str, int]) -> TokenUsage:
    return TokenUsage(
        input_other=usage.get("input_tokens", 0),
        input_cache_read=usage.get("cache_read_input_tokens", 0),
        input_cache_creation=usage.get("cache_creation_input_tokens", 0),
        output=usage.get("output_tokens", 0),
    )


# --------------------------------------------------------------------------- the provider


@dataclass
class _ReplyState:
    """What one streamed reply has shown so far."""

    usage: dict[str, int] = field(default_factory=dict)
    saw_text: bool = False
    saw_call: bool = False
    complete: bool = False
    # Input given whole at content_block_start (some proxies), used if no deltas follow.
    whole_input: dict[int, str] = field(default_factory=dict)



class AnthropicProvider(HTTPChatProvider):
    provider_type = "anthropic"

    def __init__(self, *, max_tokens: int = DEFAULT_MAX_TOKENS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.base_url:
            self.base_url = DEFAULT_BASE_URL
        self.max_tokens = max_tokens

    @property
    def url(self) -> str:
        return (
            f"{self.base_url}/messages" if self.base_url.endswith("/v1") else f"{self.base_url}/v1/messages"
        )

    def _auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def build_body(
        self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The JSON request body (exposed for tests and debugging)."""
        messages = to_anthropic_messages(history)
        _mark_cache_breakpoint(messages)
        sampling = model_sampling_overrides()
        max_tokens = sampling.get("max_completion_tokens")
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            max_tokens = self.max_tokens
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system_prompt:
            body["system"] = [{"type": "text", "text": system_prompt, "cache_control": dict(_CACHE)}]
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            body["tools"][-1]["cache_control"] = dict(_CACHE)
        if self.session_id:
            body["metadata"] = {"user_id": self.session_id}
        budget = THINKING_BUDGETS.get(self.thinking or "off")
        if budget is not None:
            budget = min(budget, max_tokens - 1)
        if budget is not None and budget >= _MIN_THINKING_BUDGET:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            # Extended thinking rejects a custom temperature; top_p stays (the API bounds it).
            if "temperature" in sampling:
                logger.debug("temperature override ignored: not allowed with extended thinking")
            sampling = {k: v for k, v in sampling.items() if k != "temperature"}
        for key in ("temperature", "top_p"):
            if key in sampling:
                body[key] = sampling[key]
        return body

    async def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[list[StreamPart]]:
        state = _ReplyState()
        async for out in self._part_batches(body, lambda event, out: self._on_event(chat, event, state, out)):
            yield out
        if not state.complete:
            raise APIConnectionError("the connection closed before the response was complete")
        if not (state.saw_text or state.saw_call):
            raise APIEmptyResponseError("the model returned an empty response (no text and no tool call)")

    def _on_event(self, chat: ChatStream, event: Any, state: _ReplyState, out: list[StreamPart]) -> None:
        """One SSE event of the reply: its parts appended to `out`."""
        data = self._decode(event.data)
        kind = data.get("type") or event.event
        if kind == "message_start":
            message = data.get("message") or {}
            if isinstance(message.get("id"), str) and message["id"]:
                chat.id = message["id"]
            self._update_usage(chat, state.usage, message.get("usage"))
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            index = data.get("index", -1)
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                state.saw_text = True
                out.append(TextPart(text=block["text"]))
            elif btype == "thinking":
                if block.get("thinking"):
                    out.append(ThinkPart(think=block["thinking"]))
                if block.get("signature"):
                    out.append(ThinkPart(think="", encrypted=block["signature"]))
            elif btype == "tool_use":
                state.saw_call = True
                out.append(ToolCall(id=block.get("id") or "", function=FunctionBody(name=block.get("name") or "")))
                if isinstance(block.get("input"), dict) and block["input"]:
                    state.whole_input[index] = json.dumps(block["input"], ensure_ascii=False)
            elif btype:
                logger.debug("ignoring Anthropic content block of type %s", btype)
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta" and delta.get("text"):
                state.saw_text = True
                out.append(TextPart(text=delta["text"]))
            elif dtype == "thinking_delta" and delta.get("thinking"):
                out.append(ThinkPart(think=delta["thinking"]))
            elif dtype == "signature_delta" and delta.get("signature"):
                out.append(ThinkPart(think="", encrypted=delta["signature"]))
            elif dtype == "input_json_delta":
                state.whole_input.pop(data.get("index", -1), None)
                if delta.get("partial_json"):
                    out.append(ToolCallPart(arguments_part=delta["partial_json"]))
        elif kind == "content_block_stop":
            pending = state.whole_input.pop(data.get("index", -1), None)
            if pending:
                out.append(ToolCallPart(arguments_part=pending))
        elif kind == "message_delta":
            self._update_usage(chat, state.usage, data.get("usage"))
        elif kind == "message_stop":
            state.complete = True
        elif kind == "error":
            raise self._stream_error(data.get("error"))

    @staticmethod
    def _update_usage(chat: ChatStream, usage: dict[str, int], new: Any) -> None:
        if not isinstance(new, dict):
            return
        for key in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        ):
            if isinstance(new.get(key), int):
                usage[key] = new[key]
        chat.usage = usage_from_anthropic(usage)

    def _stream_error(self, error: Any) -> ChatProviderError:
        error = error if isinstance(error, dict) else {}
        etype = str(error.get("type") or "error")
        message = self._redact(f"{etype}: {error.get('message') or 'error in streamed response'}")
        status = _ERROR_STATUS.get(etype)
        return APIStatusError(status, message) if status else ChatProviderError(message)
