"""Fixtures for the Kimi account tests: a loopback OAuth service and a recording model server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.oauth_server import FakeOAuthServer, credentials_json
from tests.fakes.openai_server import FakeLLMServer


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOAuthServer]:
    with FakeOAuthServer() as server:
        monkeypatch.setenv("KIMI_CODE_OAUTH_HOST", server.url)
        monkeypatch.delenv("KIMI_OAUTH_HOST", raising=False)
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def write_credentials(share_dir: Path, access: str, refresh: str, **kwargs: float) -> Path:
    """`credentials/kimi-code.json` as Kimi Code CLI's login leaves it."""
    path = share_dir / "credentials" / "kimi-code.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(credentials_json(access, refresh, **kwargs))
    path.chmod(0o600)
    return path


def account_config(base_url: str, *, api_key: str = "") -> dict:
    """The config Kimi Code CLI's login writes, pointed at a loopback model server."""
    oauth_ref = {"storage": "file", "key": "oauth/kimi-code"}
    return {
        "default_model": "kimi-code/kimi-for-coding",
        "providers": {"managed:kimi-code": {"type": "kimi", "base_url": base_url, "api_key": api_key, "oauth": oauth_ref}},
        "models": {
            "kimi-code/kimi-for-coding": {
                "provider": "managed:kimi-code", "model": "kimi-for-coding", "max_context_size": 262144,
                "capabilities": ["thinking"],
            }
        },
        "services": {
            "moonshot_search": {"base_url": f"{base_url}/search", "api_key": "", "oauth": oauth_ref},
            "moonshot_fetch": {"base_url": f"{base_url}/fetch", "api_key": "", "oauth": oauth_ref},
        },
    }
