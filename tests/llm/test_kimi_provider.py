"""The `kimi` provider: Kimi's body extensions and reasoning round trip, over a loopback server."""

from __future__ import annotations

import pytest

from kimi_acp.config import Config, resolve_model
from kimi_acp.llm import create_provider
from kimi_acp.llm.errors import APIStatusError, ChatProviderError, is_retryable
from kimi_acp.llm.kimi import KimiProvider
from kimi_acp.llm.types import ChatStream, Message, StreamPart
from kimi_acp.wire.types import FunctionBody, TextPart, ThinkPart, TokenUsage, ToolCall
from tests.fakes.openai_server import FakeLLMServer, Stream, chunk, error_reply, text_reply, usage_chunk

KEY = "sk-kimi-secret-abcdef123456"
HISTORY = [Message(role="user", content="hi")]


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


def _resolved(
    base_url: str,
    *,
    model: str = "kimi-k2",
    capabilities: list[str] | None = None,
    reasoning_key: str | None = None,
):  # type: ignore[no-untyped-def]
    provider = {"type": "kimi", "base_url": base_url, "api_key": KEY, "custom_headers": {"X-Msh-Test": "1"}}
    if reasoning_key:
        provider["reasoning_key"] = reasoning_key
    config = Config.model_validate(
        {
            "default_model": "k",
            "models": {
                "k": {
                    "provider": "moonshot",
                    "model": model,
                    "max_context_size": 262144,
                    "capabilities": capabilities or [],
                }
            },
            "providers": {"moonshot": provider},
        }
    )
    resolved = resolve_model(config)
    assert resolved is not None
    return resolved


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "KIMI_BASE_URL",
        "KIMI_API_KEY",
        "KIMI_MODEL_NAME",
        "KIMI_MODEL_MAX_CONTEXT_SIZE",
        "KIMI_MODEL_CAPABILITIES",
        "KIMI_MODEL_TEMPERATURE",
        "KIMI_MODEL_TOP_P",
        "KIMI_MODEL_MAX_COMPLETION_TOKENS",
        "KIMI_MODEL_MAX_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)


async def test_streams_reasoning_text_and_moonshot_usage(server: FakeLLMServer) -> None:
    provider = create_provider(_resolved(server.base_url), session_id="sess-1")
    assert isinstance(provider, KimiProvider) and provider.provider_type == "kimi"
    server.enqueue(
        Stream(
            [
                chunk(reasoning="step 1. ", id="cmpl-kimi"),
                chunk(reasoning="step 2.", id="cmpl-kimi"),
                chunk(content="Answer", id="cmpl-kimi"),
                chunk(finish_reason="stop", id="cmpl-kimi"),
                usage_chunk(1000, 50, 800, moonshot=True, id="cmpl-kimi"),
            ]
        )
    )
    stream = provider.stream("sys", [], HISTORY)
    assert await collect(stream) == [
        ThinkPart(think="step 1. "),
        ThinkPart(think="step 2."),
        TextPart(text="Answer"),
    ]
    assert stream.id == "cmpl-kimi"
    assert stream.usage == TokenUsage(input_other=200, input_cache_read=800, output=50)
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}" and headers["x-msh-test"] == "1"
    await provider.aclose()


async def test_reasoning_content_round_trip(server: FakeLLMServer) -> None:
    provider = create_provider(_resolved(server.base_url, reasoning_key="ignored_key"))
    history = [
        Message(role="user", content="run ls"),
        Message(
            role="assistant",
            content=[ThinkPart(think="need "), ThinkPart(think="ls"), TextPart(text="ok")],
            tool_calls=[ToolCall(id="c1", function=FunctionBody(name="Shell", arguments='{"command":"ls"}'))],
        ),
        Message(role="tool", tool_call_id="c1", content="a.py"),
        Message(role="assistant", content="no thinking here"),
    ]
    server.enqueue(text_reply("done"))
    await collect(provider.stream("sys", [], history))
    messages = server.requests[0].body["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "need ls",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Shell", "arguments": '{"command":"ls"}'}}
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    assert messages[4] == {"role": "assistant", "content": "no thinking here"}
    await provider.aclose()


@pytest.mark.parametrize(
    ("thinking", "capabilities", "model", "expected"),
    [
        (None, [], "kimi-k2", None),
        (True, ["thinking"], "kimi-k2", {"type": "enabled"}),
        (True, [], "kimi-k2", None),  # not supported: provider default
        (False, ["thinking"], "kimi-k2", {"type": "disabled"}),
        (None, [], "kimi-k2-thinking", {"type": "enabled"}),  # always thinking
        (False, [], "kimi-k2-thinking", {"type": "enabled"}),
    ],
)
def test_thinking_field(
    thinking: bool | None, capabilities: list[str], model: str, expected: dict[str, str] | None
) -> None:
    provider = create_provider(
        _resolved("http://127.0.0.1:9/v1", model=model, capabilities=capabilities), thinking=thinking
    )
    body = provider.build_body("", [], HISTORY)  # type: ignore[attr-defined]
    assert body.get("thinking") == expected
    assert "reasoning_effort" not in body


def test_prompt_cache_key_and_max_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_MODEL_MAX_TOKENS", "4096")
    monkeypatch.setenv("KIMI_MODEL_TEMPERATURE", "0.6")
    provider = create_provider(_resolved("http://127.0.0.1:9/v1"), session_id="session-abc")
    body = provider.build_body("", [], HISTORY)  # type: ignore[attr-defined]
    assert body["prompt_cache_key"] == "session-abc"
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.6
    no_session = create_provider(_resolved("http://127.0.0.1:9/v1"))
    assert "prompt_cache_key" not in no_session.build_body("", [], HISTORY)  # type: ignore[attr-defined]


async def test_errors_map_like_openai(server: FakeLLMServer) -> None:
    provider = create_provider(_resolved(server.base_url))
    server.enqueue(error_reply(429, "engine overloaded", retry_after="1.5", type="engine_overloaded_error"))
    with pytest.raises(APIStatusError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert info.value.retry_after == 1.5 and is_retryable(info.value)
    assert "engine overloaded" in str(info.value) and KEY not in str(info.value)
    server.enqueue(Stream(["data: <html>"]))
    with pytest.raises(ChatProviderError, match="malformed streaming response: <html>"):
        await collect(provider.stream("", [], HISTORY))
    await provider.aclose()
