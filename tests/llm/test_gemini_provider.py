"""`gemini` against a loopback Gemini API whose chunks are google-genai's own types, and whose
request check is the SDK's `Content` / `Tool` / `GenerateContentConfig` (tests/fakes/gemini_server.py)."""

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
from kimi_acp.llm.gemini import (
    SIGNATURE_KEY,
    SKIP_SIGNATURE,
    GeminiProvider,
    api_root,
    thinking_config,
    to_gemini_contents,
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
)
from tests.fakes.gemini_server import (
    SIGNATURE,
    FakeGeminiServer,
    GeminiScript,
    google_error,
    rate_limited,
    text_stream,
)
from tests.fakes.openai_server import Stream
from tests.support.sdk_wire import gemini_request_problems

KEY = "AIzaSy-fake-gemini-key-0123456789"
HISTORY = [Message(role="user", content="hi")]
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TOOLS = [
    ToolSpec(
        "AskUserQuestion",
        "Ask",
        {
            "$defs": {"Q": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}},
            "type": "object",
            "properties": {"questions": {"type": "array", "items": {"$ref": "#/$defs/Q"}}},
        },
    )
]


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(api_keys={KEY}) as fake:
        yield fake
        assert fake.problems == []  # every body the provider sent validated against the SDK


@pytest.fixture
async def provider(server: FakeGeminiServer) -> AsyncIterator[GeminiProvider]:
    p = GeminiProvider(model="gemini-2.5-pro", base_url=server.url, api_key=KEY, timeout=5.0)
    yield p
    await p.aclose()


async def collect(stream: ChatStream) -> list[StreamPart]:
    return [part async for part in stream]


async def error_of(provider: GeminiProvider) -> ChatProviderError:
    with pytest.raises(ChatProviderError) as info:
        await collect(provider.stream("", [], HISTORY))
    assert KEY not in str(info.value)
    return info.value


def test_the_api_version_is_appended_to_kimis_base_url() -> None:
    assert api_root("https://generativelanguage.googleapis.com") == "https://generativelanguage.googleapis.com/v1beta"
    assert api_root("https://generativelanguage.googleapis.com/v1beta/") == "https://generativelanguage.googleapis.com/v1beta"
    assert api_root("https://proxy.example/gemini/v1") == "https://proxy.example/gemini/v1"


async def test_text_thoughts_usage_and_the_request(server: FakeGeminiServer) -> None:
    provider = GeminiProvider(model="gemini-2.5-pro", base_url=server.url, api_key=KEY, thinking="high", timeout=5.0)
    server.enqueue(GeminiScript().thought("Let me", " think.").text("Hel", "lo").stream(usage=(1200, 30, 1000, 12)))
    stream = provider.stream("be brief", [], HISTORY)
    assert await collect(stream) == [
        ThinkPart(think="Let me"), ThinkPart(think=" think."), TextPart(text="Hel"), TextPart(text="lo")
    ]
    assert stream.id == "gemini-resp-1"
    assert stream.usage == TokenUsage(input_other=200, input_cache_read=1000, output=42)
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY and "authorization" not in request.headers
    assert request.body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert request.body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 24576}
    await provider.aclose()


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        ("gemini-2.5-flash", "off", {"includeThoughts": False, "thinkingBudget": 0}),
        ("gemini-2.5-pro", "off", {"includeThoughts": False, "thinkingBudget": 128}),
        ("gemini-2.5-flash", "low", {"includeThoughts": True, "thinkingBudget": 1024}),
        ("gemini-3-pro-preview", "high", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-flash", "off", {"includeThoughts": False, "thinkingLevel": "LOW"}),
        ("gemini-2.5-flash", None, None),
    ],
)
def test_thinking_on_and_off(model: str, effort: str | None, expected: dict[str, object] | None) -> None:
    assert thinking_config(model, effort) == expected
    if expected is not None:
        body = GeminiProvider(model=model, base_url="http://x", thinking=effort).build_body("", [], HISTORY)  # type: ignore[arg-type]
        assert gemini_request_problems(body) == []


async def test_parallel_calls_keep_the_signature_and_go_back_with_their_results(
    server: FakeGeminiServer, provider: GeminiProvider
) -> None:
    server.enqueue(
        GeminiScript().text("Reading both.").calls(("ReadFile", {"path": "a"}), ("ReadFile", {"path": "b"})).stream(),
        text_stream("Both read."),
    )
    parts = await collect(provider.stream("", TOOLS, HISTORY))
    calls = [p for p in parts if isinstance(p, ToolCall)]
    assert [(c.function.name, json.loads(c.function.arguments or "")) for c in calls] == [
        ("ReadFile", {"path": "a"}), ("ReadFile", {"path": "b"})
    ]
    assert calls[0].extras == {SIGNATURE_KEY: SIGNATURE} and calls[1].extras is None
    assert calls[0].id != calls[1].id
    history = [
        *HISTORY,
        Message(role="assistant", content=[TextPart(text="Reading both.")], tool_calls=calls),
        Message(role="tool", tool_call_id=calls[0].id, content="A"),
        Message(role="tool", tool_call_id=calls[1].id, content=[TextPart(text="<system>ERROR: no such file</system>")]),
    ]
    await collect(provider.stream("", TOOLS, history))
    model_turn, results = server.requests[1].body["contents"][1:]
    assert model_turn["role"] == "model"
    assert model_turn["parts"][1] == {
        "functionCall": {"id": calls[0].id, "name": "ReadFile", "args": {"path": "a"}}, "thoughtSignature": SIGNATURE
    }
    assert results == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": calls[0].id, "name": "ReadFile", "response": {"output": "A"}}},
            {"functionResponse": {"id": calls[1].id, "name": "ReadFile", "response": {"output": "<system>ERROR: no such file</system>"}}},
        ],
    }


async def test_tool_schemas_go_as_json_schema_with_references_written_out(
    server: FakeGeminiServer, provider: GeminiProvider
) -> None:
    server.enqueue(text_stream("ok"))
    await collect(provider.stream("", TOOLS, HISTORY))
    (declaration,) = server.requests[0].body["tools"][0]["functionDeclarations"]
    assert declaration["parametersJsonSchema"]["properties"]["questions"]["items"] == {
        "type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]
    }
    assert "$defs" not in json.dumps(declaration)


def test_images_in_and_calls_from_another_provider_on_gemini_3() -> None:
    history = [
        Message(role="user", content=[TextPart(text="what is this?"), ImageURLPart(image_url=MediaURL(url=PNG))]),
        Message(role="assistant", content=[ThinkPart(think="x", encrypted="claude-signature")],
                tool_calls=[ToolCall(id="toolu_1", function=FunctionBody(name="ReadFile", arguments='{"path": "a"}'))]),
        Message(role="tool", tool_call_id="toolu_1", content=[TextPart(text="see:"), ImageURLPart(image_url=MediaURL(url=PNG))]),
    ]
    contents = to_gemini_contents(history, skip_signature=True)
    assert contents[0]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": PNG.split(",", 1)[1]}}
    assert contents[1]["parts"] == [
        {"functionCall": {"id": "toolu_1", "name": "ReadFile", "args": {"path": "a"}}, "thoughtSignature": SKIP_SIGNATURE}
    ]
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {"output": "see:"}
    assert contents[2]["parts"][1]["inlineData"]["mimeType"] == "image/png"
    assert gemini_request_problems({"contents": contents}) == []
    assert gemini_request_problems({"contents": contents}, vertex=True) == []


# --------------------------------------------------------------------------- errors


async def test_a_bad_key_is_the_sign_in_hint(server: FakeGeminiServer) -> None:
    provider = GeminiProvider(model="gemini-2.5-flash", base_url=server.url, api_key="AIza-wrong-key-000", timeout=5.0)
    with pytest.raises(SignInRequired) as info:
        await collect(provider.stream("", [], HISTORY))
    assert info.value.status_code == 401 and "api_key" in str(info.value) and "kimi login" in str(info.value)
    assert not is_retryable(info.value)
    await provider.aclose()


async def test_429_waits_what_the_body_says(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    server.enqueue(rate_limited(7))
    error = await error_of(provider)
    assert isinstance(error, APIStatusError) and error.status_code == 429 and error.retry_after == 7.0
    assert is_retryable(error)


async def test_5xx_is_retryable(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    server.enqueue(google_error(503, "The model is overloaded. Please try again later."))
    assert is_retryable(await error_of(provider))


async def test_context_length_error_asks_for_compaction(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    server.enqueue(google_error(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."))
    error = await error_of(provider)
    assert is_context_overflow(error) and not is_retryable(error)


async def test_a_blocked_prompt_is_a_clear_error(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    server.enqueue(GeminiScript().blocked_prompt("SAFETY"))
    error = await error_of(provider)
    assert type(error) is ChatProviderError and "blocked the prompt (SAFETY)" in str(error) and not is_retryable(error)


async def test_a_reply_stopped_for_safety_is_a_clear_error(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    server.enqueue(GeminiScript().text("Here is how").stream(finish="SAFETY"))
    with pytest.raises(ChatProviderError) as info:
        async for _ in provider.stream("", [], HISTORY):
            pass
    assert "stopped the reply (SAFETY)" in str(info.value) and not is_retryable(info.value)


async def test_a_cut_stream_and_an_empty_reply_are_retried(server: FakeGeminiServer, provider: GeminiProvider) -> None:
    whole = GeminiScript().text("a", "b").stream()
    server.enqueue(Stream(whole.events[:-1], done=False), GeminiScript().thought("only thinking").stream())
    first = await error_of(provider)
    assert isinstance(first, APIConnectionError) and is_retryable(first)
    second = await error_of(provider)
    assert isinstance(second, APIEmptyResponseError) and is_retryable(second)


async def test_alias_and_custom_headers(server: FakeGeminiServer) -> None:
    provider = GeminiProvider(
        model="models/gemini-2.5-flash", base_url=server.url + "/v1beta", api_key=KEY, provider_type="google_genai",
        custom_headers={"X-Goog-User-Project": "billing-project"}, timeout=5.0,
    )
    assert provider.provider_type == "google_genai"
    server.enqueue(text_stream("ok"))
    assert await collect(provider.stream("", [], HISTORY)) == [TextPart(text="ok")]
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-user-project"] == "billing-project"
    await provider.aclose()


def test_without_an_api_key_the_environments_key_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Google's SDK (and so Kimi Code CLI) does: GOOGLE_API_KEY, else GEMINI_API_KEY."""
    from kimi_acp.config import Config, resolve_model
    from kimi_acp.llm import create_provider

    def provider(api_key: str) -> GeminiProvider:
        config = Config.model_validate(
            {
                "default_model": "g",
                "models": {"g": {"provider": "p", "model": "gemini-2.5-flash", "max_context_size": 1000}},
                "providers": {"p": {"type": "gemini", "base_url": "https://generativelanguage.googleapis.com", "api_key": api_key}},
            }
        )
        made = create_provider(resolve_model(config))  # type: ignore[arg-type]
        assert isinstance(made, GeminiProvider)
        return made

    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-the-environment-1")
    assert provider("")._auth_headers() == {"x-goog-api-key": "AIza-from-the-environment-1"}
    assert provider("AIza-configured-key-00001")._auth_headers() == {"x-goog-api-key": "AIza-configured-key-00001"}
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-google-wins-0000001")
    assert provider("")._auth_headers() == {"x-goog-api-key": "AIza-google-wins-0000001"}


async def test_a_reference_to_a_boolean_schema_is_written_out_too(
    server: FakeGeminiServer, provider: GeminiProvider
) -> None:
    # JSON Schema allows `true` (anything) and `false` (nothing) as schemas, so an MCP server's tool
    # may have them under `$defs`; they used to fail the request with a TypeError (`{**True}`).
    tools = [
        ToolSpec(
            "Store",
            "Store a value",
            {
                "$defs": {"Any": True, "Never": False},
                "type": "object",
                "properties": {"value": {"$ref": "#/$defs/Any", "description": "anything"}, "old": {"$ref": "#/$defs/Never"}},
            },
        )
    ]
    server.enqueue(text_stream("ok"))
    await collect(provider.stream("", tools, HISTORY))
    (declaration,) = server.requests[0].body["tools"][0]["functionDeclarations"]
    assert declaration["parametersJsonSchema"]["properties"] == {"value": {"description": "anything"}, "old": {"not": {}}}
