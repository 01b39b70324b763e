"""Request bodies checked against the official SDKs' own request types, so a drift of this agent's
wire format from the real APIs fails a test instead of a user's session.

- OpenAI Responses: `openai.types.responses.response_create_params.ResponseCreateParamsStreaming`,
  a tree of TypedDicts, checked strictly here (unknown keys, missing required keys, literal values,
  value types, every union member tried). Pydantic cannot do it: it refuses a config for TypedDicts
  and validates `Iterable[...]` fields lazily.
- Gemini / Vertex AI: each `contents[]` item and `systemInstruction` as `google.genai.types.Content`,
  `tools[]` as `Tool`, `generationConfig` as `GenerateContentConfig` (the SDK's models forbid
  unknown fields and decode base64 bytes), then run through the SDK's own request converters for
  the API in question (they refuse fields one API does not have), plus the rule Vertex AI enforces:
  a turn of function calls is answered by a turn with as many function responses.

The SDKs are test dependencies only (the `dev` extra); nothing in `kimi_acp` imports them.
"""

from __future__ import annotations

import collections.abc
import json
import types
import typing
from typing import Any

import typing_extensions

# The one place the real API is more lenient than the SDK's TypedDict: a reasoning item sent back
# without its `id` (with `store: false` only the encrypted content counts; Codex CLI sends them so).
_MAY_LACK = {("ResponseReasoningItemParam", "id")}


# --------------------------------------------------------------------------- TypedDict checking


_WRAPPERS = {
    typing.Annotated, typing_extensions.Annotated, typing.Required, typing.NotRequired,
    typing_extensions.Required, typing_extensions.NotRequired, getattr(typing_extensions, "ReadOnly", typing.Annotated),
}


def _unwrap(tp: Any) -> Any:
    """`Annotated[X, ...]`, `Required[X]`, `NotRequired[X]`, `ReadOnly[X]` → X."""
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    return tp


def _type_literal(tp: Any) -> Any:
    """The `type` literal of a TypedDict member of a union, for choosing what to report."""
    if not typing_extensions.is_typeddict(tp):
        return None
    hint = typing.get_type_hints(tp, include_extras=True).get("type")
    hint = _unwrap(hint) if hint is not None else None
    return typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None


def _same_shape(value: Any, tp: Any) -> bool:
    """Whether `tp` is the kind of container (or scalar) `value` is: the union member to report."""
    origin = typing.get_origin(tp) or tp
    if isinstance(value, list):
        return origin in (list, collections.abc.Iterable, collections.abc.Sequence) or getattr(tp, "__name__", "") == "SequenceNotStr"
    if isinstance(value, dict):
        return typing_extensions.is_typeddict(tp) or origin in (dict, collections.abc.Mapping)
    return not (typing_extensions.is_typeddict(tp) or origin in (list, dict, collections.abc.Iterable))


def typed_problems(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Why `value` (parsed JSON) is not a valid `tp`; [] when it is."""
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return []
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {value!r:.60}"]
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        best: tuple[bool, int, list[str]] | None = None
        for option in typing.get_args(tp):
            found = typed_problems(value, option, path)
            if not found:
                return []
            literal = _type_literal(_unwrap(option))
            if isinstance(value, dict) and literal and value.get("type") in literal:
                return found  # the member the item says it is
            rank = (not _same_shape(value, _unwrap(option)), len(found), found)
            if best is None or rank[:2] < best[:2]:
                best = rank
        return best[2] if best else [f"{path}: matches no member of {tp}"]
    if origin is typing.Literal:
        return [] if value in typing.get_args(tp) else [f"{path}: {value!r} is not one of {typing.get_args(tp)}"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean, got {value!r:.60}"]
    if tp is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer, got {value!r:.60}"]
    if tp is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: expected a number"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string, got {value!r:.60}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({tp.__name__}), got {value!r:.60}"]
        hints = typing.get_type_hints(tp, include_extras=True)
        problems = [f"{path}: unknown key {key!r} for {tp.__name__}" for key in value if key not in hints]
        # With `from __future__ import annotations` (the SDK's modules) `__required_keys__` misses the
        # keys marked `Required[...]`: read the marks from the resolved hints as well.
        required = set(tp.__required_keys__) | {
            key for key, hint in hints.items() if typing.get_origin(hint) in (typing.Required, typing_extensions.Required)
        }
        for key in sorted(required):
            if key not in value and (tp.__name__, key) not in _MAY_LACK:
                problems.append(f"{path}: {tp.__name__} requires {key!r}")
        for key, item in value.items():
            if key in hints:
                problems += typed_problems(item, hints[key], f"{path}.{key}")
        return problems
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence) or getattr(tp, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {value!r:.60}"]
        args = typing.get_args(tp)
        item_type = args[0] if args else Any
        problems: list[str] = []
        for index, item in enumerate(value):
            problems += typed_problems(item, item_type, f"{path}[{index}]")
        return problems
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {value!r:.60}"]
        args = typing.get_args(tp)
        problems = []
        for key, item in value.items():
            problems += typed_problems(item, args[1] if len(args) == 2 else Any, f"{path}.{key}")
        return problems
    if isinstance(tp, type):
        return [] if isinstance(value, tp) else [f"{path}: expected {tp.__name__}"]
    return [f"{path}: cannot check type {tp!r}"]


def responses_request_problems(body: Any) -> list[str]:
    """A `POST /responses` body against the OpenAI SDK's streaming request type."""
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    problems = typed_problems(body, ResponseCreateParamsStreaming)
    if isinstance(body, dict):
        for key in ("model", "input"):
            if key not in body:
                problems.append(f"$: a request needs {key!r}")
        if body.get("stream") is not True:
            problems.append("$: stream must be true")
        if "previous_response_id" in body:
            problems.append("$: previous_response_id: the history must be sent whole")
    return problems


# --------------------------------------------------------------------------- Gemini


_GEMINI_KEYS = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings"}


def gemini_request_problems(body: Any, *, vertex: bool = False) -> list[str]:
    """A `streamGenerateContent` body against google.genai's types and request converters."""
    import pydantic
    from google.genai import models
    from google.genai import types as gt

    if not isinstance(body, dict):
        return ["$: expected an object"]
    problems = [f"$: unknown key {key!r}" for key in body if key not in _GEMINI_KEYS]
    to_api = models._Content_to_vertex if vertex else models._Content_to_mldev

    def content(value: Any, path: str) -> Any:
        try:
            parsed = gt.Content.model_validate_json(json.dumps(value))
        except pydantic.ValidationError as exc:
            problems.append(f"{path}: {exc}")
            return None
        try:
            to_api(parsed)
        except ValueError as exc:  # a field this API does not have
            problems.append(f"{path}: {exc}")
        return parsed

    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        problems.append("$.contents: a request needs at least one content")
        contents = []
    calls_pending = 0
    for index, item in enumerate(contents):
        parsed = content(item, f"$.contents[{index}]")
        if parsed is None:
            continue
        if parsed.role not in ("user", "model"):
            problems.append(f"$.contents[{index}].role: {parsed.role!r} (user or model)")
        parts = parsed.parts or []
        responses = sum(1 for p in parts if p.function_response is not None)
        if calls_pending and responses != calls_pending:
            problems.append(f"$.contents[{index}]: {responses} function responses answer {calls_pending} function calls")
        calls_pending = sum(1 for p in parts if p.function_call is not None) if parsed.role == "model" else 0
    if "systemInstruction" in body:
        content(body["systemInstruction"], "$.systemInstruction")
    for index, tool in enumerate(body.get("tools") or []):
        try:
            gt.Tool.model_validate_json(json.dumps(tool))
        except pydantic.ValidationError as exc:
            problems.append(f"$.tools[{index}]: {exc}")
    if "generationConfig" in body:
        try:
            config = gt.GenerateContentConfig.model_validate_json(json.dumps(body["generationConfig"]))
        except pydantic.ValidationError as exc:
            problems.append(f"$.generationConfig: {exc}")
        else:
            parent: dict[str, Any] = {}
            try:
                sent = models._GenerateContentConfig_to_mldev(None, config, parent)
            except ValueError as exc:
                problems.append(f"$.generationConfig: {exc}")
            else:
                if parent:  # a field the API takes at the top level, not in generationConfig
                    problems.append(f"$.generationConfig: {sorted(parent)} belong at the top level")
                if set(sent) != set(body["generationConfig"]):
                    problems.append(f"$.generationConfig: the SDK would send {sorted(sent)}")
    return problems
