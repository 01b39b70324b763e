"""Where a login is read from: the credentials file first, then (storage = "keyring") the keyring."""

from __future__ import annotations

import json
import stat
import sys
import types
from pathlib import Path

import pytest

from kimi_acp.auth.tokens import OAuthToken, credentials_path, delete_token, load_token, save_token
from kimi_acp.config import OAuthRef

KEYRING_REF = OAuthRef(storage="keyring", key="oauth/kimi-code")


@pytest.fixture
def fake_keyring(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], str]:
    """An in-memory stand-in for the `keyring` package (the real one needs a desktop backend)."""
    store: dict[tuple[str, str], str] = {}
    module = types.ModuleType("keyring")
    module.get_password = lambda service, key: store.get((service, key))  # type: ignore[attr-defined]
    module.delete_password = lambda service, key: store.pop((service, key))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyring", module)
    return store


def test_keyring_login_is_read_and_copied_to_the_file(share_dir: Path, fake_keyring: dict) -> None:
    fake_keyring[("kimi-code", "oauth/kimi-code")] = json.dumps({"access_token": "at-kr-1234", "refresh_token": "rt-kr-5678", "expires_at": 1e10})

    token = load_token(KEYRING_REF)

    assert token is not None and token.access_token == "at-kr-1234"
    path = credentials_path("oauth/kimi-code")
    assert json.loads(path.read_text())["refresh_token"] == "rt-kr-5678"  # refreshes rotate it: one place of record
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_file_wins_over_the_keyring(share_dir: Path, fake_keyring: dict) -> None:
    fake_keyring[("kimi-code", "oauth/kimi-code")] = json.dumps({"access_token": "at-old"})
    save_token(KEYRING_REF, OAuthToken("at-file", "rt-file"))
    token = load_token(KEYRING_REF)
    assert token is not None and token.access_token == "at-file"


def test_delete_removes_file_and_keyring_entry(share_dir: Path, fake_keyring: dict) -> None:
    fake_keyring[("kimi-code", "oauth/kimi-code")] = "{}"
    save_token(KEYRING_REF, OAuthToken("at", "rt"))
    assert delete_token("oauth/kimi-code") is True
    assert fake_keyring == {} and not credentials_path("oauth/kimi-code").exists()
    assert delete_token("oauth/kimi-code") is False


def test_a_broken_credentials_file_is_no_login_not_a_crash(share_dir: Path) -> None:
    path = credentials_path("oauth/kimi-code")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_token(OAuthRef(key="oauth/kimi-code")) is None
