"""`kimi --wire` on an `openai_legacy` provider, against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import (
    ErrorReply,
    FakeLLMServer,
    Stream,
    chunk,
    error_reply,
    text_reply,
    tool_call_delta,
    usage_chunk,
)
from tests.support.wire_client import WireProcess, event_types, events, text_of

SECRET = "sk-proj-FAKESECRET-4b1d9e7c0a2f"

StartProvider = Callable[..., Awaitable[WireProcess]]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
async def start_provider_wire(tmp_path: Path, work_dir: Path) -> AsyncIterator[StartProvider]:
    """Start `kimi --wire` on an openai_legacy provider at `base_url`; checks no secret leaked at teardown."""
    started: list[WireProcess] = []

    async def start(base_url: str, *args: str) -> WireProcess:
        config = {
            "default_model": "fake",
            "models": {"fake": {"provider": "fakeprov", "model": "fake-model", "max_context_size": 100_000}},
            "providers": {"fakeprov": {"type": "openai_legacy", "base_url": base_url, "api_key": SECRET}},
        }
        path = tmp_path / f"config{len(started)}.json"
        path.write_text(json.dumps(config))
        wire = await WireProcess.start(
            "--work-dir", str(work_dir), "--config-file", str(path), *args, env={"KIMI_LOG_LEVEL": "DEBUG"}
        )
        started.append(wire)
        return wire

    yield start
    for wire in started:
        if wire.proc.returncode is None:
            try:
                await wire.close(timeout=5)
            except Exception:
                wire.kill()


async def finish(wire: WireProcess, share_dir: Path) -> None:
    """Close stdin, then check that the key is nowhere: stdout, stderr, logs."""
    assert wire.proc.stdin is not None and wire.proc.stdout is not None
    wire.proc.stdin.close()
    rest = await wire.proc.stdout.read()
    rc = await wire.proc.wait()
    assert rc == 0, await wire.stderr_text()
    stdout = "\n".join(json.dumps(m) for m in wire.received) + rest.decode()
    stderr = await wire.stderr_text()
    assert SECRET not in stdout
    assert SECRET not in stderr
    assert "Traceback" not in stderr
    logs = share_dir / "logs" / "kimi.log"
    assert logs.is_file()
    assert SECRET not in logs.read_text()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamed_text_reaches_the_client_in_order(start_provider_wire, server: FakeLLMServer, share_dir: Path) -> None:
    server.enqueue(text_reply("Hel", "lo, ", "wörld", "!"))
    wire = await start_provider_wire(server.base_url)
    response, seen = await wire.call("prompt", {"user_input": "greet me"})
    assert response["result"] == {"status": "finished"}
    assert event_types(seen) == ["TurnBegin", "StepBegin"] + ["ContentPart"] * 4 + ["StatusUpdate", "TurnEnd"]
    assert [e["payload"] for e in events(seen, "ContentPart")] == [
        {"type": "text", "text": piece} for piece in ("Hel", "lo, ", "wörld", "!")
    ]
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.body
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "greet me"}
    assert {t["function"]["name"] for t in body["tools"]} >= {"Shell", "ReadFile", "WriteFile"}
    await finish(wire, share_dir)


async def test_tool_call_streamed_in_split_deltas_runs_and_is_sent_back(
    start_provider_wire, server: FakeLLMServer, share_dir: Path
) -> None:
    arguments = json.dumps({"command": "echo split-ok"})
    server.enqueue(
        Stream(
            [
                chunk(content="Running it."),
                chunk(tool_calls=[tool_call_delta(0, id="call_1", name="Sh")]),
                chunk(tool_calls=[{"index": 0, "function": {"name": "ell", "arguments": arguments[:7]}}]),
                chunk(tool_calls=[tool_call_delta(0, arguments=arguments[7:15])]),
                chunk(tool_calls=[tool_call_delta(0, arguments=arguments[15:])]),
                chunk(finish_reason="tool_calls"),
                usage_chunk(50, 10),
            ]
        ),
        text_reply("It printed split-ok."),
    )
    wire = await start_provider_wire(server.base_url, "--yolo")
    response, seen = await wire.call("prompt", {"user_input": "run echo"})
    assert response["result"] == {"status": "finished"}
    (call,) = events(seen, "ToolCall")
    assert call["payload"]["id"] == "call_1" and call["payload"]["function"]["name"] == "Shell"
    streamed = (call["payload"]["function"]["arguments"] or "") + "".join(
        e["payload"]["arguments_part"] or "" for e in events(seen, "ToolCallPart")
    )
    assert json.loads(streamed) == {"command": "echo split-ok"}
    (result,) = events(seen, "ToolResult")
    assert result["payload"]["tool_call_id"] == "call_1"
    assert not result["payload"]["return_value"]["is_error"]
    assert "split-ok" in result["payload"]["return_value"]["output"]
    assert text_of(seen) == "Running it.It printed split-ok."

    first, second = server.requests
    messages = second.body["messages"]
    assert messages[: len(first.body["messages"])] == first.body["messages"]
    assistant, tool = messages[-2], messages[-1]
    assert assistant["role"] == "assistant" and assistant["content"] == "Running it."
    assert assistant["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "Shell", "arguments": arguments}}
    ]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_1"
    assert "split-ok" in tool["content"]
    await finish(wire, share_dir)


async def test_429_then_success_retries(start_provider_wire, server: FakeLLMServer, share_dir: Path) -> None:
    server.enqueue(error_reply(429, "slow down", retry_after=0), text_reply("made it"))
    wire = await start_provider_wire(server.base_url)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    (retry,) = events(seen, "StepRetry")
    assert retry["payload"]["status_code"] == 429
    assert (retry["payload"]["n"], retry["payload"]["next_attempt"], retry["payload"]["max_attempts"]) == (1, 2, 3)
    assert retry["payload"]["error_type"] == "APIStatusError"
    assert retry["payload"]["wait_s"] < 1
    types = event_types(seen)
    assert types.index("StepRetry") < types.index("ContentPart")
    assert types.count("StepBegin") == 1  # a retry is not a new step
    assert text_of(seen) == "made it"
    assert len(server.requests) == 2
    await finish(wire, share_dir)


async def test_500_three_times_is_a_provider_error(start_provider_wire, server: FakeLLMServer, share_dir: Path) -> None:
    # The server echoes the key in its error text (some do): it must still never reach the client.
    for _ in range(3):
        server.enqueue(ErrorReply(500, {"error": {"message": f"upstream exploded (key {SECRET})"}},
                                  {"Retry-After": "0"}))
    wire = await start_provider_wire(server.base_url)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    error = response["error"]
    assert error["code"] == -32003
    assert "500" in error["message"] and "upstream exploded" in error["message"]
    assert SECRET not in error["message"]
    retries = events(seen, "StepRetry")
    assert [r["payload"]["next_attempt"] for r in retries] == [2, 3]
    assert all(r["payload"]["status_code"] == 500 for r in retries)
    assert event_types(seen)[-2:] == ["StepInterrupted", "TurnEnd"]
    assert len(server.requests) == 3
    # the session still works afterwards
    server.enqueue(text_reply("recovered"))
    response, seen = await wire.call("prompt", {"user_input": "again"})
    assert response["result"] == {"status": "finished"} and text_of(seen) == "recovered"
    await finish(wire, share_dir)


async def test_connection_refused_is_a_provider_error_after_retries(start_provider_wire, share_dir: Path) -> None:
    wire = await start_provider_wire(f"http://127.0.0.1:{closed_port()}/v1")
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["error"]["code"] == -32003
    assert "connect" in response["error"]["message"].lower()
    retries = events(seen, "StepRetry")
    assert len(retries) == 2
    assert all(r["payload"]["error_type"] == "APIConnectionError" and r["payload"]["status_code"] is None for r in retries)
    assert event_types(seen)[-1] == "TurnEnd"
    await finish(wire, share_dir)


async def test_non_retryable_status_fails_at_once(start_provider_wire, server: FakeLLMServer, share_dir: Path) -> None:
    server.enqueue(error_reply(401, "Incorrect API key provided: " + SECRET[:12] + "..." + SECRET[-4:]))
    wire = await start_provider_wire(server.base_url)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["error"]["code"] in (-32003, -32004)
    assert "401" in response["error"]["message"]
    assert events(seen, "StepRetry") == []
    assert len(server.requests) == 1
    await finish(wire, share_dir)


async def test_usage_with_cached_tokens_reaches_status_update(
    start_provider_wire, server: FakeLLMServer, share_dir: Path
) -> None:
    server.enqueue(
        Stream([chunk(content="ok"), chunk(finish_reason="stop"), usage_chunk(1200, 34, cached_tokens=1000)], ),
    )
    wire = await start_provider_wire(server.base_url)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert response["result"] == {"status": "finished"}
    (status,) = events(seen, "StatusUpdate")
    payload: dict[str, Any] = status["payload"]
    assert payload["token_usage"] == {
        "input_other": 200, "output": 34, "input_cache_read": 1000, "input_cache_creation": 0,
    }
    assert payload["context_tokens"] == 1200
    assert payload["max_context_tokens"] == 100_000
    assert payload["context_usage"] == pytest.approx(0.012)
    assert payload["message_id"] == "chatcmpl-fake"
    await finish(wire, share_dir)


async def test_cancel_during_a_retry_wait_ends_the_turn_promptly(
    start_provider_wire, server: FakeLLMServer, share_dir: Path
) -> None:
    server.enqueue(error_reply(503, "overloaded", retry_after=30))
    wire = await start_provider_wire(server.base_url)
    prompt_id = await wire.request("prompt", {"user_input": "hi"})
    seen = await wire.until(lambda m: m.get("params", {}).get("type") == "StepRetry")
    assert events(seen, "StepRetry")[0]["payload"]["wait_s"] == 30
    cancel, _ = await wire.call("cancel", timeout=2)
    assert cancel["result"] == {}
    response, rest = await wire.response(prompt_id, timeout=2)
    assert response["result"] == {"status": "cancelled"}
    assert event_types(rest)[-1] == "TurnEnd"
    assert len(server.requests) == 1
    await finish(wire, share_dir)


async def test_cancel_during_a_slow_stream_stops_it_within_a_second(
    start_provider_wire, server: FakeLLMServer, share_dir: Path
) -> None:
    server.enqueue(Stream([chunk(content=f"word{i} ") for i in range(200)], delay=0.05))
    wire = await start_provider_wire(server.base_url)
    prompt_id = await wire.request("prompt", {"user_input": "talk slowly"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "ContentPart")
    started = time.monotonic()
    await wire.request("cancel")
    response, rest = await wire.response(prompt_id, timeout=3)
    assert response["result"] == {"status": "cancelled"}
    assert time.monotonic() - started < 1.0
    assert event_types(rest)[-1] == "TurnEnd"
    received = len(events(wire.received, "ContentPart"))
    assert received < 50  # the stream was cut, not read to its end
    # What was shown is kept in the context, so the next turn knows what the model already said.
    context = next(share_dir.glob("sessions/*/*/context.jsonl")).read_text()
    assert "word0" in context
    await finish(wire, share_dir)


async def test_a_full_context_window_is_compacted_once_and_the_step_asked_again(start_provider_wire, server):
    """A 400 saying the request does not fit the model's window: compaction, then the same step
    again (every provider type maps its context-length error so: llm.errors.is_context_overflow)."""
    server.enqueue(
        text_reply("first answer"),
        error_reply(400, "This model's maximum context length is 8192 tokens", type="invalid_request_error"),
        text_reply("a summary of what happened"),
        text_reply("second answer"),
    )
    wire = await start_provider_wire(server.base_url)
    await wire.call("initialize", {"protocol_version": "1.10"})
    await wire.call("prompt", {"user_input": "one"})
    response, seen = await wire.call("prompt", {"user_input": "two"})
    assert response["result"] == {"status": "finished"}
    assert "CompactionBegin" in event_types(seen) and "CompactionEnd" in event_types(seen)
    assert text_of(seen) == "second answer"
    assert len(server.requests) == 4
