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
    [("kimi", "KimiProvider"), ("openai_legacy", "OpenAILegacyProvider"), ("anthropic", "AnthropicProvider")],
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


@pytest.mark.parametrize("ptype", ["gemini", "openai_responses", "_chaos", "vertexai"])
def test_unsupported_type(ptype: str) -> None:
    with pytest.raises(ChatProviderError) as info:
        create_provider(_resolved(ptype, base_url="http://x"))
    assert str(info.value) == (
        f"provider type '{ptype}' is not supported by kimi-acp "
        "(supported: kimi, openai_legacy, anthropic)"
    )


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
