"""JSON-RPC 2.0 framing for line-delimited stdio: parse one line, build replies, error codes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

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


class JsonRpcError(Exception):
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


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_line(line: bytes | str) -> Incoming:
    """Parse and validate one line. Raises JsonRpcError (-32700 / -32600) with the id if known."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise JsonRpcError(PARSE_ERROR, "Invalid JSON format") from None
    if not isinstance(data, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: a JSON-RPC message must be an object")
    has_id = "id" in data
    raw_id = data.get("id")
    request_id = raw_id if _valid_id(raw_id) else None
    if data.get("jsonrpc") != JSONRPC_VERSION:
        raise JsonRpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id=request_id)
    if has_id and not _valid_id(raw_id):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    method = data.get("method")
    if method is None:
        if not has_id:
            raise JsonRpcError(INVALID_REQUEST, "Invalid request: missing method")
        if ("result" in data) == ("error" in data):
            raise JsonRpcError(INVALID_REQUEST, "Invalid response: exactly one of result and error")
        error = data.get("error")
        if "error" in data and not (isinstance(error, dict) and isinstance(error.get("code"), int)):
            raise JsonRpcError(INVALID_REQUEST, "Invalid response: malformed error object")
        return Incoming(None, None, request_id, True, data.get("result"), error)
    if not isinstance(method, str) or not method:
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: method must be a non-empty string", request_id=request_id)
    params = data.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise JsonRpcError(INVALID_REQUEST, "Invalid request: params must be an object or an array", request_id=request_id)
    return Incoming(method, params, request_id, has_id)


def result_message(request_id: RequestId | None, result: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: JsonRpcError) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_obj()}


def request_message(request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "id": request_id, "params": params}


def notification_message(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}


def dumps(message: dict[str, Any]) -> bytes:
    """One line of compact JSON, newline-terminated, UTF-8 (non-ASCII kept as is)."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
