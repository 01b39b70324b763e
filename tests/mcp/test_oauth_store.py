"""MCP OAuth tokens in Kimi Code CLI's files (mcp/oauth_store.py): names, contents, expiry, modes."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from pathlib import Path

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from kimi_acp.mcp.oauth_store import OAuthStore, sanitize, token_secrets

LINEAR = "https://mcp.linear.app/mcp"

# What Kimi Code CLI 1.51.0 wrote for LINEAR (`kimi_cli.mcp_oauth`, py-key-value's file tree).
KIMI_FILES = {
    "S_mcp_oauth_token-3a009b34/S_https_mcp_linear_app_mcp_tokens-69c3f341.json": {
        "created_at": "2026-12-01T17:28:31.610784+00:00",
        "expires_at": "2099-12-01T17:28:31.610784+00:00",
        "value": {"access_token": "AT-secret", "expires_in": 3600, "refresh_token": "RT-secret", "scope": "read",
                  "token_type": "Bearer"},
        "version": 1,
    },
    "S_mcp_oauth_token_expiry-1a152c9e/S_https_mcp_linear_app_mcp_token_expiry-47976fac.json": {
        "created_at": "2026-12-01T17:28:31.629564+00:00",
        "expires_at": "2099-12-01T17:28:31.629564+00:00",
        "value": {"expires_at": 1796149711.627375},
        "version": 1,
    },
    "S_mcp_oauth_client_info-92af0fc1/S_https_mcp_linear_app_mcp_client_info-cd593c97.json": {
        "created_at": "2026-12-01T17:28:31.636150+00:00",
        "value": {"client_id": "cid-1", "client_secret": None, "redirect_uris": ["http://localhost:8765/callback"],
                  "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]},
        "version": 1,
    },
}


def test_names_are_kimi_code_clis() -> None:
    assert sanitize("mcp-oauth-token", 245) == "S_mcp_oauth_token-3a009b34"
    assert sanitize(f"{LINEAR}/tokens", 250) == "S_https_mcp_linear_app_mcp_tokens-69c3f341"
    assert sanitize("plain_name", 250) == "plain_name"
    long = sanitize("https://x/" + "a" * 400, 60)
    assert len(long) == 60 and long.startswith("S_https_x_aaa") and long[-9] == "-"


def test_a_kimi_login_is_read(tmp_path: Path) -> None:
    for name, document in KIMI_FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document))
    store = OAuthStore(LINEAR + "/", tmp_path)  # a trailing slash names the same server
    tokens = asyncio.run(store.get_tokens())
    assert (tokens.access_token, tokens.refresh_token, tokens.expires_in) == ("AT-secret", "RT-secret", 3600)
    assert asyncio.run(store.get_client_info()).client_id == "cid-1"
    assert store.token_expiry() == 1796149711.627375
    assert store.has_tokens() and sorted(token_secrets(tokens)) == ["AT-secret", "RT-secret"]


def test_written_files_round_trip_and_are_private(tmp_path: Path) -> None:
    store = OAuthStore(LINEAR, tmp_path / "mcp-oauth")
    before = time.time()
    asyncio.run(store.set_tokens(OAuthToken(access_token="A1", token_type="Bearer", expires_in=60, refresh_token="R1")))
    asyncio.run(store.set_client_info(OAuthClientInformationFull(client_id="c9", redirect_uris=["http://127.0.0.1:5/cb"])))
    assert asyncio.run(store.get_tokens()).access_token == "A1"
    assert asyncio.run(store.get_client_info()).client_id == "c9"
    assert before + 60 <= store.token_expiry() <= time.time() + 60  # type: ignore[operator]
    root = tmp_path / "mcp-oauth"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == sorted([*KIMI_FILES, "S_mcp_oauth_token-3a009b34-info.json",
                            "S_mcp_oauth_token_expiry-1a152c9e-info.json", "S_mcp_oauth_client_info-92af0fc1-info.json"])
    for name in files:
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
    info = json.loads((root / "S_mcp_oauth_token-3a009b34-info.json").read_text())
    assert info["collection"] == "mcp-oauth-token" and info["version"] == 1
    entry = json.loads((root / next(iter(KIMI_FILES))).read_text())
    assert list(entry) == sorted(entry) and entry["version"] == 1 and entry["value"]["access_token"] == "A1"
    assert store.clear() and not store.has_tokens() and asyncio.run(store.get_client_info()) is None
    assert not store.clear()


def test_expired_unreadable_and_foreign_entries_are_absent(tmp_path: Path) -> None:
    store = OAuthStore(LINEAR, tmp_path)
    tokens = tmp_path / next(iter(KIMI_FILES))
    tokens.parent.mkdir(parents=True)
    tokens.write_text(json.dumps({**KIMI_FILES[next(iter(KIMI_FILES))], "expires_at": "2001-01-01T00:00:00+00:00"}))
    assert asyncio.run(store.get_tokens()) is None and not store.has_tokens()
    tokens.write_text("{torn")
    assert asyncio.run(store.get_tokens()) is None
    tokens.write_text(json.dumps({"value": {"access_token": 5}, "version": 1}))  # not an OAuthToken
    assert asyncio.run(store.get_tokens()) is None
    tokens.write_text(json.dumps({"value": json.dumps({"access_token": "S1", "token_type": "Bearer"}), "version": 1}))
    assert asyncio.run(store.get_tokens()).access_token == "S1"  # a value kept as a JSON string
    assert asyncio.run(OAuthStore("https://other.example/mcp", tmp_path).get_tokens()) is None
