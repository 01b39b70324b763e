"""The `_scripted_echo` provider: script files, turn order, exhaustion, env lookup."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from kimi_acp.config import Config, resolve_model
from kimi_acp.llm import create_provider
from kimi_acp.llm.echo import SCRIPTS_ENV, ScriptedEchoProvider, load_scripts, split_scripts
from kimi_acp.llm.errors import APIStatusError, ChatProviderError
from kimi_acp.llm.types import Message
from kimi_acp.wire.types import TextPart, ToolCall

HISTORY = [Message(role="user", content="ignored")]


def _resolved(env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    config = Config.model_validate(
        {
            "default_model": "scripted",
            "models": {"scripted": {"provider": "p", "model": "scripted_echo", "max_context_size": 100000}},
            "providers": {"p": {"type": "_scripted_echo", "base_url": "", "api_key": "", "env": env or {}}},
        }
    )
    resolved = resolve_model(config)
    assert resolved is not None
    return resolved


async def _texts(provider: ScriptedEchoProvider) -> list[str]:
    return [
        p.text
        for p in [part async for part in provider.stream("sys", [], HISTORY)]
        if isinstance(p, TextPart)
    ]


async def test_json_array_file(tmp_path: Path) -> None:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps(["text: one", "tool_call: id=t1 name=Shell arguments={}", "text: three"]))
    provider = create_provider(_resolved({SCRIPTS_ENV: str(path)}))
    assert isinstance(provider, ScriptedEchoProvider)
    assert provider.model_name == "scripted_echo" and provider.provider_type == "_scripted_echo"
    assert await _texts(provider) == ["one"]
    parts = [part async for part in provider.stream("", [], [])]
    assert isinstance(parts[0], ToolCall) and parts[0].function.name == "Shell"
    assert await _texts(provider) == ["three"]


async def test_dash_separated_text_file(tmp_path: Path) -> None:
    path = tmp_path / "scripts.txt"
    path.write_bytes(b"text: one\r\ntext: more\r\n---\r\ntext: two\n---\nid: m3\ntext: three\n")
    provider = ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(path)})
    assert provider.remaining == 3
    assert await _texts(provider) == ["one", "more"]
    assert await _texts(provider) == ["two"]
    stream = provider.stream("", [], [])
    assert [p async for p in stream] == [TextPart(text="three")]
    assert stream.id == "m3"


def test_split_scripts_edges() -> None:
    assert split_scripts("a\n---\nb\n") == ["a", "b\n"]
    assert split_scripts("a\n---\nb\n---\n") == ["a", "b"]
    assert split_scripts("---\na") == ["a"]
    assert split_scripts("a\n--- \nb") == ["a", "b"]
    assert split_scripts("a\n----\nb") == ["a\n----\nb"]  # not a separator
    assert split_scripts("  \n") == []


async def test_exhaustion_names_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(["text: only"]))
    provider = ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(path)})
    assert await _texts(provider) == ["only"]
    with pytest.raises(ChatProviderError) as info:
        await _texts(provider)
    assert str(info.value) == "ScriptedEchoChatProvider exhausted at turn 2."
    with pytest.raises(ChatProviderError, match=r"exhausted at turn 3\.$"):
        await _texts(provider)


async def test_error_script_consumes_a_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("error: 503 overloaded\n---\ntext: recovered\n")
    provider = ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(path)})
    with pytest.raises(APIStatusError, match="overloaded"):
        await _texts(provider)
    assert await _texts(provider) == ["recovered"]


def test_provider_env_wins_over_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    ours.write_text(json.dumps(["text: ours"]))
    theirs.write_text(json.dumps(["text: theirs", "text: theirs 2"]))
    monkeypatch.setenv(SCRIPTS_ENV, str(theirs))
    provider = create_provider(_resolved({SCRIPTS_ENV: str(ours)}))
    assert isinstance(provider, ScriptedEchoProvider) and provider.remaining == 1
    assert os.environ[SCRIPTS_ENV] == str(theirs)  # not mutated


def test_falls_back_to_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(["text: a", "text: b"]))
    monkeypatch.setenv(SCRIPTS_ENV, str(path))
    provider = create_provider(_resolved())
    assert isinstance(provider, ScriptedEchoProvider) and provider.remaining == 2


def test_missing_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCRIPTS_ENV, raising=False)
    with pytest.raises(ChatProviderError, match=f"needs {SCRIPTS_ENV}"):
        create_provider(_resolved())


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ChatProviderError) as info:
        ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(missing)})
    message = str(info.value)
    assert "cannot read scripted echo scripts" in message and "nope.json" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "message"), [("[1, 2]", "JSON array of strings"), ("[oops", "invalid JSON")]
)
def test_bad_json(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(ChatProviderError, match=message):
        load_scripts(path)


def test_file_is_read_once_at_creation(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(["text: a"]))
    provider = ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(path)})
    path.unlink()
    assert provider.remaining == 1


async def test_trace_logs_scripts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(["text: traced"]))
    provider = ScriptedEchoProvider.from_env({SCRIPTS_ENV: str(path), "KIMI_SCRIPTED_ECHO_TRACE": "1"})
    with caplog.at_level(logging.INFO, logger="kimi_acp.llm.echo"):
        assert await _texts(provider) == ["traced"]
    assert "text: traced" in caplog.text and "turn 1" in caplog.text
    assert capsys.readouterr().out == ""
