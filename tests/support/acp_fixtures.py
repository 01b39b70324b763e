"""Shared set-up for the tests that drive `kimi acp`: a share dir with a scripted model, and helpers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit

from tests.support.wire_client import scripted_config_data


def write_config(share_dir: Path, scripts: Sequence[str] = (), **overrides: Any) -> Path:
    """`$KIMI_SHARE_DIR/config.toml` with the `_scripted_echo` model (and extra keys/models)."""
    config = scripted_config_data(share_dir, scripts)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key].update(value)
        else:
            config[key] = value
    path = share_dir / "config.toml"
    path.write_text(tomlkit.dumps(config))
    return path


def fake_model_config(share_dir: Path, server: Any, *, titles: bool = False, **overrides: Any) -> Path:
    """`config.toml` whose default model is OpenAI-style on `server` (a tests.fakes FakeLLMServer).

    Generated session titles are off unless `titles`: their request would take a scripted reply."""
    model = {"provider": "fakeprov", "model": "fake-model", "max_context_size": 100_000, **overrides.pop("model", {})}
    return write_config(
        share_dir,
        default_model="fake",
        models={"fake": model},
        providers={"fakeprov": {"type": "openai_legacy", "base_url": server.base_url, "api_key": "sk-test"}},
        session={"generate_titles": titles},
        **overrides,
    )


def acp_env(share_dir: Path) -> dict[str, str]:
    env = {"KIMI_SHARE_DIR": str(share_dir), "PATH": os.environ.get("PATH", "")}
    # the schema index every start after the first finds (conftest.py); CI's plain start-up smoke job
    for name in ("KIMI_CACHE_DIR", "KIMI_PLAIN_STARTUP"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def texts(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"].get("text", "") for u in updates if u["sessionUpdate"] == kind)


def of_kind(updates: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] == kind]


def transcript(updates: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Updates folded into what a user reads: merged messages, tool cards in their final state."""
    items: list[tuple[str, Any]] = []
    cards: dict[str, dict[str, Any]] = {}
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            text = update["content"].get("text", "")
            if items and items[-1][0] == kind:
                items[-1] = (kind, items[-1][1] + text)
            else:
                items.append((kind, text))
        elif kind == "tool_call":
            card = {k: update.get(k) for k in ("title", "kind", "status", "rawInput", "content")}
            cards[update["toolCallId"]] = card
            items.append(("tool_call", card))
        elif kind == "tool_call_update":
            card = cards[update["toolCallId"]]
            for key in ("title", "status", "rawInput", "content"):
                if key in update:
                    card[key] = update[key]
        elif kind == "plan":
            items.append(("plan", update["entries"]))
    return [(kind, dict(value) if isinstance(value, dict) else value) for kind, value in items]
