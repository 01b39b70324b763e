"""Every error code of the Wire protocol, from `kimi --wire` (served in this process; stdout purity
from a real process)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.wire_client import event_types, events, tool_call


async def test_parse_error(start_wire):
    wire = await start_wire([])
    await wire.send_raw("{not json")
    message = await wire.recv()
    assert message == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Invalid JSON format"}}


async def test_invalid_requests(start_wire):
    wire = await start_wire([])
    await wire.send({"jsonrpc": "1.0", "method": "prompt", "id": "a", "params": {"user_input": "x"}})
    assert (await wire.recv())["error"]["code"] == -32600
    await wire.send({"jsonrpc": "2.0", "method": "prompt", "id": {"bad": 1}, "params": {"user_input": "x"}})
    message = await wire.recv()
    assert message["error"]["code"] == -32600 and message["id"] is None
    await wire.send_raw("[1, 2]")
    assert (await wire.recv())["error"]["code"] == -32600
    await wire.send({"jsonrpc": "2.0", "method": "prompt", "id": "b", "params": "text"})
    message = await wire.recv()
    assert message["error"]["code"] == -32600 and message["id"] == "b"


async def test_method_not_found(start_wire):
    wire = await start_wire([])
    response, _ = await wire.call("session/new", {})
    assert response["error"]["code"] == -32601
    assert "session/new" in response["error"]["message"]


async def test_invalid_params(start_wire):
    wire = await start_wire([])
    response, _ = await wire.call("prompt", {"text": "wrong key"})
    assert response["error"]["code"] == -32602
    assert "user_input" in response["error"]["message"]
    response, _ = await wire.call("initialize", {})
    assert response["error"]["code"] == -32602
    response, _ = await wire.call("set_plan_mode", {"enabled": "maybe"})
    assert response["error"]["code"] == -32602


async def test_busy_and_idle_states(start_wire):
    wire = await start_wire([tool_call("tc-1", "Shell", {"command": "echo x"}), "text: done"])
    for method in ("steer", "cancel"):
        params = {"user_input": "x"} if method == "steer" else None
        response, _ = await wire.call(method, params)
        assert response["error"] == {"code": -32000, "message": "No agent turn is in progress"}
    prompt_id = await wire.request("prompt", {"user_input": "go"})
    request, _ = await wire.next_request()  # the turn is now waiting for approval
    for method in ("prompt", "replay", "initialize"):
        params = {"user_input": "again"} if method == "prompt" else ({"protocol_version": "1.10"} if method == "initialize" else None)
        response, _ = await wire.call(method, params)
        assert response["error"] == {"code": -32000, "message": "An agent turn is already in progress"}
    await wire.respond(request["id"], {"request_id": request["params"]["payload"]["id"], "response": "approve"})
    response, _ = await wire.response(prompt_id)
    assert response["result"] == {"status": "finished"}


async def test_llm_not_set(start_wire, tmp_path: Path):
    config = tmp_path / "empty.toml"
    config.write_text("default_model = ''\n")
    wire = await start_wire(config=config)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["error"]["code"] == -32001
    assert "LLM is not set" in response["error"]["message"]
    assert event_types(seen) == ["TurnBegin", "TurnEnd"]


async def test_llm_not_supported_for_images(start_wire):
    wire = await start_wire(["text: unused"])
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    response, _ = await wire.call("prompt", {"user_input": [{"type": "text", "text": "look"}, image]})
    assert response["error"]["code"] == -32002
    assert "image_in" in response["error"]["message"]


async def test_provider_error_is_reported(start_wire):
    wire = await start_wire(["error: 400 model does not exist"])
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["error"]["code"] == -32003
    assert "model does not exist" in response["error"]["message"]
    assert event_types(seen)[-2:] == ["StepInterrupted", "TurnEnd"]


async def test_retryable_error_then_success_emits_step_retry(start_wire):
    wire = await start_wire(["error: 503 overloaded", "text: recovered"])
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    retry = events(seen, "StepRetry")[0]["payload"]
    assert retry["n"] == 1 and retry["next_attempt"] == 2 and retry["max_attempts"] == 3
    assert retry["status_code"] == 503 and retry["error_type"] == "APIStatusError"


async def test_numeric_ids_and_notifications(start_wire):
    wire = await start_wire(["text: numbered"])
    await wire.send({"jsonrpc": "2.0", "method": "initialize", "id": 7, "params": {"protocol_version": "1.10"}})
    response = await wire.recv()
    assert response["id"] == 7 and "result" in response
    response, _ = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    # A notification (no id) of an unknown method gets no answer; the next request is answered.
    await wire.send({"jsonrpc": "2.0", "method": "no_such_thing", "params": {}})
    response, seen = await wire.call("replay")
    assert response["result"]["status"] == "finished"
    assert not any("error" in m for m in seen)


async def test_stdout_is_protocol_only(start_wire_process, tmp_path: Path):
    wire = await start_wire_process(["text: a", "error: 401 bad key sk-secret-123"])
    await wire.call("prompt", {"user_input": "one"})
    await wire.call("prompt", {"user_input": "two"})
    await wire.close()
    for message in wire.received:
        assert message["jsonrpc"] == "2.0"
    rest = await wire.proc.stdout.read()  # type: ignore[union-attr]
    assert rest == b""
    assert json.dumps(wire.received).count("Traceback") == 0
