"""JSON-RPC 2.0 line framing: every branch of `parse_line`, and `dumps`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kimi_acp.wire import jsonrpc as rpc
from kimi_acp.wire.jsonrpc import Incoming, JsonRpcError, dumps, parse_line


def parse_error(line: str | bytes) -> JsonRpcError:
    with pytest.raises(JsonRpcError) as info:
        parse_line(line)
    return info.value


@pytest.mark.parametrize("line", ["{not json", "", "   ", '{"jsonrpc": "2.0",', b"\xff\xfe{}", "nul\x00"])
def test_parse_error(line: str | bytes) -> None:
    err = parse_error(line)
    assert (err.code, err.message, err.request_id) == (-32700, "Invalid JSON format", None)
    assert rpc.error_message(err.request_id, err) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Invalid JSON format"},
    }


@pytest.mark.parametrize("line", ["[1, 2]", '"text"', "42", "null", "true", "[]"])
def test_non_object_is_invalid_request(line: str) -> None:
    err = parse_error(line)
    assert err.code == -32600 and err.request_id is None
    assert "object" in err.message


@pytest.mark.parametrize("version", [None, "1.0", 2.0, "2"])
def test_bad_jsonrpc_version_keeps_a_valid_id(version: Any) -> None:
    message: dict[str, Any] = {"method": "prompt", "id": "a1", "params": {}}
    if version is not None:
        message["jsonrpc"] = version
    err = parse_error(json.dumps(message))
    assert err.code == -32600
    assert err.request_id == "a1"  # so the client can match the error to its request
    assert '"2.0"' in err.message


@pytest.mark.parametrize("bad_id", [True, False, 1.5, 1.0, {"x": 1}, [1]])
def test_bad_id_types(bad_id: Any) -> None:
    err = parse_error(json.dumps({"jsonrpc": "2.0", "method": "prompt", "id": bad_id}))
    assert err.code == -32600
    assert err.request_id is None  # an unusable id is never echoed
    assert "id must be a string or an integer" in err.message


def test_bad_version_with_a_bad_id_echoes_no_id() -> None:
    err = parse_error(json.dumps({"jsonrpc": "1.0", "method": "prompt", "id": True}))
    assert err.code == -32600 and err.request_id is None


@pytest.mark.parametrize("request_id", ["abc", "", 0, 7, -3, 10**15])
def test_request(request_id: Any) -> None:
    incoming = parse_line(json.dumps({"jsonrpc": "2.0", "method": "prompt", "id": request_id, "params": {"user_input": "x"}}))
    assert incoming == Incoming(method="prompt", params={"user_input": "x"}, id=request_id, has_id=True)
    assert not incoming.is_response


def test_request_from_bytes_with_trailing_newline_and_array_params() -> None:
    incoming = parse_line(b'{"jsonrpc":"2.0","method":"m","id":"1","params":[1,"\xc3\xa9"]}\n')
    assert (incoming.method, incoming.params, incoming.id) == ("m", [1, "é"], "1")


def test_notification() -> None:
    incoming = parse_line('{"jsonrpc": "2.0", "method": "cancel"}')
    assert incoming == Incoming(method="cancel", params=None, id=None, has_id=False)
    assert not incoming.is_response


@pytest.mark.parametrize("method", [5, "", ["prompt"], {"a": 1}])
def test_bad_method(method: Any) -> None:
    err = parse_error(json.dumps({"jsonrpc": "2.0", "method": method, "id": "m1"}))
    assert err.code == -32600 and err.request_id == "m1"
    assert "method" in err.message


@pytest.mark.parametrize("params", ["text", 5, True])
def test_bad_params(params: Any) -> None:
    err = parse_error(json.dumps({"jsonrpc": "2.0", "method": "prompt", "id": "p", "params": params}))
    assert err.code == -32600 and err.request_id == "p"
    assert "params" in err.message


def test_null_params_are_absent_params() -> None:
    assert parse_line('{"jsonrpc": "2.0", "method": "replay", "id": "r", "params": null}').params is None


def test_response_with_result() -> None:
    incoming = parse_line('{"jsonrpc": "2.0", "id": "req-1", "result": {"response": "approve"}}')
    assert incoming.is_response
    assert (incoming.id, incoming.result, incoming.error, incoming.has_id) == (
        "req-1", {"response": "approve"}, None, True,
    )


def test_response_with_null_result() -> None:
    incoming = parse_line('{"jsonrpc": "2.0", "id": 3, "result": null}')
    assert incoming.is_response and incoming.id == 3 and incoming.result is None and incoming.error is None


def test_response_with_error() -> None:
    incoming = parse_line('{"jsonrpc": "2.0", "id": "x", "error": {"code": -32000, "message": "busy", "data": 1}}')
    assert incoming.is_response
    assert incoming.error == {"code": -32000, "message": "busy", "data": 1}
    assert incoming.result is None


def test_request_id_without_method_or_result_is_an_invalid_request() -> None:
    err = parse_error('{"jsonrpc": "2.0", "id": "x"}')
    assert (err.code, err.request_id) == (-32600, "x")
    assert "missing method" in err.message


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": "x", "result": 1, "error": {"code": 1, "message": "m"}},  # both
        {"jsonrpc": "2.0", "id": "x", "error": "boom"},  # error not an object
        {"jsonrpc": "2.0", "id": "x", "error": {"message": "no code"}},
        {"jsonrpc": "2.0", "id": "x", "error": {"code": "-1", "message": "string code"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "your error"}},  # an error about an error
        {"jsonrpc": "2.0", "result": 1},  # no id
        {"jsonrpc": "1.0", "id": "x", "result": 1},
    ],
)
def test_malformed_responses_are_never_answered(message: dict[str, Any]) -> None:
    """Replying to a response (even a broken one) could start an endless exchange of errors."""
    with pytest.raises(rpc.InvalidResponse):
        parse_line(json.dumps(message))


@pytest.mark.parametrize("depth", [10, 99, 101, 1000, 5000, 100_000])
@pytest.mark.parametrize("container", ["[]", "{}"])
def test_any_nesting_depth_is_an_error_not_a_crash(depth: int, container: str) -> None:
    inner = "[" * depth + "]" * depth if container == "[]" else '{"a":' * depth + "1" + "}" * depth
    line = '{"jsonrpc": "2.0", "method": "prompt", "id": 1, "params": {"x": ' + inner + "}}"
    if depth + 2 <= rpc.MAX_DEPTH:
        assert parse_line(line).method == "prompt"
        return
    err = parse_error(line)
    assert err.code in (-32700, -32600)
    assert "nested" in err.message


def test_lone_surrogates_become_replacement_characters() -> None:
    incoming = parse_line(b'{"jsonrpc":"2.0","method":"m\\ud800","id":"\\udfff","params":{"\\uDBFF":"a\\ud83d\\ude80b\\ud800"}}')
    assert incoming.method == "m\ufffd" and incoming.id == "\ufffd"
    assert incoming.params == {"\ufffd": "a\U0001f680b\ufffd"}  # a valid pair stays one character
    assert dumps(rpc.result_message(incoming.id, incoming.params)).decode("utf-8")


def test_dumps_never_fails_on_a_lone_surrogate() -> None:
    data = dumps(rpc.error_message("\ud800", JsonRpcError(-32601, "Method not found: \udc00")))
    assert json.loads(data)["error"]["code"] == -32601


def test_error_codes() -> None:
    assert (rpc.PARSE_ERROR, rpc.INVALID_REQUEST, rpc.METHOD_NOT_FOUND, rpc.INVALID_PARAMS, rpc.INTERNAL_ERROR) == (
        -32700, -32600, -32601, -32602, -32603,
    )
    assert (rpc.INVALID_STATE, rpc.LLM_NOT_SET, rpc.LLM_NOT_SUPPORTED, rpc.CHAT_PROVIDER_ERROR, rpc.AUTH_EXPIRED) == (
        -32000, -32001, -32002, -32003, -32004,
    )


def test_error_object_includes_data_only_when_given() -> None:
    assert JsonRpcError(-32601, "nope").to_obj() == {"code": -32601, "message": "nope"}
    assert JsonRpcError(-32601, "nope", {"method": "m"}).to_obj() == {"code": -32601, "message": "nope", "data": {"method": "m"}}


def test_message_builders() -> None:
    assert rpc.result_message("1", {"a": 1}) == {"jsonrpc": "2.0", "id": "1", "result": {"a": 1}}
    assert rpc.request_message("r", "request", {"type": "T"}) == {
        "jsonrpc": "2.0", "method": "request", "id": "r", "params": {"type": "T"},
    }
    assert rpc.notification_message("event", {}) == {"jsonrpc": "2.0", "method": "event", "params": {}}


def test_dumps_is_one_compact_utf8_line() -> None:
    message = rpc.notification_message(
        "event", {"type": "ContentPart", "payload": {"type": "text", "text": "héllo 世界 🚀\nsecond\r\u2028line"}}
    )
    data = dumps(message)
    assert isinstance(data, bytes)
    assert data.endswith(b"\n") and data.count(b"\n") == 1 and b"\r" not in data
    assert "héllo 世界 🚀".encode() in data  # not \u-escaped
    assert b": " not in data and b", " not in data  # compact separators
    assert json.loads(data) == message
    assert parse_line(dumps({"jsonrpc": "2.0", "method": "prompt", "id": "é", "params": {}})).id == "é"
