"""The Gemini API, streamed (`type = "gemini"`, alias `google_genai`), and the content format it
shares with Vertex AI (`llm/vertexai.py`).

`POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse` with the key in
`x-goog-api-key`. Each SSE event is a whole `GenerateContentResponse`: text and thought parts
(`thought: true`, shown as thinking) as deltas, function calls whole. A function call's thought
signature is kept in the call's `extras` (`thought_signature_b64`, as Kimi Code CLI keeps it) and
sent back with it, which Gemini 3 requires within a turn. Tool results go back as one user turn of
`functionResponse` parts, one per call, in the calls' order.

The HTTP plumbing (client, SSE reading, status → error mapping) is `llm.http`'s.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import os
import re
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import ResolvedModel, model_sampling_overrides
from ..errors import SIGN_IN_AGAIN, SignInRequired
from ..wire.types import (
    AudioURLPart,
    FunctionBody,
    ImageURLPart,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    VideoURLPart,
)
from .errors import APIConnectionError, APIEmptyResponseError, APIStatusError, ChatProviderError
from .http import HTTPChatProvider
from .types import ChatStream, Message, StreamPart, ToolSpec, arguments_object, token_count

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
SIGNATURE_KEY = "thought_signature_b64"  # ToolCall.extras key (Kimi Code CLI's name)
# Gemini 3 refuses a function call of the current turn without a thought signature. Calls made by
# another provider (a session that switched models) have none; Google documents this value for them.
SKIP_SIGNATURE = "skip_thought_signature_validator"
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 24576}  # 24576: every 2.5 model accepts it
_VERSIONED = re.compile(r"/v\d+(?:(?:alpha|beta)\d*)?$")
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+/-]+)(?:;[\w=.+-]+)*;base64,(?P<data>.*)$", re.DOTALL)
_SAFETY_STOPS = frozenset(
    {
        "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
        "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "MODEL_ARMOR",
    }
)


def api_root(base_url: str, version: str = API_VERSION) -> str:
    """The base URL with its API version: Kimi's docs give `https://generativelanguage.googleapis.com`
    (the version is appended), a URL that already ends in one (`.../v1beta`) is kept."""
    root = (base_url or DEFAULT_BASE_URL).rstrip("/")
    return root if _VERSIONED.search(root) else f"{root}/{version}"


# --------------------------------------------------------------------------- request conversion


def _media_part(url: str, default_mime: str) -> dict[str, Any]:
    match = _DATA_URL.match(url)
    if match:
        return {"inlineData": {"mimeType": match["media"], "data": match["data"]}}
    mime = mimetypes.guess_type(url.split("?", 1)[0])[0] or default_mime
    return {"fileData": {"mimeType": mime, "fileUri": url}}


def _content_parts(message: Message) -> list[dict[str, Any]]:
    """Text and media of a message as Gemini parts (thinking is not sent back)."""
    out: list[dict[str, Any]] = []
    for part in message.parts():
        if isinstance(part, TextPart):
            if part.text:
                out.append({"text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append(_media_part(part.image_url.url, "image/png"))
        elif isinstance(part, VideoURLPart):
            out.append(_media_part(part.video_url.url, "video/mp4"))
        elif isinstance(part, AudioURLPart):
            out.append(_media_part(part.audio_url.url, "audio/mpeg"))
    return out


def to_gemini_contents(history: Sequence[Message], *, skip_signature: bool = False) -> list[dict[str, Any]]:
    """Kimi-format history to Gemini `contents` (roles `user` and `model`).

    Consecutive turns of one role are merged. The results of one step's calls become one user turn
    with the `functionResponse` parts first, in order, and any images they carry after them.
    `skip_signature`: give a call without a thought signature Google's documented stand-in (Gemini 3).
    """
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    responses: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []

    def push(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    def flush_results() -> None:
        push("user", responses + media)
        responses.clear()
        media.clear()

    for message in history:
        if message.role == "tool":
            call_id = message.tool_call_id or ""
            name = names.get(call_id) or message.name or "tool"
            response: dict[str, Any] = {"name": name, "response": {"output": message.text()}}
            if call_id:
                response["id"] = call_id
            responses.append({"functionResponse": response})
            media.extend(p for p in _content_parts(message) if "text" not in p)
            continue
        flush_results()
        if message.role == "user":
            push("user", _content_parts(message))
        elif message.role == "assistant":
            parts: list[dict[str, Any]] = []
            text = message.text()
            if text:
                parts.append({"text": text})
            for index, call in enumerate(message.tool_calls or []):
                names[call.id] = call.function.name
                args = arguments_object(call.function.arguments)
                part: dict[str, Any] = {"functionCall": {"id": call.id, "name": call.function.name, "args": args}}
                signature = (call.extras or {}).get(SIGNATURE_KEY)
                if isinstance(signature, str) and signature:
                    part["thoughtSignature"] = signature
                elif skip_signature and index == 0:
                    part["thoughtSignature"] = SKIP_SIGNATURE
                parts.append(part)
            push("model", parts)
        elif message.role == "system":
            text = message.text()
            if text:
                push("user", [{"text": f"<system>{text}</system>"}])
    flush_results()
    return contents


def _schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's JSON Schema with its local `$ref`s written out (`parametersJsonSchema` takes JSON
    Schema, but not every model resolves references)."""
    defs = parameters.get("$defs") or parameters.get("definitions")
    clean = {k: v for k, v in parameters.items() if k not in ("$schema", "$defs", "definitions", "$id")}
    if not isinstance(defs, dict):
        return clean

    def resolve_object(node: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
            name = ref.rsplit("/", 1)[1]
            if name in defs and name not in seen:  # a recursive schema keeps its last reference
                target = resolve(defs[name], (*seen, name))
                if isinstance(target, bool):  # a boolean schema: anything (true) or nothing (false)
                    target = {} if target else {"not": {}}
                if isinstance(target, dict):  # else not a schema: the reference stays as it is
                    rest = {k: v for k, v in node.items() if k != "$ref"}
                    return {**target, **resolve_object(rest, seen)}
        return {k: resolve(v, seen) for k, v in node.items()}

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            return resolve_object(node, seen)
        if isinstance(node, list):
            return [resolve(v, seen) for v in node]
        return node

    return resolve_object(clean, ())


def gemini_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "functionDeclarations": [
                {"name": t.name, "description": t.description, "parametersJsonSchema": _schema(t.parameters)}
                for t in tools
            ]
        }
    ]


def thinking_config(model: str, effort: str | None) -> dict[str, Any] | None:
    """Thinking on (an effort) or off through `thinkingConfig`; None leaves the model's default.

    Gemini 3 takes a level and cannot stop thinking (off: the lowest level, thoughts not shown);
    2.5 takes a budget, 0 turning thinking off where the model allows it (not the Pro models,
    whose least is 128).
    """
    if effort is None:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    if effort == "off":
        if name.startswith("gemini-3"):
            return {"includeThoughts": False, "thinkingLevel": "LOW"}
        return {"includeThoughts": False, "thinkingBudget": 128 if "pro" in name else 0}
    if name.startswith("gemini-3"):
        return {"includeThoughts": True, "thinkingLevel": "LOW" if effort == "low" else "HIGH"}
    return {"includeThoughts": True, "thinkingBudget": THINKING_BUDGETS.get(effort, THINKING_BUDGETS["high"])}


def usage_from_gemini(usage: Mapping[str, Any]) -> TokenUsage:
    """`usageMetadata` → TokenUsage: the prompt count includes the cached tokens, the output is
    the reply plus its thinking (as other providers count it)."""
    prompt = token_count(usage.get("promptTokenCount")) + token_count(usage.get("toolUsePromptTokenCount"))
    cached = token_count(usage.get("cachedContentTokenCount"))
    return TokenUsage(
        input_other=max(prompt - cached, 0),
        input_cache_read=cached,
        output=token_count(usage.get("candidatesTokenCount")) + token_count(usage.get("thoughtsTokenCount")),
    )


def google_error(body: bytes) -> tuple[str, set[str], float | None]:
    """Google's error body `{"error": {"message", "status", "details": [...]}}`: its message, the
    `ErrorInfo` reasons (e.g. API_KEY_INVALID), and a `RetryInfo` delay in seconds."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return "", set(), None
    if isinstance(data, list) and data:  # the streaming endpoints wrap the error in a list
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return "", set(), None
    reasons: set[str] = set()
    delay: float | None = None
    for detail in error.get("details") or []:
        if not isinstance(detail, dict):
            continue
        if isinstance(detail.get("reason"), str):
            reasons.add(detail["reason"])
        raw = detail.get("retryDelay")
        if isinstance(raw, str) and raw.endswith("s"):
            try:
                delay = max(float(raw[:-1]), 0.0)
            except ValueError:
                pass
    return str(error.get("message") or ""), reasons, delay


# --------------------------------------------------------------------------- the provider


@dataclass
class _Reply:
    complete: bool = False
    saw_text: bool = False
    saw_call: bool = False
    stop: str = ""  # the last finishReason
    usage: dict[str, Any] | None = None  # the last `usageMetadata` (in every chunk: read once, at the end)


class GeminiProvider(HTTPChatProvider):
    """`streamGenerateContent` over SSE: the Gemini API here, Vertex AI in `llm/vertexai.py`."""

    provider_type = "gemini"
    unauthorized_hint = f"Check this provider's api_key in config.toml (a Gemini API key). {SIGN_IN_AGAIN}"

    def __init__(self, *, provider_type: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if provider_type:
            self.provider_type = provider_type  # `google_genai`, Kimi's other name for it
        if not self.base_url:
            self.base_url = DEFAULT_BASE_URL

    @classmethod
    def _options_from(cls, resolved: ResolvedModel) -> dict[str, Any]:
        """Without an api_key, the key Google's SDK (and so Kimi Code CLI) reads from the
        environment: GOOGLE_API_KEY, else GEMINI_API_KEY (the provider's `env` first)."""
        options: dict[str, Any] = {"provider_type": resolved.provider.type}
        if not resolved.provider.api_key.get_secret_value():
            for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
                key = (resolved.provider.env.get(name) or os.environ.get(name) or "").strip()
                if key:
                    options["api_key"] = key
                    break
        return options

    @property
    def url(self) -> str:
        model = self.model_name
        path = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        return f"{api_root(self.base_url)}/{path}:streamGenerateContent?alt=sse"

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def build_body(
        self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The JSON request body (exposed for tests and debugging)."""
        gemini_3 = self.model_name.lower().rsplit("/", 1)[-1].startswith("gemini-3")
        body: dict[str, Any] = {"contents": to_gemini_contents(history, skip_signature=gemini_3)}
        if system_prompt:
            body["systemInstruction"] = {"parts": [{"text": system_prompt}]}
        if tools:
            body["tools"] = gemini_tools(tools)
        config: dict[str, Any] = {}
        sampling = model_sampling_overrides()
        if "temperature" in sampling:
            config["temperature"] = sampling["temperature"]
        if "top_p" in sampling:
            config["topP"] = sampling["top_p"]
        max_tokens = sampling.get("max_completion_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0:
            config["maxOutputTokens"] = max_tokens
        thinking = thinking_config(self.model_name, self.thinking)
        if thinking is not None:
            config["thinkingConfig"] = thinking
        if config:
            body["generationConfig"] = config
        return body

    def _status_error(self, status: int, reason: str, headers: Mapping[str, str], body: bytes) -> APIStatusError:
        error = super()._status_error(status, reason, headers, body)
        message, reasons, delay = google_error(body)
        if status in (400, 403) and ("API_KEY_INVALID" in reasons or "API key not valid" in message):
            return SignInRequired(f"{error}. {self.unauthorized_hint}")  # Gemini's "bad key" is a 400
        if delay is not None and error.retry_after is None:
            error.retry_after = delay  # RESOURCE_EXHAUSTED says how long to wait in the body
        return error

    async def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[list[StreamPart]]:
        state = _Reply()
        async for out in self._part_batches(body, lambda event, out: self._on_chunk(chat, self._decode(event.data), state, out)):
            yield out
        if state.usage is not None:
            chat.usage = usage_from_gemini(state.usage)
        if not state.complete:
            raise APIConnectionError("the connection closed before the response was complete")
        if not (state.saw_text or state.saw_call):
            if state.stop in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"):
                raise APIEmptyResponseError(f"the model made an unusable function call ({state.stop}) and nothing else")
            raise APIEmptyResponseError("the model returned an empty response (no text and no tool call)")

    def _on_chunk(self, chat: ChatStream, chunk: dict[str, Any], state: _Reply, out: list[StreamPart]) -> None:
        """One streamed `GenerateContentResponse`: its parts appended to `out`."""
        error = chunk.get("error")
        if error:
            raise self._stream_error(error)
        if chat.id is None and isinstance(chunk.get("responseId"), str):
            chat.id = chunk["responseId"]
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            state.usage = usage
        candidates = chunk.get("candidates")
        if not candidates:
            feedback = chunk.get("promptFeedback")
            if not isinstance(feedback, dict):
                return
            blocked = feedback.get("blockReason")
            if blocked:
                detail = feedback.get("blockReasonMessage") or "the prompt was blocked"
                raise ChatProviderError(self._redact(f"Gemini blocked the prompt ({blocked}): {detail}"))
            return
        candidate = candidates[0] if isinstance(candidates[0], dict) else {}
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts or ():
            text = part.get("text")
            if isinstance(text, str):
                if not text:
                    continue
                if part.get("thought"):
                    out.append(ThinkPart(think=text))
                else:
                    state.saw_text = True
                    out.append(TextPart(text=text))
                continue
            call = part.get("functionCall")
            if isinstance(call, dict) and call.get("name"):
                state.saw_call = True
                signature = part.get("thoughtSignature")
                out.append(
                    ToolCall(
                        id=str(call.get("id") or f"call_{uuid.uuid4().hex[:24]}"),
                        function=FunctionBody(
                            name=call["name"], arguments=json.dumps(call.get("args") or {}, ensure_ascii=False)
                        ),
                        extras={SIGNATURE_KEY: signature} if isinstance(signature, str) and signature else None,
                    )
                )
        stop = candidate.get("finishReason")
        if stop:
            state.stop = str(stop)
            state.complete = True
            if stop in _SAFETY_STOPS:
                detail = candidate.get("finishMessage") or "the reply was blocked by Gemini's safety filters"
                raise ChatProviderError(self._redact(f"Gemini stopped the reply ({stop}): {detail}"))
            if stop == "MISSING_THOUGHT_SIGNATURE":
                raise ChatProviderError("Gemini refused the history: a function call lacks its thought signature")

    def _stream_error(self, error: Any) -> ChatProviderError:
        error = error if isinstance(error, dict) else {"message": str(error)}
        code = error.get("code")
        status = error.get("status") or "error"
        message = self._redact(f"{status}: {error.get('message') or 'error in streamed response'}")
        if isinstance(code, int) and code >= 400:
            return APIStatusError(code, message)
        return ChatProviderError(message)
