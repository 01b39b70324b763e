"""Envelopes: a Wire message <-> `{"type": ..., "payload": {...}}`."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ProtocolError
from .types import (
    CONTENT_PART_TYPES,
    EVENT_TYPES,
    LEGACY_TYPE_NAMES,
    REQUEST_TYPES,
    ContentPart,
    ToolCall,
    ToolCallPart,
    WireMessage,
)

_CONTENT_ADAPTER: TypeAdapter[ContentPart] | None = None


class WireDecodeError(ProtocolError, ValueError):
    """An envelope that is not a Wire message we know, or whose payload does not validate."""


def type_name(message: Any) -> str:
    """The envelope `type` of a message: its class's wire name, `ContentPart` for content parts."""
    if isinstance(message, CONTENT_PART_TYPES):
        return "ContentPart"
    if isinstance(message, ToolCall):
        return "ToolCall"
    if isinstance(message, ToolCallPart):
        return "ToolCallPart"
    name = getattr(type(message), "wire_type", "")
    if not name:
        raise TypeError(f"not a Wire message: {type(message).__name__}")
    return name


def to_envelope(message: WireMessage) -> dict[str, Any]:
    return {"type": type_name(message), "payload": message.model_dump(mode="json")}


def _content_adapter() -> TypeAdapter[ContentPart]:
    global _CONTENT_ADAPTER
    if _CONTENT_ADAPTER is None:
        _CONTENT_ADAPTER = TypeAdapter(ContentPart)
    return _CONTENT_ADAPTER


def from_envelope(envelope: dict[str, Any]) -> WireMessage:
    """Decode `{"type", "payload"}`; raises WireDecodeError with a one-line reason."""
    if not isinstance(envelope, dict):
        raise WireDecodeError("a Wire message must be an object with `type` and `payload`")
    kind = envelope.get("type")
    payload = envelope.get("payload") or {}
    if not isinstance(kind, str):
        raise WireDecodeError("a Wire message needs a string `type`")
    kind = LEGACY_TYPE_NAMES.get(kind, kind)
    try:
        if kind == "ContentPart":
            return _content_adapter().validate_python(payload)
        cls = EVENT_TYPES.get(kind) or REQUEST_TYPES.get(kind)
        if cls is None:
            raise WireDecodeError(f"unknown Wire message type {kind!r}")
        return cls.model_validate(payload)
    except ValidationError as exc:
        raise WireDecodeError(f"invalid {kind} payload: {describe_validation_error(exc, unlocated='payload')}") from None


def describe_validation_error(exc: ValidationError, *, limit: int = 1, unlocated: str = "") -> str:
    """The first `limit` problems as `field.path: message` (joined by "; "): short enough for one
    line of a JSON-RPC error or a tool error. `unlocated` names errors of the whole value."""
    errors = exc.errors()[:limit]
    if not errors:
        return str(exc)
    parts = []
    for err in errors:
        where = ".".join(str(p) for p in err.get("loc", ())) or unlocated
        msg = err.get("msg", "invalid")
        parts.append(f"{where}: {msg}" if where else str(msg))
    return "; ".join(parts)
