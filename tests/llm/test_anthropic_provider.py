"""The `anthropic` provider against the fake server's Messages mode (real httpx)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kimi_acp.llm.anthropic import AnthropicProvider
from kimi_acp.llm.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    ChatProviderError,
    is_retryable,
)
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
    anthropic_text_reply,
    anthropic_tool_reply,
)

KEY = "sk-ant-secret-0000111122223333"
HISTORY = [Message(role="user", content="hi")]


@pytest.fixture
async def provider(server: FakeLLMServer) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider(model="claude-test", base_url=server.url, api_key=KEY, timeout=5.0)
    yield p
    await p.aclose()


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


async def _error_of(provider: AnthropicProvider) -> ChatProviderError:
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert KEY not in str(info.value)
    return info.value


async def test_streams_thinking_text_and_usage(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        anthropic_text_reply(
            "Hel", "lo", thinking="hmm", signature="sig-1", message_id="msg_1", usage=(12, 34, 100, 7)
        )
    )
    stream = provider.stream("sys", [], HISTORY)
    assert await collect(stream) == [
        ThinkPart(think="hmm"),
        ThinkPart(think="", encrypted="sig-1"),
        TextPart(text="Hel"),
        TextPart(text="lo"),
    ]
    assert stream.id == "msg_1"
    assert stream.usage == TokenUsage(input_other=12, output=34, input_cache_read=100, input_cache_creation=7)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"


async def test_streams_tool_use(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        anthropic_tool_reply(
            ("toolu_1", "Shell", ['{"comm', 'and": "ls"}']), ("toolu_2", "Noop", []), text="Checking"
        )
    )
    parts = await collect(provider.stream("", [], HISTORY))
    assert parts == [
        TextPart(text="Checking"),
        ToolCall(id="toolu_1", function=FunctionBody(name="Shell", arguments=None)),
        ToolCallPart(arguments_part='{"comm'),
        ToolCallPart(arguments_part='and": "ls"}'),
        ToolCall(id="toolu_2", function=FunctionBody(name="Noop", arguments=None)),
    ]


async def test_base_url_ending_in_v1(server: FakeLLMServer) -> None:
    provider = AnthropicProvider(model="c", base_url=server.url + "/v1/", timeout=5.0)
    server.enqueue(anthropic_text_reply("ok"))
    await collect(provider.stream("", [], HISTORY))
    assert server.requests[0].path == "/v1/messages"
    assert "x-api-key" not in server.requests[0].headers
    await provider.aclose()


async def test_request_body(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    history = [
        Message(
            role="user",
            content=[
                TextPart(text="see"),
                ImageURLPart(image_url=MediaURL(url="data:image/png;base64,QUJD")),
                ImageURLPart(image_url=MediaURL(url="https://x.test/a.png")),
            ],
        ),
        Message(
            role="assistant",
            content=[
                ThinkPart(think="plan "),
                ThinkPart(think="it", encrypted="sig-A"),
                TextPart(text="Running"),
                ThinkPart(think="unsigned, from another provider"),
            ],
            tool_calls=[
                ToolCall(id="t1", function=FunctionBody(name="Shell", arguments='{"command": "ls"}')),
                ToolCall(id="t2", function=FunctionBody(name="Noop", arguments=None)),
            ],
        ),
        Message(role="tool", tool_call_id="t1", content="a.py"),
        Message(role="tool", tool_call_id="t2", content=""),
        Message(role="system", content="note"),
    ]
    tools = [ToolSpec(name="Shell", description="Run", parameters={"type": "object", "properties": {}})]
    server.enqueue(anthropic_text_reply("ok"))
    await collect(provider.stream("Be brief.", tools, history))
    body = server.requests[0].body
    assert body["model"] == "claude-test" and body["stream"] is True and body["max_tokens"] == 32000
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"] == [
        {
            "name": "Shell",
            "description": "Run",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert "thinking" not in body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan it", "signature": "sig-A"},
                {"type": "text", "text": "Running"},
                {"type": "tool_use", "id": "t1", "name": "Shell", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "t2", "name": "Noop", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                {"type": "tool_result", "tool_use_id": "t2"},
                {"type": "text", "text": "<system>note</system>", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]


@pytest.mark.parametrize(("effort", "budget"), [("low", 1024), ("medium", 4096), ("high", 16000)])
def test_thinking_budget(effort: str, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_MODEL_TEMPERATURE", "0.2")
    provider = AnthropicProvider(model="c", base_url="http://127.0.0.1:9", thinking=effort, session_id="s1")  # type: ignore[arg-type]
    body = provider.build_body("", [], HISTORY)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert "temperature" not in body  # not allowed with extended thinking
    assert body["metadata"] == {"user_id": "s1"}
    off = AnthropicProvider(model="c", base_url="http://127.0.0.1:9", thinking="off")
    off_body = off.build_body("", [], HISTORY)
    assert "thinking" not in off_body and off_body["temperature"] == 0.2


def test_max_tokens_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_MODEL_MAX_COMPLETION_TOKENS", "2000")
    body = AnthropicProvider(model="c", base_url="http://h", thinking="high").build_body("", [], HISTORY)
    assert body["max_tokens"] == 2000 and body["thinking"]["budget_tokens"] == 1999


async def test_overloaded_error_event(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        Stream([{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}])
    )
    error = await _error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 529 and is_retryable(error)
    assert "Overloaded" in str(error)


async def test_other_error_event(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        Stream([{"type": "error", "error": {"type": "invalid_request_error", "message": "bad thing"}}])
    )
    error = await _error_of(provider)
    assert type(error) is ChatProviderError and "bad thing" in str(error)


async def test_http_errors(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        ErrorReply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
            {"retry-after": "3"},
        ),
        ErrorReply(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": f"messages.0: key {KEY} is wrong"},
            },
        ),
    )
    first = await _error_of(provider)
    assert isinstance(first, APIStatusError) and first.retry_after == 3.0 and is_retryable(first)
    assert str(first) == "429 Too Many Requests: slow down"
    second = await _error_of(provider)
    assert isinstance(second, APIStatusError) and not is_retryable(second)
    assert "messages.0: key *** is wrong" in str(second)


async def test_empty_and_thinking_only_replies(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(anthropic_text_reply(), anthropic_text_reply(thinking="just thoughts", signature="s"))
    assert isinstance(await _error_of(provider), APIEmptyResponseError)
    assert isinstance(await _error_of(provider), APIEmptyResponseError)


async def test_dropped_and_truncated_streams(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    reply = anthropic_text_reply("a", "b")
    server.enqueue(Stream(reply.events, drop_after=4), Stream(reply.events[:-1]))
    assert isinstance(await _error_of(provider), APIConnectionError)
    assert isinstance(await _error_of(provider), APIConnectionError)  # no message_stop


async def test_malformed_event(server: FakeLLMServer, provider: AnthropicProvider) -> None:
    server.enqueue(Stream(["event: message_start\ndata: {truncated"]))
    error = await _error_of(provider)
    assert type(error) is ChatProviderError and str(error) == "malformed streaming response: {truncated"


def test_reasoning_encrypted_by_openai_is_not_sent_as_a_signature() -> None:
    """A session that used the Responses API keeps OpenAI's encrypted reasoning in its think
    parts; Anthropic would refuse it as a signature, so that thinking is dropped like unsigned."""
    from kimi_acp.llm.anthropic import to_anthropic_messages

    history = [Message(role="assistant", content=[ThinkPart(think="t", encrypted="gAAAAABopenai"), TextPart(text="hi")])]
    assert to_anthropic_messages(history) == [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]
