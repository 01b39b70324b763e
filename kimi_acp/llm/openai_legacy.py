"""OpenAI-compatible Chat Completions streaming (`openai_legacy`), plus the HTTP plumbing the
other HTTP providers (`kimi`, `anthropic`) share: one lazily created `httpx.AsyncClient` per
provider, SSE reading, and the mapping of httpx failures and HTTP statuses to `llm.errors`.

Nothing here retries: the agent core owns retries, so a provider fails fast and precisely.
"""

from __future__ import annotations

import codecs
import email.utils
import functools
import http
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

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
from .errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)
from .sse import SSEEvent, SSEParser
from .types import ChatStream, Message, StreamPart, ThinkingEffort, ToolSpec

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=300.0, write=30.0, pool=30.0)
DEFAULT_REASONING_KEY = "reasoning_content"
_ERROR_BODY_CHARS = 300
_MALFORMED_CHARS = 100


@functools.cache
def user_agent() -> str:
    """`kimi-acp/<installed version>`; "0" when running from an uninstalled tree."""
    from importlib import metadata

    try:
        version = metadata.version("kimi-acp")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"kimi-acp/{version}"


# --------------------------------------------------------------------------- shared HTTP plumbing


class HTTPChatProvider:
    """Base of the HTTP providers: owns the client, streams SSE events, maps failures to errors."""

    provider_type: str = ""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = "",
        custom_headers: Mapping[str, str] | None = None,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> None:
        self.model_name = model
        self.base_url = base_url.rstrip("/")
        self.thinking = thinking
        self.session_id = session_id
        self._api_key = api_key
        self._custom_headers = dict(custom_headers or {})
        if timeout is None:
            self._timeout = DEFAULT_TIMEOUT
        elif isinstance(timeout, httpx.Timeout):
            self._timeout = timeout
        else:
            self._timeout = httpx.Timeout(timeout)
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model_name!r}, base_url={self.base_url!r})"

    # -- subclasses provide these

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": user_agent(), **self._auth_headers()}
        headers.update(self._custom_headers)
        return headers

    # -- client lifecycle

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(timeout=self._timeout, headers=self._headers())
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections; a later `stream()` opens a new client."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- errors

    def _redact(self, text: str) -> str:
        """Error texts may echo request data; the key must never reach a message."""
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "***")
        return text

    def _malformed(self, data: str) -> ChatProviderError:
        return ChatProviderError(self._redact(f"malformed streaming response: {data[:_MALFORMED_CHARS]}"))

    # -- streaming

    async def _sse_events(self, url: str, body: dict[str, Any]) -> AsyncGenerator[SSEEvent, None]:
        """POST `body` and yield the SSE events of the reply.

        A plain JSON reply (a server that ignored `stream: true`) is yielded as one event followed
        by `[DONE]`, so callers see one shape. httpx failures become provider errors here.
        """
        client = self._get_client()
        try:
            async with client.stream("POST", url, json=body) as response:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise status_error(
                        response.status_code,
                        response.reason_phrase,
                        response.headers,
                        raw,
                        redact=self._redact,
                    )
                content_type = response.headers.get("content-type", "")
                if "application/json" in content_type and "event-stream" not in content_type:
                    raw = await response.aread()
                    yield SSEEvent(data=raw.decode("utf-8", "replace"))
                    yield SSEEvent(data="[DONE]")
                    return
                parser = SSEParser()
                decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
                async for chunk in response.aiter_bytes():
                    for event in parser.feed(decoder.decode(chunk)):
                        yield event
                for event in parser.feed(decoder.decode(b"", final=True)):
                    yield event
                last = parser.flush()
                if last is not None:
                    yield last
        except httpx.TimeoutException as exc:
            raise APITimeoutError(self._redact(f"request to {url} timed out ({type(exc).__name__})")) from exc
        except httpx.UnsupportedProtocol as exc:
            raise ChatProviderError(self._redact(f"invalid base_url {self.base_url!r}: {exc}")) from exc
        except httpx.RequestError as exc:
            detail = str(exc) or type(exc).__name__
            raise APIConnectionError(self._redact(f"connection error talking to {url}: {detail}")) from exc
        except httpx.InvalidURL as exc:
            raise ChatProviderError(self._redact(f"invalid base_url {self.base_url!r}: {exc}")) from exc


def status_error(
    status: int,
    reason: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    redact: Callable[[str], str] | None = None,
) -> APIStatusError:
    """`APIStatusError` for an HTTP error reply: "<status> <reason>: <server's message>"."""
    text = body.decode("utf-8", "replace")
    detail = error_message_from_body(text) or " ".join(text.split())[:_ERROR_BODY_CHARS]
    if not reason:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "error"
    message = f"{status} {reason}: {detail}" if detail else f"{status} {reason}"
    if redact is not None:
        message = redact(message)
    return APIStatusError(status, message, retry_after=parse_retry_after(headers))


def error_message_from_body(text: str) -> str | None:
    """The message of `{"error": {"message": ...}}` (OpenAI, Anthropic) or similar shapes."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms`, `retry-after` (seconds or an HTTP date); None otherwise."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


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
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text()}
            )
    return out


def usage_from_openai(usage: Mapping[str, Any]) -> TokenUsage:
    """OpenAI usage → TokenUsage; cached tokens from `prompt_tokens_details` or Moonshot's field."""
    prompt = _int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or _int(usage.get("cached_tokens"))
    return TokenUsage(
        input_other=max(prompt - cached, 0),
        input_cache_read=cached,
        output=_int(usage.get("completion_tokens")),
    )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


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
    def from_resolved(
        cls,
        resolved: ResolvedModel,
        *,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> OpenAILegacyProvider:
        provider = resolved.provider
        return cls(
            model=resolved.model.model,
            base_url=provider.base_url,
            api_key=provider.api_key.get_secret_value(),
            custom_headers=provider.custom_headers,
            reasoning_key=provider.reasoning_key,
            thinking=thinking,
            session_id=session_id,
            **kwargs,
        )

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

    def stream(self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]) -> ChatStream:
        body = self.build_body(system_prompt, tools, history)
        chat = ChatStream()
        return chat.bind(self._generate(chat, body))

    async def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        calls = ToolCallAssembler()
        deferred: list[StreamPart] = []  # text that arrives while a tool call is still open
        saw_text = complete = False
        async with aclosing(self._sse_events(self.url, body)) as events:
            async for event in events:
                if event.is_done:
                    complete = True
                    continue
                chunk = self._decode(event.data)
                if chat.id is None and isinstance(chunk.get("id"), str) and chunk["id"]:
                    chat.id = chunk["id"]
                choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
                choice = choices[0] if choices and isinstance(choices[0], dict) else {}
                usage = chunk.get("usage") or choice.get("usage")
                if isinstance(usage, dict):
                    chat.usage = usage_from_openai(usage)
                if choice.get("finish_reason"):
                    complete = True
                delta = choice.get("delta") or choice.get("message") or {}
                if not isinstance(delta, dict):
                    continue
                for part in self._content_parts(delta):
                    saw_text = saw_text or isinstance(part, TextPart)
                    if calls.started:
                        deferred.append(part)
                    else:
                        yield part
                if isinstance(delta.get("tool_calls"), list) and delta["tool_calls"]:
                    for part in calls.add(delta["tool_calls"]):
                        yield part
        if not complete:
            raise APIConnectionError("the connection closed before the response was complete")
        saw_call = calls.started
        for part in calls.finish():
            yield part
        for part in deferred:
            yield part
        if not (saw_text or saw_call):
            raise APIEmptyResponseError("the model returned an empty response (no text and no tool call)")

    def _decode(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            raise self._malformed(data) from None
        if not isinstance(chunk, dict):
            raise self._malformed(data)
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
