"""The HTTP transport under the providers: aiohttp and httpx's own mean the same to a provider.

Every case runs on both transports (chosen with KIMI_HTTP_TRANSPORT), against the real loopback
server: same parts, same errors (a connection error stays one, a timeout stays one).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import httpx
import pytest

from kimi_acp.llm import transport
from kimi_acp.llm.errors import APIConnectionError, APIStatusError, APITimeoutError, ChatProviderError
from kimi_acp.llm.http import shared_ssl_context
from kimi_acp.llm.openai_legacy import OpenAILegacyProvider
from kimi_acp.llm.types import Message, merge_deltas
from kimi_acp.wire.types import FunctionBody, TextPart, ThinkPart, ToolCall, ToolCallPart
from tests.fakes.openai_server import FakeLLMServer, Stream, chunk, error_reply, text_reply

KEY = "sk-test-transport-key-0123456789"
HISTORY = [Message(role="user", content="hi")]


@pytest.fixture(params=["aiohttp", "httpx"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(transport.TRANSPORT_ENV, request.param)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return request.param


def make(base_url: str, **kwargs: object) -> OpenAILegacyProvider:
    return OpenAILegacyProvider(model="m", base_url=base_url, api_key=KEY, **kwargs)  # type: ignore[arg-type]


def used_transport(provider: OpenAILegacyProvider) -> str:
    client = provider._client
    assert client is not None
    inner = client._transport
    if isinstance(inner, transport.SwitchingTransport):
        return "aiohttp" if inner._aio is not None else "httpx"
    return "httpx"


@pytest.fixture
async def provider(server: FakeLLMServer, kind: str) -> AsyncIterator[OpenAILegacyProvider]:
    p = make(server.base_url, timeout=5.0)
    yield p
    await p.aclose()


async def test_streams_the_same_parts(server: FakeLLMServer, provider: OpenAILegacyProvider, kind: str) -> None:
    server.enqueue(text_reply("Hel", "lo", " wörld", id="chatcmpl-7"), text_reply("again"))
    stream = provider.stream("sys", [], HISTORY)
    parts = [p async for p in stream]
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "Hello wörld"
    assert stream.id == "chatcmpl-7"
    assert used_transport(provider) == kind
    # A second request on the same client (keep-alive pool) works too.
    assert [p async for p in provider.stream("sys", [], HISTORY)] == [TextPart(text="again")]
    assert server.requests[0].headers.get("authorization") == f"Bearer {KEY}"


async def test_status_error(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(error_reply(429, "slow down", retry_after=7))
    with pytest.raises(APIStatusError) as info:
        [p async for p in provider.stream("", [], HISTORY)]
    assert info.value.status_code == 429 and info.value.retry_after == 7
    assert "slow down" in str(info.value)


async def test_connection_refused_is_a_connection_error(kind: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make(f"http://127.0.0.1:{port}/v1", timeout=5.0)
    with pytest.raises(APIConnectionError):
        [p async for p in provider.stream("", [], HISTORY)]
    await provider.aclose()


async def test_dropped_stream_is_a_connection_error(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    server.enqueue(Stream([chunk(content="partial"), chunk(content="never")], drop_after=1))
    seen = []
    with pytest.raises(APIConnectionError) as info:
        async for part in provider.stream("", [], HISTORY):
            seen.append(part)
    assert seen == [TextPart(text="partial")]
    assert KEY not in str(info.value)


async def test_read_timeout_is_a_timeout(server: FakeLLMServer, kind: str) -> None:
    provider = make(server.base_url, timeout=httpx.Timeout(5.0, read=0.3))
    server.enqueue(Stream([chunk(content="a"), chunk(content="b")], delay=3.0))
    with pytest.raises(APITimeoutError):
        [p async for p in provider.stream("", [], HISTORY)]
    await provider.aclose()


async def test_unsupported_scheme_is_a_config_error(kind: str) -> None:
    provider = make("ftp://example.invalid/v1", timeout=1.0)
    with pytest.raises(ChatProviderError) as info:
        [p async for p in provider.stream("", [], HISTORY)]
    assert type(info.value) is ChatProviderError and "invalid base_url" in str(info.value)
    await provider.aclose()


def test_env_proxy_keeps_httpx_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours HTTP(S)_PROXY / NO_PROXY itself; the aiohttp transport would bypass them."""
    monkeypatch.delenv(transport.TRANSPORT_ENV, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert transport.client_transport(shared_ssl_context()) is None
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv(transport.TRANSPORT_ENV, "httpx")
    assert transport.client_transport(shared_ssl_context()) is None


# --------------------------------------------------------------------------- merging deltas


def test_merge_deltas_joins_adjacent_deltas_of_one_kind() -> None:
    call = ToolCall(id="c", function=FunctionBody(name="Shell", arguments="{"))
    batch = [
        ThinkPart(think="a"),
        ThinkPart(think="b"),
        ThinkPart(think="", encrypted="sig"),  # a signature is never merged away
        TextPart(text="x"),
        TextPart(text="y"),
        call,
        ToolCallPart(arguments_part='"a": '),
        ToolCallPart(arguments_part="1}"),
        TextPart(text="z"),
    ]
    assert merge_deltas(batch) == [
        ThinkPart(think="ab"),
        ThinkPart(think="", encrypted="sig"),
        TextPart(text="xy"),
        call,
        ToolCallPart(arguments_part='"a": 1}'),
        TextPart(text="z"),
    ]
    single = [TextPart(text="only")]
    assert merge_deltas(single) is single


async def test_batches_hold_what_one_read_brought(server: FakeLLMServer, provider: OpenAILegacyProvider) -> None:
    """`batches()` groups the parts by network read; flattened they are the parts one by one."""
    server.enqueue(text_reply(*[f"w{i} " for i in range(50)]))
    batches = [b async for b in provider.stream("", [], HISTORY).batches()]
    assert all(batches)
    texts = [p.text for b in batches for p in b if isinstance(p, TextPart)]
    assert texts == [f"w{i} " for i in range(50)]
    merged = [p for b in batches for p in merge_deltas(b)]
    assert "".join(p.text for p in merged if isinstance(p, TextPart)) == "".join(texts)
    assert len(merged) == len(batches)


SWITCH_SCRIPT = """
import asyncio, sys, time
from kimi_acp.llm import transport
from kimi_acp.llm.openai_legacy import OpenAILegacyProvider
from kimi_acp.llm.types import Message
from tests.fakes.openai_server import FakeLLMServer, text_reply

async def main():
    with FakeLLMServer() as server:
        server.enqueue(text_reply("one"), text_reply("two"))
        provider = OpenAILegacyProvider(model="m", base_url=server.base_url, timeout=5.0)
        history = [Message(role="user", content="hi")]
        first = [p.text async for p in provider.stream("", [], history)]
        inner = provider._client._transport
        print("first", first, "aiohttp" if inner._aio is not None else "httpx")
        deadline = time.monotonic() + 20
        while transport.aiohttp_module() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        second = [p.text async for p in provider.stream("", [], history)]
        print("second", second, "aiohttp" if inner._aio is not None else "httpx")
        await provider.aclose()

assert "aiohttp" not in sys.modules
asyncio.run(main())
"""


def test_first_request_on_httpx_then_aiohttp_once_loaded() -> None:
    """aiohttp's import (~125 ms) is never paid on a request: the first goes through httpx's own
    transport, the import follows in a thread, later requests go through aiohttp."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != transport.TRANSPORT_ENV and "proxy" not in k.lower()}
    proc = subprocess.run(
        [sys.executable, "-c", SWITCH_SCRIPT], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["first ['one'] httpx", "second ['two'] aiohttp"]
