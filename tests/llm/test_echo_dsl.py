"""The echo DSL parser and the `_echo` provider."""

from __future__ import annotations

import pytest

from kimi_acp.llm.echo import EchoProvider, parse_echo_script
from kimi_acp.llm.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import (
    AudioURLPart,
    ImageURLPart,
    TextPart,
    ThinkPart,
    TokenUsage,
    ToolCall,
    ToolCallPart,
    VideoURLPart,
)


def test_text_and_think_in_order_one_part_per_line() -> None:
    script = parse_echo_script("think: hmm\ntext: Hello\ntext: world")
    assert script.parts == [ThinkPart(think="hmm"), TextPart(text="Hello"), TextPart(text="world")]
    assert script.message_id is None and script.usage is None and script.error is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('text: "quoted"', "quoted"),
        ("text: 'single'", "single"),
        ('text: ""', ""),
        ("text: \"mismatched'", "\"mismatched'"),
        ('text: "a" and "b"', 'a" and "b'),  # one surrounding pair only
        ('text: ""double""', '"double"'),
        ("text:no space", "no space"),
        ("text:   indented", "  indented"),  # only the first space after the colon is dropped
        ("text: a: b: c", "a: b: c"),
    ],
)
def test_text_payload_forms(line: str, expected: str) -> None:
    assert parse_echo_script(line).parts == [TextPart(text=expected)]


def test_think_strips_quotes() -> None:
    assert parse_echo_script("think: 'deep'").parts == [ThinkPart(think="deep")]


def test_ignored_lines() -> None:
    script = parse_echo_script(
        "\n".join(["echo", "ECHO", "", "   ", "# a comment", "```", "```text", "text: kept", "```"])
    )
    assert script.parts == [TextPart(text="kept")]


def test_directive_names_are_case_insensitive() -> None:
    assert parse_echo_script("Text: hi").parts == [TextPart(text="hi")]


def test_invalid_line_names_line_number() -> None:
    with pytest.raises(ChatProviderError) as info:
        parse_echo_script("text: ok\n\nthis line has no colon")
    assert str(info.value) == "Invalid echo DSL at line 3: 'this line has no colon'"


def test_unknown_directive() -> None:
    with pytest.raises(ChatProviderError, match=r"Unknown echo DSL directive 'bogus' at line 1"):
        parse_echo_script("bogus: x")


@pytest.mark.parametrize("text", ["", "# only a comment\n\necho", "id: m1\nusage: output=1"])
def test_no_parts(text: str) -> None:
    with pytest.raises(ChatProviderError) as info:
        parse_echo_script(text)
    assert str(info.value) == "DSL produced no streamable parts"


# --------------------------------------------------------------------------- tool calls


def test_tool_call_json() -> None:
    script = parse_echo_script(
        'tool_call: {"id": "tc1", "name": "Shell", '
        '"arguments": "{\\"command\\": \\"ls\\"}", "extras": {"k": 1}}'
    )
    (call,) = script.parts
    assert isinstance(call, ToolCall)
    assert call.id == "tc1" and call.function.name == "Shell"
    assert call.function.arguments == '{"command": "ls"}'
    assert call.extras == {"k": 1}


def test_tool_call_null_arguments() -> None:
    (call,) = parse_echo_script('tool_call: {"id": "tc1", "name": "Shell", "arguments": null}').parts
    assert isinstance(call, ToolCall) and call.function.arguments is None


def test_tool_call_function_form() -> None:
    (call,) = parse_echo_script(
        'tool_call: {"id": "tc2", "type": "function", "function": {"name": "ReadFile", "arguments": "{}"}}'
    ).parts
    assert isinstance(call, ToolCall)
    assert (call.id, call.function.name, call.function.arguments) == ("tc2", "ReadFile", "{}")


def test_tool_call_object_arguments_are_serialized() -> None:
    (call,) = parse_echo_script('tool_call: {"id": "t", "name": "X", "arguments": {"a": 1}}').parts
    assert isinstance(call, ToolCall) and call.function.arguments == '{"a": 1}'


def test_tool_call_kv_arguments_run_to_end_of_line() -> None:
    (call,) = parse_echo_script(
        'tool_call: id=tc1 name=Shell arguments={"command": "ls -la", "timeout": 5}'
    ).parts
    assert isinstance(call, ToolCall)
    assert call.id == "tc1" and call.function.name == "Shell"
    assert call.function.arguments == '{"command": "ls -la", "timeout": 5}'


@pytest.mark.parametrize(
    ("payload", "arguments"),
    [
        ("id=a name=N", None),
        ("id=a name=N arguments=null", None),
        ("id=a, name=N, arguments='{\"x\": 1}'", '{"x": 1}'),
        ('id="a" name="N" arguments=', None),
        ("name=N id=a arguments={", "{"),
    ],
)
def test_tool_call_kv_variants(payload: str, arguments: str | None) -> None:
    (call,) = parse_echo_script(f"tool_call: {payload}").parts
    assert isinstance(call, ToolCall)
    assert (call.id, call.function.name, call.function.arguments) == ("a", "N", arguments)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"name": "X"}', "tool_call requires string id and name at line 1"),
        ("id=a", "tool_call requires string id and name at line 1"),
        ('{"id": "a", "name": "X", "arguments": 5}', "tool_call arguments must be a JSON string or null"),
        ('{"id": "a", "name": ', "tool_call payload is not valid JSON"),
        ("just words", "Invalid token 'just' in tool_call payload at line 1"),
        ("", "tool_call payload cannot be empty"),
    ],
)
def test_tool_call_errors(payload: str, message: str) -> None:
    with pytest.raises(ChatProviderError, match=message):
        parse_echo_script(f"tool_call: {payload}")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"arguments_part": "{\\"a\\""}', '{"a"'),
        ('{"arguments_part": null}', None),
        ('{"arguments_part": ""}', None),
        ("null", None),
        ("", None),
        (': "ls"}', ': "ls"}'),
        ('"quoted"', "quoted"),
        ('{"command": "ls"}', '{"command": "ls"}'),
    ],
)
def test_tool_call_part_forms(payload: str, expected: str | None) -> None:
    assert parse_echo_script(f"tool_call_part: {payload}").parts == [ToolCallPart(arguments_part=expected)]


def test_tool_call_then_parts() -> None:
    script = parse_echo_script(
        'tool_call: id=t name=Shell\ntool_call_part: {"command":\ntool_call_part: "ls"}'
    )
    assert script.parts[1:] == [
        ToolCallPart(arguments_part='{"command":'),
        ToolCallPart(arguments_part='"ls"}'),
    ]


# --------------------------------------------------------------------------- media, id, usage


def test_media_urls() -> None:
    script = parse_echo_script(
        "image_url: https://example.com/a.png\n"
        'audio_url: {"url": "https://example.com/a.mp3", "id": "aud1"}\n'
        "video_url: 'https://example.com/v.mp4'"
    )
    image, audio, video = script.parts
    assert isinstance(image, ImageURLPart) and image.image_url.url == "https://example.com/a.png"
    assert image.image_url.id is None
    assert isinstance(audio, AudioURLPart) and (audio.audio_url.url, audio.audio_url.id) == (
        "https://example.com/a.mp3",
        "aud1",
    )
    assert isinstance(video, VideoURLPart) and video.video_url.url == "https://example.com/v.mp4"


def test_media_errors() -> None:
    with pytest.raises(ChatProviderError, match="image_url requires a url"):
        parse_echo_script('image_url: {"id": "x"}')
    with pytest.raises(ChatProviderError, match="image_url requires a url"):
        parse_echo_script("image_url:")


def test_message_id() -> None:
    assert parse_echo_script("id: msg-42\ntext: hi").message_id == "msg-42"
    assert parse_echo_script('id: "msg-q"\ntext: hi').message_id == "msg-q"


@pytest.mark.parametrize(
    "line",
    [
        'usage: {"input_other": 10, "output": 2, "input_cache_read": 3, "input_cache_creation": 4}',
        "usage: input_other=10 output=2 input_cache_read=3 input_cache_creation=4",
        "usage: input_other=10, output=2, input_cache_read=3, input_cache_creation=4",
    ],
)
def test_usage_forms(line: str) -> None:
    script = parse_echo_script(f"text: hi\n{line}")
    assert script.usage == TokenUsage(input_other=10, output=2, input_cache_read=3, input_cache_creation=4)


def test_usage_partial_defaults_to_zero() -> None:
    assert parse_echo_script("text: x\nusage: output=7").usage == TokenUsage(output=7)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("usage: ouput=1", "Unknown usage field 'ouput'"),
        ("usage: output=many", "Usage field 'output' must be an integer"),
        ("usage: [1]", "Invalid token"),
    ],
)
def test_usage_errors(line: str, message: str) -> None:
    with pytest.raises(ChatProviderError, match=message):
        parse_echo_script(f"text: x\n{line}")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("line", "cls", "message"),
    [
        ("error: 429 rate limited", APIStatusError, "rate limited"),
        ("error: 500", APIStatusError, "echo error 500"),
        ("error: connection", APIConnectionError, "echo connection error"),
        ("error: connection reset by peer", APIConnectionError, "reset by peer"),
        ("error: timeout", APITimeoutError, "echo timeout"),
        ("error: TIMEOUT too slow", APITimeoutError, "too slow"),
        ("error: empty", APIEmptyResponseError, "echo empty response"),
    ],
)
def test_error_directive(line: str, cls: type[Exception], message: str) -> None:
    script = parse_echo_script(line)
    assert script.parts == []
    assert type(script.error) is cls
    assert message in str(script.error)


def test_status_error_carries_status() -> None:
    error = parse_echo_script("error: 503 busy").error
    assert isinstance(error, APIStatusError) and error.status_code == 503 and str(error) == "busy"


def test_error_stops_parsing() -> None:
    script = parse_echo_script("text: before\nerror: timeout\ntext: after\nnot even valid")
    assert script.parts == [TextPart(text="before")]
    assert isinstance(script.error, APITimeoutError)


def test_unknown_error_kind() -> None:
    with pytest.raises(ChatProviderError, match="Invalid echo DSL error 'kaboom' at line 1"):
        parse_echo_script("error: kaboom")


# --------------------------------------------------------------------------- the _echo provider


async def _collect(stream) -> list:  # type: ignore[no-untyped-def]
    return [part async for part in stream]


async def test_echo_provider_plays_last_user_message() -> None:
    provider = EchoProvider()
    history = [
        Message(role="user", content="text: first"),
        Message(role="assistant", content="first"),
        Message(
            role="user", content=[TextPart(text="id: m1\ntext: second\n"), TextPart(text="usage: output=3")]
        ),
    ]
    stream = provider.stream("system", [], history)
    assert await _collect(stream) == [TextPart(text="second")]
    assert stream.id == "m1"
    assert stream.usage == TokenUsage(output=3)
    await provider.aclose()


async def test_echo_provider_raises_error_after_preceding_parts() -> None:
    stream = EchoProvider().stream(
        "", [], [Message(role="user", content="text: partial\nerror: 429 slow down")]
    )
    seen = []
    with pytest.raises(APIStatusError) as info:
        async for part in stream:
            seen.append(part)
    assert seen == [TextPart(text="partial")]
    assert info.value.status_code == 429 and str(info.value) == "slow down"


async def test_echo_provider_dsl_errors_surface_on_iteration() -> None:
    stream = EchoProvider().stream("", [], [Message(role="user", content="hello there")])  # no raise yet
    with pytest.raises(ChatProviderError, match="Invalid echo DSL at line 1"):
        await _collect(stream)


async def test_echo_provider_without_user_message() -> None:
    with pytest.raises(ChatProviderError, match="no user message"):
        await _collect(EchoProvider().stream("", [], []))
