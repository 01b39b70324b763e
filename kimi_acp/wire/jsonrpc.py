"""JSON-RPC 2.0 framing for line-delimited stdio: parse one line, build replies, error codes."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any, overload

from ..errors import ProtocolError

JSONRPC_VERSION = "2.0"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
INVALID_STATE = -32000
LLM_NOT_SET = -32001
LLM_NOT_SUPPORTED = -32002
CHAT_PROVIDER_ERROR = -32003
AUTH_EXPIRED = -32004

RequestId = str | int


class JsonRpcError(ProtocolError):
    """An error to send back as `{"error": {code, message, data}}`."""

    def __init__(self, code: int, message: str, data: Any = None, *, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id

    def to_obj(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


@dataclass(frozen=True)
class Incoming:
    """One parsed inbound message: a request (id set), notification (no id) or response."""

    method: str | None
    params: Any
    id: RequestId | None
    has_id: bool
    result: Any = None
    error: dict[str, Any] | None = None

    @property
    def is_response(self) -> bool:
        return self.method is None


class InvalidResponse(ProtocolError):
    """A line that is a response (no method; result or error) but a malformed one.

    Never answered: replying to a response could start an endless exchange of errors."""


MAX_DEPTH = 100  # no real message nests this deep; deeper ones are refused before anything walks them
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def loads_line(line: bytes | str) -> Any:
    """Decode one line of JSON, whatever it holds: never raises anything but JsonRpcError.

    Nesting deep enough to exhaust the decoder's recursion (~1,000 levels) is a parse error, and
    anything nested past MAX_DEPTH is refused, so no later code recurses into it. Lone UTF-16
    surrogates (`"\\ud800"`) cannot be encoded on the way out (an error echoing them would fail to
    write), so they are replaced with U+FFFD here.
    """
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise JsonRpcError(PARSE_ERROR, "Invalid JSON format") from None
    except RecursionError:
        raise JsonRpcError(PARSE_ERROR, "Invalid JSON format: nested too deeply") from None
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth_exceeds(data, MAX_DEPTH):
        request_id = data.get("id") if isinstance(data, dict) and _valid_id(data.get("id")) else None
        raise JsonRpcError(
            INVALID_REQUEST, f"Invalid request: nested more than {MAX_DEPTH} levels deep", request_id=request_id
        )
    if isinstance(line, str) or _SURROGATE_ESCAPE.search(raw):
        data = without_lone_surrogates(data)
    return data


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than `limit` (iterative: the input may be ~1,000 deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _clean(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@overload
def without_lone_surrogates(value: str) -> str: ...


@overload
def without_lone_surrogates(value: Any) -> Any: ...


def without_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): without_lone_surrogates(v) for k, v in value.items()}
    return value


def parse_line(line: bytes | str) -> Incoming:
    """Parse and validate one line. Raises JsonRpcError (-32700 / -32600) with the id if known,
    or InvalidResponse for a malformed response (which must not be answered)."""
    data = loads_line(line)
    if not isinstance(data, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: a JSON-RPC message must be an object")
    has_id = "id" in data
    raw_id = data.get("id")
    request_id = raw_id if _valid_id(raw_id) else None
    if "method" not in data and ("result" in data or "error" in data):
        return _parse_response(data, request_id)
    if data.get("jsonrpc") != JSONRPC_VERSION:
        raise JsonRpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id=request_id)
    if has_id and not _valid_id(raw_id):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    method = data.get("method")
    if method is None:
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: missing method", request_id=request_id)
    if not isinstance(method, str) or not method:
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: method must be a non-empty string", request_id=request_id)
    params = data.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: params must be an object or an array", request_id=request_id)
    return Incoming(method, params, request_id, has_id)


def _parse_response(data: dict[str, Any], request_id: RequestId | None) -> Incoming:
    if data.get("jsonrpc") != JSONRPC_VERSION:
        raise InvalidResponse('"jsonrpc" must be "2.0"')
    if request_id is None:
        raise InvalidResponse("a response needs the id of the request it answers")
    if "result" in data and "error" in data:
        raise InvalidResponse("exactly one of result and error")
    error = data.get("error")
    if "error" in data and not (isinstance(error, dict) and isinstance(error.get("code"), int)):
        raise InvalidResponse("malformed error object")
    return Incoming(None, None, request_id, True, data.get("result"), error)


def result_message(request_id: RequestId | None, result: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: JsonRpcError) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_obj()}


def request_message(request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "id": request_id, "params": params}


def notification_message(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}


def dumps(message: dict[str, Any]) -> bytes:
    """One line of compact JSON, newline-terminated, UTF-8 (non-ASCII kept as is).

    orjson encodes it when it is loaded (much faster than the json module; it comes with the
    model's HTTP stack, `llm.http`, so start-up never waits for it). Whatever orjson refuses —
    a lone surrogate, a non-string key, an int past 64 bits, deep nesting, a type it would
    encode where the json module would not (dataclasses, datetimes) — goes the json module's way,
    with its rules: a string that UTF-8 cannot encode (a lone surrogate) falls back to ASCII
    escapes, which any JSON reader accepts, instead of failing the write."""
    orjson = sys.modules.get("orjson")
    fast = getattr(orjson, "dumps", None)
    if orjson is not None and fast is not None:
        try:
            # Dataclasses and datetimes go to orjson's `default` (none given): an error, so the
            # json module decides about them, as before.
            line: bytes = fast(message, option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME)
            return line + b"\n"
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")
