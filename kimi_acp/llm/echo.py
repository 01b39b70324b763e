"""Test providers that play a script instead of calling a model (`_echo`, `_scripted_echo`).

The script language is Kimi's echo DSL, one directive per line:

    text: hello            think: "pondering"        id: msg-1
    tool_call: {"id": "tc1", "name": "Shell", "arguments": "{\\"command\\": \\"ls\\"}"}
    tool_call: id=tc1 name=Shell arguments={"command": "ls"}
    tool_call_part: {"arguments_part": "..."}       image_url: https://example.com/a.png
    usage: input_other=10 output=2                   error: 429 slow down

`_echo` runs the script typed as the last user message; `_scripted_echo` pops one script per call
from a file, which is how end-to-end tests drive the agent deterministically. Parsing is the pure
function `parse_echo_script` so it can be tested without a provider.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..util import process_state
from ..wire.types import (
    AudioURLPart,
    FunctionBody,
    ImageURLPart,
    MediaURL,
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
from .types import ChatStream, Message, StreamPart, ThinkingEffort, ToolSpec

logger = logging.getLogger(__name__)

SCRIPTS_ENV = "KIMI_SCRIPTED_ECHO_SCRIPTS"
TRACE_ENV = "KIMI_SCRIPTED_ECHO_TRACE"
_USAGE_FIELDS = ("input_other", "output", "input_cache_read", "input_cache_creation")
_KV_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_KV_SEPARATOR = re.compile(r"[\s,]")


class _RestOfLine(str):
    """A k=v value taken verbatim up to the end of the line."""


@dataclass
class EchoScript:
    """A parsed script: the parts to stream, then the error to raise (if any) after them."""

    parts: list[StreamPart] = field(default_factory=list)
    message_id: str | None = None
    usage: TokenUsage | None = None
    error: ChatProviderError | None = None


# --------------------------------------------------------------------------- the DSL


def parse_echo_script(text: str) -> EchoScript:
    """Parse an echo DSL script; raises `ChatProviderError` naming the offending line.

    Lines after an `error:` directive are not read: nothing after the error can be streamed.
    """
    script = EchoScript()
    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line.startswith(("#", "```")) or line.lower() == "echo":
            continue
        key, sep, payload = line.partition(":")
        if not sep:
            raise ChatProviderError(f"Invalid echo DSL at line {lineno}: {raw_line!r}")
        kind = key.strip().lower()
        payload = payload.removeprefix(" ")
        where = f"at line {lineno}: {raw_line!r}"
        if kind == "id":
            script.message_id = _strip_quotes(payload.strip()) or None
        elif kind == "usage":
            script.usage = _parse_usage(payload, where)
        elif kind == "error":
            script.error = _parse_error(payload, where)
            break
        else:
            script.parts.append(_parse_part(kind, payload, where))
    if not script.parts and script.error is None:
        raise ChatProviderError("DSL produced no streamable parts")
    return script


def _parse_part(kind: str, payload: str, where: str) -> StreamPart:
    if kind == "text":
        return TextPart(text=_strip_quotes(payload))
    if kind == "think":
        return ThinkPart(think=_strip_quotes(payload))
    if kind == "tool_call":
        return _parse_tool_call(payload, where)
    if kind == "tool_call_part":
        return ToolCallPart(arguments_part=_parse_arguments_part(payload))
    if kind == "image_url":
        return ImageURLPart(image_url=_parse_media(payload, kind, where))
    if kind == "audio_url":
        return AudioURLPart(audio_url=_parse_media(payload, kind, where))
    if kind == "video_url":
        return VideoURLPart(video_url=_parse_media(payload, kind, where))
    raise ChatProviderError(f"Unknown echo DSL directive {kind!r} {where}")


def _strip_quotes(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _scalar(raw: str) -> Any:
    """A k=v value: JSON when it parses, `null`/`none`/empty as None, else the unquoted text."""
    raw = raw.strip()
    if not raw or raw.lower() in ("null", "none"):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return _strip_quotes(raw)


def _parse_object(
    payload: str, context: str, where: str, *, rest_of_line: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A JSON object, or `k=v` pairs separated by spaces/commas.

    Keys in `rest_of_line` take everything up to the end of the line, so JSON with spaces works
    (`arguments={"command": "ls -la"}`).
    """
    payload = payload.strip()
    if payload.startswith("{"):
        try:
            value = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise ChatProviderError(f"{context} payload is not valid JSON ({exc.msg}) {where}") from None
        if not isinstance(value, dict):
            raise ChatProviderError(f"{context} payload must be an object {where}")
        return value
    mapping: dict[str, Any] = {}
    rest = payload
    while rest:
        rest = rest.lstrip(" \t,")
        if not rest:
            break
        match = _KV_KEY.match(rest)
        if match is None:
            token = rest.split()[0]
            raise ChatProviderError(f"Invalid token {token!r} in {context} payload {where}")
        key, rest = match.group(1), rest[match.end() :]
        if key in rest_of_line:
            mapping[key] = _RestOfLine(rest.strip())
            break
        if rest[:1] in ("'", '"'):
            end = rest.find(rest[0], 1)
            if end < 0:
                raise ChatProviderError(f"Unterminated quote in {context} payload {where}")
            mapping[key], rest = rest[1:end], rest[end + 1 :]
        else:
            token = _KV_SEPARATOR.split(rest, maxsplit=1)[0]
            mapping[key], rest = _scalar(token), rest[len(token) :]
    if not mapping:
        raise ChatProviderError(f"{context} payload cannot be empty {where}")
    return mapping


def _parse_tool_call(payload: str, where: str) -> ToolCall:
    mapping = _parse_object(payload, "tool_call", where, rest_of_line=("arguments",))
    function: dict[str, Any] = mapping["function"] if isinstance(mapping.get("function"), dict) else {}
    call_id = mapping.get("id")
    name = mapping.get("name") or function.get("name")
    arguments = mapping["arguments"] if "arguments" in mapping else function.get("arguments")
    extras = mapping.get("extras", function.get("extras"))
    if isinstance(arguments, _RestOfLine):  # k=v form: the raw text, not decoded JSON
        raw = _strip_quotes(arguments)
        arguments = None if raw.lower() in ("", "null", "none") else raw
    elif isinstance(arguments, (dict, list)):
        arguments = json.dumps(arguments, ensure_ascii=False)
    if isinstance(call_id, (int, float)) and not isinstance(call_id, bool):
        call_id = str(call_id)
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise ChatProviderError(f"tool_call requires string id and name {where}")
    if arguments is not None and not isinstance(arguments, str):
        raise ChatProviderError(f"tool_call arguments must be a JSON string or null {where}")
    if extras is not None and not isinstance(extras, dict):
        raise ChatProviderError(f"tool_call extras must be an object {where}")
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=arguments), extras=extras)


def _parse_arguments_part(payload: str) -> str | None:
    raw = payload.strip()
    if not raw or raw.lower() in ("null", "none"):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return _strip_quotes(raw) or None
    if isinstance(value, dict) and "arguments_part" in value:
        value = value["arguments_part"]
    elif not isinstance(value, str):
        return raw  # a JSON fragment that happens to parse (e.g. a whole object): keep its text
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if value is None or value == "":
        return None
    return str(value)


def _parse_media(payload: str, kind: str, where: str) -> MediaURL:
    raw = payload.strip()
    value: Any = raw
    if raw.startswith(("{", '"')):
        try:
            value = json.loads(raw)
        except ValueError:
            value = _strip_quotes(raw)
    else:
        value = _strip_quotes(raw)
    if isinstance(value, dict):
        url, media_id = value.get("url"), value.get("id")
        if not isinstance(url, str) or not url:
            raise ChatProviderError(f"{kind} requires a url {where}")
        if media_id is not None and not isinstance(media_id, str):
            raise ChatProviderError(f"{kind} id must be a string {where}")
        return MediaURL(url=url, id=media_id)
    if not isinstance(value, str) or not value:
        raise ChatProviderError(f"{kind} requires a url {where}")
    return MediaURL(url=value)


def _parse_usage(payload: str, where: str) -> TokenUsage:
    mapping = _parse_object(payload, "usage", where)
    values: dict[str, int] = {}
    for key, value in mapping.items():
        if key not in _USAGE_FIELDS:
            raise ChatProviderError(
                f"Unknown usage field {key!r} {where} (known: {', '.join(_USAGE_FIELDS)})"
            )
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ChatProviderError(f"Usage field {key!r} must be an integer {where}")
        try:
            values[key] = int(value)
        except ValueError:
            raise ChatProviderError(f"Usage field {key!r} must be an integer {where}") from None
    return TokenUsage(**values)


def _parse_error(payload: str, where: str) -> ChatProviderError:
    head, _, message = payload.strip().partition(" ")
    message = _strip_quotes(message.strip())
    kind = head.lower()
    if kind.isdigit():
        status = int(kind)
        return APIStatusError(status, message or f"echo error {status}")
    if kind == "connection":
        return APIConnectionError(message or "echo connection error")
    if kind == "timeout":
        return APITimeoutError(message or "echo timeout")
    if kind == "empty":
        return APIEmptyResponseError(message or "echo empty response")
    raise ChatProviderError(
        f"Invalid echo DSL error {head!r} {where} (expected a status code, connection, timeout or empty)"
    )


def _play(text: str) -> ChatStream:
    """A ChatStream that parses `text` and plays it when iterated (so errors surface there)."""
    chat = ChatStream()

    async def parts() -> AsyncIterator[StreamPart]:
        script = parse_echo_script(text)
        chat.id = script.message_id
        chat.usage = script.usage
        for part in script.parts:
            await asyncio.sleep(0)  # a real stream yields to the loop between chunks
            yield part
        if script.error is not None:
            raise script.error

    return chat.bind(parts())


def _fail(error: ChatProviderError) -> ChatStream:
    async def parts() -> AsyncIterator[StreamPart]:
        raise error
        yield  # pragma: no cover - makes this an async generator

    return ChatStream(parts())


# --------------------------------------------------------------------------- the providers


class EchoProvider:
    """`_echo`: plays the DSL typed as the last user message; ignores tools and the rest."""

    provider_type = "_echo"

    def __init__(self, *, model_name: str = "echo", thinking: ThinkingEffort | None = None) -> None:
        self.model_name = model_name
        self.thinking = thinking

    def stream(self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]) -> ChatStream:
        for message in reversed(history):
            if message.role == "user":
                return _play(message.text())
        return _fail(ChatProviderError("echo provider: the history has no user message to echo"))

    async def aclose(self) -> None:
        return None


class _ScriptQueue:
    """The scripts still to play and how many calls were made (for the exhaustion message)."""

    def __init__(self, scripts: Sequence[str]) -> None:
        self.scripts: deque[str] = deque(scripts)
        self.turn = 0


_SESSION_QUEUES: dict[tuple[str, str], _ScriptQueue] = process_state.container(f"{__name__}._SESSION_QUEUES", {})


class ScriptedEchoProvider:
    """`_scripted_echo`: each `stream()` call plays the next script of a file read at creation."""

    provider_type = "_scripted_echo"

    def __init__(
        self,
        scripts: Sequence[str] | _ScriptQueue,
        *,
        trace: bool = False,
        thinking: ThinkingEffort | None = None,
    ) -> None:
        self.model_name = "scripted_echo"
        self.thinking = thinking
        self._queue = scripts if isinstance(scripts, _ScriptQueue) else _ScriptQueue(scripts)
        self._trace = trace

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
    ) -> ScriptedEchoProvider:
        """Scripts path and trace flag from the provider's `env`, then the process environment.

        With a `session_id`, the queue belongs to that session for the life of the process: a
        session that is closed and reopened, or switches model, continues with its next script.
        """
        env = env or {}
        path = env.get(SCRIPTS_ENV) or os.environ.get(SCRIPTS_ENV)
        if not path:
            raise ChatProviderError(
                f"_scripted_echo provider needs {SCRIPTS_ENV} (in the provider's env or the environment)"
            )
        trace = (env.get(TRACE_ENV) or os.environ.get(TRACE_ENV) or "").strip().lower() in (
            "1",
            "true",
            "yes",
        )
        if session_id is None:
            return cls(load_scripts(path), trace=trace, thinking=thinking)
        key = (str(Path(path).expanduser().resolve()), session_id)
        queue = _SESSION_QUEUES.get(key)
        if queue is None:
            queue = _SESSION_QUEUES[key] = _ScriptQueue(load_scripts(path))
        return cls(queue, trace=trace, thinking=thinking)

    @property
    def remaining(self) -> int:
        return len(self._queue.scripts)

    def stream(self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]) -> ChatStream:
        queue = self._queue
        queue.turn += 1
        if not queue.scripts:
            return _fail(ChatProviderError(f"ScriptedEchoChatProvider exhausted at turn {queue.turn}."))
        script = queue.scripts.popleft()
        if self._trace:
            logger.info("scripted echo turn %d:\n%s", queue.turn, script)
        return _play(script)

    async def aclose(self) -> None:
        return None


def load_scripts(path: str | os.PathLike[str]) -> list[str]:
    """A JSON array of strings, or text with scripts separated by lines that are `---`."""
    file = Path(path).expanduser()
    try:
        raw = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ChatProviderError(f"cannot read scripted echo scripts {str(file)!r}: {reason}") from None
    if raw.lstrip().startswith("["):
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ChatProviderError(f"invalid JSON in scripted echo scripts {str(file)!r}: {exc}") from None
        if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
            raise ChatProviderError(f"scripted echo scripts {str(file)!r} must be a JSON array of strings")
        return data
    return split_scripts(raw)


def split_scripts(text: str) -> list[str]:
    """Split on `---` lines (CRLF tolerated); empty scripts at either end are dropped."""
    scripts: list[str] = []
    current: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.rstrip() == "---":
            scripts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    scripts.append("\n".join(current))
    while scripts and not scripts[-1].strip():
        scripts.pop()
    while scripts and not scripts[0].strip():
        scripts.pop(0)
    return scripts
