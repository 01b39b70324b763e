"""`openai_responses` against a loopback Responses API whose events are the OpenAI SDK's own types,
and whose request check is the SDK's `ResponseCreateParamsStreaming` (tests/fakes/responses_server.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from kimi_acp.errors import SignInRequired
from kimi_acp.llm.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    ChatProviderError,
    is_context_overflow,
    is_retryable,
)
from kimi_acp.llm.openai_responses import OpenAIResponsesProvider, to_responses_input
from kimi_acp.llm.types import ChatStream, Message, StreamPart, ToolSpec, merge_deltas
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
from tests.fakes.openai_server import Stream
from tests.fakes.responses_server import (
    ENCRYPTED,
    FakeResponsesServer,
    ResponsesScript,
    openai_error,
    text_response,
)
from tests.llm.test_openai_provider import merge_calls

KEY = "sk-proj-responses-secret-0123456789"
HISTORY = [Message(role="user", content="hi")]
TOOLS = [ToolSpec("ReadFile", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})]
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    with FakeResponsesServer() as fake:
        yield fake
        assert fake.problems == []  # every body the provider sent validated against the SDK's type


@pytest.fixture
async def provider(server: FakeResponsesServer) -> AsyncIterator[OpenAIResponsesProvider]:
    p = OpenAIResponsesProvider(model="gpt-5-test", base_url=server.base_url, api_key=KEY, timeout=5.0, session_id="sess-1")
    yield p
    await p.aclose()


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


async def error_of(provider: OpenAIResponsesProvider) -> ChatProviderError:
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert KEY not in str(info.value)
    return info.value


# --------------------------------------------------------------------------- the stream


async def test_text_id_usage_with_cached_tokens(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(ResponsesScript(response_id="resp_42").text("Hel", "lo", " world").stream(usage=(1200, 34, 1000, 100)))
    stream = provider.stream("sys", TOOLS, HISTORY)
    assert await collect(stream) == [TextPart(text="Hel"), TextPart(text="lo"), TextPart(text=" world")]
    assert stream.id == "resp_42"
    assert stream.usage == TokenUsage(input_other=100, input_cache_read=1000, input_cache_creation=100, output=34)
    (request,) = server.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["stream"] is True and body["store"] is False and "previous_response_id" not in body
    assert body["instructions"] == "sys" and body["prompt_cache_key"] == "sess-1"
    assert body["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert body["tools"][0] == {
        "type": "function", "name": "ReadFile", "description": "Read a file", "parameters": TOOLS[0].parameters, "strict": False,
    }
    assert "reasoning" not in body  # thinking not asked for


async def test_reasoning_summaries_are_thinking_and_the_encrypted_content_is_kept(server: FakeResponsesServer) -> None:
    provider = OpenAIResponsesProvider(model="gpt-5", base_url=server.base_url, api_key=KEY, thinking="high", timeout=5.0)
    server.enqueue(ResponsesScript().reasoning("Reading the file.", "Then answering.").text("Done.").stream())
    parts = await collect(provider.stream("", [], HISTORY))
    think = "".join(p.think for p in parts if isinstance(p, ThinkPart))
    assert think == "Reading the file.\n\nThen answering."
    assert [p.encrypted for p in parts if isinstance(p, ThinkPart) and p.encrypted] == [ENCRYPTED]
    assert [p for p in parts if isinstance(p, TextPart)] == [TextPart(text="Done.")]
    body = server.requests[0].body
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    await provider.aclose()


async def test_two_calls_stream_their_arguments_in_order(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(
        ResponsesScript()
        .text("Reading both.")
        .call("call_a", "ReadFile", '{"pa', 'th": "a.txt"}')
        .call("call_b", "ReadFile", '{"path": ', '"b.txt"}')
        .stream()
    )
    parts = await collect(provider.stream("", TOOLS, HISTORY))
    assert merge_calls(parts) == [("call_a", "ReadFile", '{"path": "a.txt"}'), ("call_b", "ReadFile", '{"path": "b.txt"}')]
    assert isinstance(parts[1], ToolCall) and parts[1].function.arguments is None
    assert parts[2] == ToolCallPart(arguments_part='{"pa')  # streamed as it came


async def test_interleaved_calls_never_mix_their_arguments(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    """A server that streams two calls at once: the second waits until the first is done."""
    script = ResponsesScript().call("call_a", "ReadFile", '{"path": "a"}').call("call_b", "ReadFile", '{"path": "b"}')
    events = script.events
    # a.added, a.delta, a.done(args), a.item_done, b.added, b.delta, b.done, b.item_done → interleave
    a_added, a_delta, a_args, a_done, b_added, b_delta, b_args, b_done = events
    script.events = [a_added, b_added, b_delta, a_delta, b_args, b_done, a_args, a_done]
    server.enqueue(script.stream())
    parts = await collect(provider.stream("", TOOLS, HISTORY))
    assert merge_calls(parts) == [("call_a", "ReadFile", '{"path": "a"}'), ("call_b", "ReadFile", '{"path": "b"}')]


async def test_a_batch_merges_into_few_parts(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    """Deltas that arrive in one read are one batch (the core joins them: llm.types.merge_deltas)."""
    server.enqueue(ResponsesScript().text(*[f"w{i} " for i in range(50)]).stream())
    batches = [merge_deltas(b) async for b in provider.stream("", [], HISTORY).batches()]
    text = "".join(p.text for b in batches for p in b if isinstance(p, TextPart))
    assert text == "".join(f"w{i} " for i in range(50))
    assert sum(len(b) for b in batches) < 50


async def test_history_goes_whole_with_function_call_outputs_and_images(
    server: FakeResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    history = [
        Message(role="user", content=[TextPart(text="what is this?"), ImageURLPart(image_url=MediaURL(url=PNG))]),
        Message(
            role="assistant",
            content=[ThinkPart(think="look at it", encrypted=ENCRYPTED), TextPart(text="Let me read.")],
            tool_calls=[
                ToolCall(id="call_a", function=FunctionBody(name="ReadFile", arguments='{"path": "a"}')),
                ToolCall(id="call_b", function=FunctionBody(name="ReadFile", arguments='{"path": "b"}')),
            ],
        ),
        Message(role="tool", tool_call_id="call_a", content="contents of a"),
        Message(role="tool", tool_call_id="call_b", content=[TextPart(text="<system>ERROR: no such file</system>")]),
        Message(role="tool", tool_call_id="call_c", content=[TextPart(text="an image:"), ImageURLPart(image_url=MediaURL(url=PNG))]),
    ]
    server.enqueue(text_response("ok"))
    await collect(provider.stream("sys", TOOLS, history))
    sent = server.requests[0].body["input"]
    assert sent[0]["content"][1] == {"type": "input_image", "image_url": PNG, "detail": "auto"}
    assert sent[1] == {"type": "reasoning", "summary": [{"type": "summary_text", "text": "look at it"}], "encrypted_content": ENCRYPTED}
    assert sent[2] == {"type": "message", "role": "assistant", "content": "Let me read."}
    assert sent[3] == {"type": "function_call", "call_id": "call_a", "name": "ReadFile", "arguments": '{"path": "a"}'}
    assert sent[5] == {"type": "function_call_output", "call_id": "call_a", "output": "contents of a"}
    assert sent[6]["output"] == "<system>ERROR: no such file</system>"
    assert sent[7]["output"] == [{"type": "input_text", "text": "an image:"}, {"type": "input_image", "image_url": PNG, "detail": "auto"}]


def test_thinking_signed_by_another_provider_is_not_sent_as_reasoning() -> None:
    history = [Message(role="assistant", content=[ThinkPart(think="claude thought", encrypted="EqQBCkYIBxgCKkD..."), TextPart(text="hi")])]
    assert to_responses_input(history) == [{"type": "message", "role": "assistant", "content": "hi"}]


async def test_incomplete_for_max_tokens_keeps_the_reply(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(ResponsesScript().text("partial").stream(incomplete="max_output_tokens"))
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="partial")]


async def test_content_filter_is_a_clear_error(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(ResponsesScript().text("par").stream(incomplete="content_filter"))
    error = await error_of(provider)
    assert "content filter" in str(error) and not is_retryable(error)


# --------------------------------------------------------------------------- errors


async def test_429_is_retryable_with_its_wait(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(openai_error(429, "Rate limit reached", retry_after=2))
    error = await error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 429 and error.retry_after == 2.0
    assert is_retryable(error)


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retryable(server: FakeResponsesServer, provider: OpenAIResponsesProvider, status: int) -> None:
    server.enqueue(openai_error(status, "upstream trouble"))
    assert is_retryable(await error_of(provider))


async def test_401_is_the_sign_in_hint(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(openai_error(401, f"Incorrect API key provided: {KEY[:8]}...{KEY[-4:]}.", code="invalid_api_key"))
    error = await error_of(provider)
    assert isinstance(error, SignInRequired) and error.status_code == 401 and not is_retryable(error)
    assert "api_key" in str(error) and "kimi login" in str(error)


async def test_context_length_error_asks_for_compaction(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    server.enqueue(openai_error(400, message, code="context_length_exceeded"))
    error = await error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 400
    assert is_context_overflow(error) and not is_retryable(error)


async def test_errors_inside_the_stream(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(
        ResponsesScript().text("so far").failed("server_error", "The server had an error."),
        ResponsesScript().error_event("rate_limit_exceeded", "Slow down."),
        # (`response.failed` cannot carry this code: the SDK's ResponseError refuses it; `error` can)
        ResponsesScript().error_event("context_length_exceeded", "Your input exceeds the context window of this model."),
        ResponsesScript().failed("invalid_prompt", "Invalid prompt."),
    )
    first = await error_of(provider)
    assert isinstance(first, APIStatusError) and first.status_code == 500 and is_retryable(first)
    second = await error_of(provider)
    assert isinstance(second, APIStatusError) and second.status_code == 429
    assert is_context_overflow(await error_of(provider))
    fourth = await error_of(provider)
    assert type(fourth) is ChatProviderError and "invalid_prompt" in str(fourth)


async def test_a_stream_cut_before_completed_is_a_connection_error(
    server: FakeResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    stream = ResponsesScript().text("a", "b").stream()
    server.enqueue(Stream(stream.events[:-1], done=False))  # no response.completed
    error = await error_of(provider)
    assert isinstance(error, APIConnectionError) and is_retryable(error)


async def test_an_empty_response_is_retryable(server: FakeResponsesServer, provider: OpenAIResponsesProvider) -> None:
    server.enqueue(ResponsesScript().reasoning("only thinking").stream())
    assert isinstance(await error_of(provider), APIEmptyResponseError)


async def test_custom_headers_and_a_wrong_key(server: FakeResponsesServer) -> None:
    server.api_keys = {KEY}
    provider = OpenAIResponsesProvider(
        model="m", base_url=server.base_url, api_key="sk-wrong-key-000000", custom_headers={"OpenAI-Organization": "org-x"}, timeout=5.0
    )
    with pytest.raises(SignInRequired):
        await collect(provider.stream("", [], HISTORY))
    assert server.requests[0].headers["openai-organization"] == "org-x"
    await provider.aclose()


async def test_sampling_overrides(server: FakeResponsesServer, provider: OpenAIResponsesProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_MODEL_TEMPERATURE", "0.3")
    monkeypatch.setenv("KIMI_MODEL_MAX_COMPLETION_TOKENS", "2048")
    server.enqueue(text_response("ok"))
    await collect(provider.stream("", [], HISTORY))
    body = server.requests[0].body
    assert body["temperature"] == 0.3 and body["max_output_tokens"] == 2048
    assert json.dumps(body)  # and it validated (the fixture checks the server saw no problem)
