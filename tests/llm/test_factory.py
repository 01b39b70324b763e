"""`create_provider`: provider selection, thinking effort, and import cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.config import Config, resolve_model
from kimi_acp.llm import create_provider, thinking_effort
from kimi_acp.llm.errors import ChatProviderError


def _resolved(ptype: str, *, model: str = "m", capabilities: list[str] | None = None, **provider: Any):  # type: ignore[no-untyped-def]
    config = Config.model_validate(
        {
            "default_model": "a",
            "models": {
                "a": {
                    "provider": "p",
                    "model": model,
                    "max_context_size": 1000,
                    "capabilities": capabilities or [],
                }
            },
            "providers": {"p": {"type": ptype, **provider}},
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
        "KIMI_MODEL_CAPABILITIES",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("ptype", "cls_name"),
    [
        ("kimi", "KimiProvider"),
        ("openai_legacy", "OpenAILegacyProvider"),
        ("anthropic", "AnthropicProvider"),
        ("openai_responses", "OpenAIResponsesProvider"),
        ("gemini", "GeminiProvider"),
        ("google_genai", "GeminiProvider"),
        ("vertexai", "VertexAIProvider"),
    ],
)
async def test_http_provider_types(ptype: str, cls_name: str) -> None:
    provider = create_provider(
        _resolved(ptype, base_url="http://127.0.0.1:9/v1", api_key="k"), session_id="s"
    )
    assert type(provider).__name__ == cls_name
    assert provider.provider_type == ptype and provider.model_name == "m"
    await provider.aclose()


def test_echo_provider_type() -> None:
    provider = create_provider(_resolved("_echo"))
    assert type(provider).__name__ == "EchoProvider" and provider.provider_type == "_echo"


def test_scripted_echo_provider_type(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(["text: hi"]))
    provider = create_provider(_resolved("_scripted_echo", env={"KIMI_SCRIPTED_ECHO_SCRIPTS": str(path)}))
    assert type(provider).__name__ == "ScriptedEchoProvider" and provider.model_name == "scripted_echo"


def test_unsupported_type() -> None:
    with pytest.raises(ChatProviderError) as info:
        create_provider(_resolved("_chaos", base_url="http://x"))
    assert str(info.value) == (
        "provider type '_chaos' is not supported by kimi-acp "
        "(supported: kimi, openai_legacy, openai_responses, anthropic, gemini, vertexai)"
    )


def test_every_type_that_talks_to_a_model_has_a_class_and_no_other_does() -> None:
    """The table names a class for each public type and alias (the test types are built above), and
    a type without one fails loudly instead of becoming some other provider."""
    from kimi_acp.config import (
        ALIAS_PROVIDER_TYPES,
        PROVIDER_TYPES,
        PUBLIC_PROVIDER_TYPES,
        TEST_PROVIDER_TYPES,
    )
    from kimi_acp.llm import PROVIDER_CLASSES, provider_class
    from kimi_acp.llm.http import HTTPChatProvider

    assert set(PROVIDER_CLASSES) == set(PUBLIC_PROVIDER_TYPES + ALIAS_PROVIDER_TYPES)
    assert set(PROVIDER_CLASSES) | set(TEST_PROVIDER_TYPES) == set(PROVIDER_TYPES)
    for ptype in PROVIDER_CLASSES:
        assert issubclass(provider_class(ptype), HTTPChatProvider)
    for ptype in (*TEST_PROVIDER_TYPES, "_chaos", "anthropic2"):
        with pytest.raises(ChatProviderError, match=f"provider type '{ptype}' has no provider class"):
            provider_class(ptype)


NEW_PROVIDER_MODULES = ("kimi_acp.llm.openai_responses", "kimi_acp.llm.gemini", "kimi_acp.llm.vertexai", "cryptography")


def test_the_new_providers_load_nothing_until_used() -> None:
    """Importing the package (and creating another provider) loads none of them; a Vertex AI
    provider with an API key does not load `cryptography` either (only the JWT signing does)."""
    code = (
        "import sys, kimi_acp.llm, kimi_acp.llm.openai_legacy\n"
        f"print(sorted(m for m in {NEW_PROVIDER_MODULES!r} if m in sys.modules))\n"
        "import kimi_acp.llm.vertexai\n"
        "print('cryptography' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "False"]


def test_unusable_http_provider() -> None:
    with pytest.raises(ChatProviderError, match="needs a base_url"):
        create_provider(_resolved("openai_legacy"))


@pytest.mark.parametrize(
    ("model", "capabilities", "thinking", "expected"),
    [
        ("m", [], None, None),
        ("m", [], True, None),
        ("m", [], False, "off"),
        ("m", ["thinking"], True, "high"),
        ("m", ["thinking"], False, "off"),
        ("m", ["thinking"], None, None),
        ("m", ["always_thinking"], None, "high"),
        ("m", ["always_thinking"], False, "high"),
        ("Kimi-Thinking-Preview", [], None, "high"),  # derived from the name
    ],
)
def test_thinking_effort(
    model: str, capabilities: list[str], thinking: bool | None, expected: str | None
) -> None:
    resolved = _resolved("_echo", model=model, capabilities=capabilities)
    assert thinking_effort(resolved, thinking) == expected
    assert create_provider(resolved, thinking=thinking).thinking == expected


def test_provider_config_reaches_provider() -> None:
    provider = create_provider(
        _resolved(
            "openai_legacy",
            base_url="http://h/v1/",
            api_key="sk-1",
            custom_headers={"X-A": "b"},
            reasoning_key="reasoning",
        ),
        thinking=True,
    )
    assert provider.base_url == "http://h/v1"  # type: ignore[attr-defined]
    assert provider.reasoning_key == "reasoning"  # type: ignore[attr-defined]
    assert provider._headers()["X-A"] == "b"  # type: ignore[attr-defined]
    assert "sk-1" not in repr(provider)


def test_importing_the_package_does_not_import_httpx() -> None:
    code = "import sys, kimi_acp.llm; assert 'httpx' not in sys.modules, 'httpx imported'; print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("error", "overflow"),
    [
        ("400 Bad Request: This model's maximum context length is 128000 tokens.", True),  # OpenAI, Moonshot, vLLM
        ("400 Bad Request: Your input exceeds the context window of this model.", True),  # Responses API
        ("400 Bad Request: prompt is too long: 210000 tokens > 200000 maximum", True),  # Anthropic
        ("400 Bad Request: The input token count (1200000) exceeds the maximum number of tokens allowed", True),  # Gemini
        ("context_length_exceeded: Your input exceeds the context window", None),  # in a stream: no status
        ("429 Too Many Requests: too many tokens per minute", False),
        ("400 Bad Request: invalid tool schema", False),
    ],
)
def test_context_overflow_is_recognised_for_every_provider(error: str, overflow: bool | None) -> None:
    from kimi_acp.llm.errors import APIConnectionError, APIStatusError, is_context_overflow

    status = int(error[:3]) if error[:3].isdigit() else None
    exc = APIStatusError(status, error) if status else ChatProviderError(error)
    assert is_context_overflow(exc) is bool(overflow if overflow is not None else True)
    assert not is_context_overflow(APIConnectionError(error))


def test_the_documented_examples_of_the_new_types_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/configuration.md's annotated config.toml loads, and its OpenAI Responses, Gemini and
    Vertex AI entries make providers whose requests the official SDKs' types accept."""
    import re

    from kimi_acp.config import load_config
    from kimi_acp.llm.types import Message
    from tests.fakes.gemini_server import service_account
    from tests.support.sdk_wire import gemini_request_problems, responses_request_problems

    docs = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    example = re.search(r"## `config.toml`.*?```toml\n(.*?)```", docs, re.DOTALL)
    assert example is not None
    key_file, _ = service_account(tmp_path, "https://oauth2.googleapis.com/token")
    text = example.group(1).replace("/home/you/keys/vertex-sa.json", str(key_file))
    config = load_config(config_text=text).config
    history = [Message(role="user", content="hi")]
    for alias, check in (
        ("gpt-5", responses_request_problems),
        ("gemini-3-pro-preview", gemini_request_problems),
        ("gemini-vertex", lambda body: gemini_request_problems(body, vertex=True)),
    ):
        resolved = resolve_model(config, alias)
        assert resolved is not None and resolved.usable
        provider = create_provider(resolved, thinking=True)
        assert check(provider.build_body("sys", [], history)) == []  # type: ignore[attr-defined]
    vertex = create_provider(resolve_model(config, "gemini-vertex"))  # type: ignore[arg-type]
    assert vertex.url.startswith(  # type: ignore[attr-defined]
        "https://us-central1-aiplatform.googleapis.com/v1/projects/your-project-id/locations/us-central1/"
    )
