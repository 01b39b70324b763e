"""`openai_legacy` against a real loopback server (real httpx, real sockets)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from kimi_acp.llm.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    is_retryable,
)
from kimi_acp.llm.openai_legacy import OpenAILegacyProvider
from kimi_acp.llm.types import ChatStream, Message, StreamPart, ToolSpec
from kimi_acp.wire.types import (
    FunctionBody,
    ImageURLPart,
    MediaURL,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
)
from tests.fakes.openai_server import (
    ErrorReply,
    FakeLLMServer,
    Stream,
    chunk,
    error_reply,
    text_reply,
    tool_call_delta,
    tool_call_reply,
    usage_chunk,
)

KEY = "sk-test-very-secret-key-0123456789"
HISTORY = [Message(role="user", content="hi")]


@pytest.fixture
async def provider(server: FakeLLMServer) -> AsyncIterator[OpenAILegacyProvider]:
    p = OpenAILegacyProvider(model="gpt-test", base_url=server.base_url + "/", api_key=KEY, timeout=5.0)
    yield p
    await p.aclose()


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


def merge_calls(parts: list[StreamPart]) -> list[tuple[str, str, str | None]]:
    """What the core does: a ToolCall opens a call, following ToolCallParts extend it."""
    calls: list[tuple[str, str, str | None]] = []
    for part in parts:
        if isinstance(part, ToolCall):
            calls.append((part.id, part.function.name, part.function.arguments))
        elif isinstance(part, ToolCallPart):
            assert calls, "ToolCallPart before any ToolCall"
            call_id, name, args = calls[-1]
            calls[-1] = (call_id, name, (args or "") + (part.arguments_part or ""))
    return calls


# --------------------------------------------------------------------------- streaming


async def test_streams_text_id_and_usage(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(text_reply("Hel", "lo", "", " world", id="chatcmpl-42"))
    stream = provider.stream("sys", [], HISTORY)
    assert await collect(stream) == [TextPart(text="Hel"), TextPart(text="lo"), TextPart(text=" world")]
    assert stream.id == "chatcmpl-42"
    assert stream.usage == TokenUsage(input_other=10, output=5)
    assert server.requests[0].path == "/v1/chat/completions"


async def test_nothing_is_sent_before_iteration(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    stream = provider.stream("sys", [], HISTORY)
    assert server.requests == []
    await stream.aclose()


async def test_reasoning_content_becomes_think_parts(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(text_reply("42", reasoning=["Let me ", "think."]))
    parts = await collect(provider.stream("", [], HISTORY))
    assert parts == [ThinkPart(think="Let me "), ThinkPart(think="think."), TextPart(text="42")]


async def test_configured_reasoning_key(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(
        model="m", base_url=server.base_url, reasoning_key="reasoning", timeout=5.0
    )
    server.enqueue(
        Stream(
            [
                chunk(reasoning="hmm", reasoning_key="reasoning"),
                chunk(content="ok"),
                chunk(reasoning="ignored", reasoning_key="reasoning_content"),
                chunk(finish_reason="stop"),
            ]
        )
    )
    assert await collect(provider.stream("", [], HISTORY)) == [ThinkPart(think="hmm"), TextPart(text="ok")]
    await provider.aclose()


async def test_tool_call_split_across_chunks(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(
        Stream(
            [
                chunk(content="Let me look."),
                chunk(tool_calls=[tool_call_delta(0, id="call_1", name="Sh")]),
                chunk(tool_calls=[tool_call_delta(0, name="ell", arguments="")]),
                chunk(tool_calls=[tool_call_delta(0, arguments='{"com')]),
                chunk(tool_calls=[tool_call_delta(0, arguments='mand": ')]),
                chunk(tool_calls=[tool_call_delta(0, arguments='"ls"}')]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    assert parts == [
        TextPart(text="Let me look."),
        ToolCall(id="call_1", function=FunctionBody(name="Shell", arguments='{"com')),
        ToolCallPart(arguments_part='mand": '),
        ToolCallPart(arguments_part='"ls"}'),
    ]


async def test_tool_call_without_arguments(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(
        Stream(
            [
                chunk(tool_calls=[tool_call_delta(0, id="c", name="Ping", arguments="")]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    assert await collect(provider.stream("", [], HISTORY)) == [
        ToolCall(id="c", function=FunctionBody(name="Ping", arguments=None))
    ]


async def test_two_parallel_tool_calls(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(
        tool_call_reply(
            ("call_a", "ReadFile", '{"path": "a.py"}'), ("call_b", "ReadFile", '{"path": "b.py"}')
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    assert merge_calls(parts) == [
        ("call_a", "ReadFile", '{"path": "a.py"}'),
        ("call_b", "ReadFile", '{"path": "b.py"}'),
    ]
    assert [type(p) for p in parts].count(ToolCall) == 2


async def test_one_chunk_with_deltas_for_two_indexes(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(
        Stream(
            [
                chunk(
                    tool_calls=[
                        tool_call_delta(1, id="c1", name="B", arguments='{"b"'),
                        tool_call_delta(0, id="c0", name="A", arguments='{"a"'),
                    ]
                ),
                chunk(tool_calls=[tool_call_delta(1, arguments=": 2}"), tool_call_delta(0, arguments=": 1")]),
                chunk(tool_calls=[tool_call_delta(0, arguments="}")]),
                chunk(finish_reason="tool_calls"),
                usage_chunk(5, 5),
            ]
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    # Each call's parts are contiguous and calls come in index order.
    assert merge_calls(parts) == [("c0", "A", '{"a": 1}'), ("c1", "B", '{"b": 2}')]
    assert parts == [
        ToolCall(id="c0", function=FunctionBody(name="A", arguments='{"a"')),
        ToolCallPart(arguments_part=": 1"),
        ToolCallPart(arguments_part="}"),
        ToolCall(id="c1", function=FunctionBody(name="B", arguments='{"b": 2}')),
    ]


async def test_text_after_tool_call_does_not_split_it(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(
        Stream(
            [
                chunk(tool_calls=[tool_call_delta(0, id="c0", name="A", arguments="{")]),
                chunk(content="aside"),
                chunk(tool_calls=[tool_call_delta(0, arguments="}")]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    assert parts == [
        ToolCall(id="c0", function=FunctionBody(name="A", arguments="{")),
        ToolCallPart(arguments_part="}"),
        TextPart(text="aside"),
    ]


async def test_usage_with_cached_tokens(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(text_reply("a", usage=(100, 20, 30)))
    stream = provider.stream("", [], HISTORY)
    await collect(stream)
    assert stream.usage == TokenUsage(input_other=70, input_cache_read=30, output=20)


async def test_usage_moonshot_cached_tokens_inside_choice(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    last = chunk(finish_reason="stop")
    last["choices"][0]["usage"] = usage_chunk(50, 7, 40, moonshot=True)["usage"]
    server.enqueue(Stream([chunk(content="x"), last]))
    stream = provider.stream("", [], HISTORY)
    await collect(stream)
    assert stream.usage == TokenUsage(input_other=10, input_cache_read=40, output=7)


async def test_unicode_line_separators_inside_json(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(text_reply("a\u2028b\u2029c\x85d"))
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="a\u2028b\u2029c\x85d")]


async def test_plain_json_reply_is_accepted(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    body = {
        "id": "cmpl-1",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "whole"}}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    server.enqueue(ErrorReply(200, body))
    stream = provider.stream("", [], HISTORY)
    assert await collect(stream) == [TextPart(text="whole")]
    assert stream.id == "cmpl-1" and stream.usage == TokenUsage(input_other=3, output=1)


async def test_early_close_then_reuse(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(text_reply("a", "b", "c"), text_reply("again"))
    stream = provider.stream("", [], HISTORY)
    async for _part in stream:
        break
    await stream.aclose()
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="again")]


# --------------------------------------------------------------------------- request shape


def _history() -> list[Message]:
    return [
        Message(role="user", content="list files"),
        Message(
            role="user",
            content=[
                TextPart(text="look:"),
                ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AAAA")),
            ],
        ),
        Message(
            role="assistant",
            content=[ThinkPart(think="I should run ls"), TextPart(text="Running")],
            tool_calls=[
                ToolCall(id="call_1", function=FunctionBody(name="Shell", arguments='{"command": "ls"}')),
                ToolCall(id="call_2", function=FunctionBody(name="Noop")),
            ],
        ),
        Message(role="tool", tool_call_id="call_1", content=[TextPart(text="a.py\n"), TextPart(text="b.py")]),
        Message(role="tool", tool_call_id="call_2", content="done"),
        Message(role="system", content="reminder"),
        Message(
            role="assistant",
            content=[],
            tool_calls=[ToolCall(id="call_3", function=FunctionBody(name="Shell", arguments="{}"))],
        ),
        Message(role="tool", tool_call_id="call_3", content=""),
    ]


TOOLS = [
    ToolSpec(
        name="Shell",
        description="Run a command",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}},
    )
]


async def test_request_body_and_headers(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(
        model="gpt-test",
        base_url=server.base_url,
        api_key=KEY,
        timeout=5.0,
        custom_headers={"X-Team": "blue", "User-Agent": "custom-agent/1"},
    )
    server.enqueue(text_reply("ok"))
    await collect(provider.stream("You are helpful.", TOOLS, _history()))
    await provider.aclose()
    request = server.requests[0]
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "Shell",
                "description": "Run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "list files"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Running",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "Shell", "arguments": '{"command": "ls"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "Noop", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "tool", "tool_call_id": "call_2", "content": "done"},
        {"role": "system", "content": "reminder"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "Shell", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": ""},
    ]
    assert "reasoning_effort" not in body and "max_tokens" not in body and "temperature" not in body
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-team"] == "blue"
    assert request.headers["user-agent"] == "custom-agent/1"  # custom headers win
    assert request.headers["content-type"] == "application/json"


async def test_default_user_agent_and_no_key(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0)
    server.enqueue(text_reply("ok"))
    await collect(provider.stream("", [], HISTORY))
    await provider.aclose()
    headers = server.requests[0].headers
    assert "authorization" not in headers
    assert headers["user-agent"].startswith("kimi-acp/")
    assert "tools" not in server.requests[0].body


async def test_reasoning_sent_back_only_with_configured_key(server: FakeLLMServer) -> None:
    plain = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0)
    keyed = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0, reasoning_key="reasoning")
    server.enqueue(text_reply("ok"), text_reply("ok"))
    await collect(plain.stream("", [], _history()))
    await collect(keyed.stream("", [], _history()))
    first, second = (r.body["messages"][2] for r in server.requests)
    assert "reasoning_content" not in first and "reasoning" not in first
    assert second["reasoning"] == "I should run ls"
    await plain.aclose()
    await keyed.aclose()


async def test_sampling_overrides_and_thinking(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMI_MODEL_TEMPERATURE", "0.3")
    monkeypatch.setenv("KIMI_MODEL_TOP_P", "0.9")
    monkeypatch.setenv("KIMI_MODEL_MAX_COMPLETION_TOKENS", "1234")
    provider = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0, thinking="high")
    body = provider.build_body("", [], HISTORY)
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.3, 0.9, 1234)
    assert body["reasoning_effort"] == "high"
    assert "max_completion_tokens" not in body
    off = OpenAILegacyProvider(model="m", base_url=server.base_url, thinking="off")
    assert "reasoning_effort" not in off.build_body("", [], HISTORY)


# --------------------------------------------------------------------------- errors


async def _error_of(provider: OpenAILegacyProvider) -> ChatProviderError:
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert KEY not in str(info.value)
    return info.value


async def test_429_with_retry_after(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(error_reply(429, "Rate limit reached", retry_after=2))
    error = await _error_of(provider)
    assert isinstance(error, APIStatusError)
    assert error.status_code == 429 and error.retry_after == 2.0
    assert is_retryable(error)
    assert str(error) == "429 Too Many Requests: Rate limit reached"


async def test_500_is_retryable(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(ErrorReply(500, "<html>upstream exploded</html>" + "x" * 1000))
    error = await _error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 500 and is_retryable(error)
    assert error.retry_after is None
    assert str(error).startswith("500 Internal Server Error: <html>upstream exploded</html>xxx")
    assert len(str(error)) < 400


async def test_400_is_not_retryable(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(error_reply(400, "Invalid 'messages[2].content': expected a string"))
    error = await _error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 400
    assert not is_retryable(error)
    assert "Invalid 'messages[2].content': expected a string" in str(error)


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAILegacyProvider(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, timeout=5.0
    )
    error = await _error_of(provider)
    assert isinstance(error, APIConnectionError) and is_retryable(error)
    await provider.aclose()


async def test_read_timeout_between_chunks(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(
        model="m", base_url=server.base_url, api_key=KEY, timeout=httpx.Timeout(5.0, read=0.3)
    )
    server.enqueue(Stream([chunk(content="a"), chunk(content="b")], delay=3.0))
    error = await _error_of(provider)
    assert isinstance(error, APITimeoutError) and is_retryable(error)
    await provider.aclose()


async def test_read_timeout_waiting_for_headers(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(
        model="m", base_url=server.base_url, api_key=KEY, timeout=httpx.Timeout(5.0, read=0.3)
    )
    server.enqueue(Stream([chunk(content="a")], delay_before=3.0))
    assert isinstance(await _error_of(provider), APITimeoutError)
    await provider.aclose()


async def test_connection_dropped_mid_stream(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(Stream([chunk(content="partial"), chunk(content="never")], drop_after=1))
    seen: list[StreamPart] = []
    with pytest.raises(APIConnectionError) as info:
        async for part in provider.stream("", [], HISTORY):
            seen.append(part)
    assert seen == [TextPart(text="partial")]
    assert KEY not in str(info.value)


async def test_stream_ending_without_finish_is_a_broken_connection(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(Stream([chunk(content="cut")], done=False))
    assert isinstance(await _error_of(provider), APIConnectionError)


async def test_malformed_data_line(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(Stream([chunk(content="ok"), "data: {not json" + "!" * 200]))
    error = await _error_of(provider)
    assert type(error) is ChatProviderError
    assert str(error) == "malformed streaming response: {not json" + "!" * 91


async def test_comments_and_unknown_fields_are_ignored(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(
        Stream(
            [
                ": keep-alive",
                "event: message\nid: 7\nretry: 10",
                chunk(content="fine"),
                chunk(finish_reason="stop"),
            ]
        )
    )
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="fine")]


async def test_error_chunk_mid_stream(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(
        Stream([chunk(content="a"), {"error": {"message": "upstream model crashed", "code": 500}}])
    )
    error = await _error_of(provider)
    assert type(error) is ChatProviderError and "upstream model crashed" in str(error)


@pytest.mark.parametrize(
    "events",
    [
        [chunk(finish_reason="stop")],
        [chunk(reasoning="only thinking"), chunk(finish_reason="stop")],
        [chunk(content=""), chunk(finish_reason="stop"), usage_chunk(3, 0)],
    ],
)
async def test_empty_reply(server: FakeLLMServer, provider: OpenAILegacyProvider, events: list[Any]) -> None:
    server.enqueue(Stream(events))
    error = await _error_of(provider)
    assert isinstance(error, APIEmptyResponseError) and is_retryable(error)


async def test_api_key_is_redacted_from_server_echoes(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(
        error_reply(401, f"Incorrect API key provided: {KEY}"),
        ErrorReply(403, f"forbidden for {KEY}"),
        Stream([f"data: oops {KEY}"]),
        Stream([{"error": {"message": f"bad key {KEY}"}}]),
    )
    messages = []
    for _ in range(4):
        messages.append(str(await _error_of(provider)))
    assert all("***" in m for m in messages)
    assert messages[0] == (
        "401 Unauthorized: Incorrect API key provided: ***. "
        "Check this provider's api_key in config.toml. Run `kimi login` to sign in again."
    )


async def test_invalid_base_url_is_not_a_connection_error() -> None:
    provider = OpenAILegacyProvider(model="m", base_url="ftp://example.invalid/v1", timeout=1.0)
    error = await _error_of(provider)
    assert type(error) is ChatProviderError and "invalid base_url" in str(error)
    await provider.aclose()


async def test_aclose_closes_the_client(server: FakeLLMServer) -> None:
    provider = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0)
    server.enqueue(text_reply("one"), text_reply("two"))
    await collect(provider.stream("", [], HISTORY))
    client = provider._client
    assert client is not None and not client.is_closed
    await provider.aclose()
    assert client.is_closed and provider._client is None
    await provider.aclose()  # idempotent
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="two")]  # reopens lazily
    await provider.aclose()


async def test_repeated_names_and_missing_indexes(
    server: FakeLLMServer, provider: OpenAILegacyProvider
) -> None:
    server.enqueue(
        Stream(
            [
                # Some servers repeat the full name on every delta, and some omit `index`.
                chunk(tool_calls=[{"id": "a", "function": {"name": "Shell", "arguments": ""}}]),
                chunk(tool_calls=[{"function": {"name": "Shell", "arguments": '{"x": 1}'}}]),
                chunk(tool_calls=[{"id": "b", "function": {"name": "Read", "arguments": "{}"}}]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    assert merge_calls(parts) == [("a", "Shell", '{"x": 1}'), ("b", "Read", "{}")]


# --------------------------------------------------------------------------- the SSE parser


def test_sse_parser_incremental() -> None:
    from kimi_acp.llm.sse import SSEEvent, SSEParser

    stream = 'data: a\r\ndata: b\r\n\r\n: comment\nevent: ping\nid: 3\ndata:{"k": 1}\r\rdata: [DONE]\n\n'
    for size in (1, 2, 5, len(stream)):
        parser = SSEParser()
        events: list[SSEEvent] = []
        for start in range(0, len(stream), size):
            events += parser.feed(stream[start : start + size])
        assert parser.flush() is None
        assert events == [SSEEvent("a\nb"), SSEEvent('{"k": 1}', event="ping"), SSEEvent("[DONE]")]
        assert [e.is_done for e in events] == [False, False, True]


def test_sse_parser_lines_and_flush() -> None:
    from kimi_acp.llm.sse import SSEEvent, SSEParser

    parser = SSEParser()
    assert parser.feed_line("data:  two spaces") is None
    assert parser.feed_line("event: x") is None
    assert parser.feed_line("") == SSEEvent(" two spaces", event="x")
    assert parser.feed_line("") is None  # blank line without data dispatches nothing
    assert parser.feed("data: unterminated") == []
    assert parser.flush() == SSEEvent("unterminated")


async def test_401_is_the_sign_in_hint_for_every_http_provider(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    """A refused key: SignInRequired (Wire -32004, ACP auth_required), never retried."""
    from kimi_acp.errors import SignInRequired

    server.enqueue(error_reply(401, "Incorrect API key provided"))
    error = await _error_of(provider)
    assert isinstance(error, SignInRequired) and error.status_code == 401 and not is_retryable(error)
    assert "api_key" in str(error) and "kimi login" in str(error)
