"""The device flow's answers (pending, slow_down, expired, denied) against the loopback OAuth service."""

from __future__ import annotations

import pytest

from kimi_acp.auth.device_flow import (
    SLOW_DOWN_STEP,
    AccountModel,
    account_capabilities,
    default_model,
    sign_in,
)
from kimi_acp.auth.errors import KeyringUnavailable, OAuthError
from kimi_acp.auth.tokens import load_token
from kimi_acp.config import OAuthRef
from tests.fakes.oauth_server import FakeOAuthServer


def run(oauth: FakeOAuthServer):  # type: ignore[no-untyped-def]
    said: list[str] = []
    slept: list[float] = []
    token = sign_in(said.append, sleep=slept.append, open_browser=lambda url: False)
    return token, said, slept


def test_pending_then_approved(oauth: FakeOAuthServer) -> None:
    oauth.polls_before_approval = 2
    token, said, slept = run(oauth)
    assert token.access_token == oauth.issued_access[0]
    assert token.expires_at > 0 and token.refresh_token
    assert slept == [oauth.interval, oauth.interval]
    assert sum("Waiting for you to confirm" in line for line in said) == 1
    assert any(oauth.user_codes[0] in line for line in said)


def test_slow_down_adds_five_seconds(oauth: FakeOAuthServer) -> None:
    oauth.device_script.extend(["slow_down", "pending"])
    _token, _said, slept = run(oauth)
    assert slept == [oauth.interval + SLOW_DOWN_STEP, oauth.interval + SLOW_DOWN_STEP]


def test_expired_code_starts_over_with_a_new_one(oauth: FakeOAuthServer) -> None:
    oauth.device_script.extend(["pending", "expired"])
    token, said, _slept = run(oauth)
    assert len(oauth.user_codes) == 2
    assert any("expired" in line and "new one" in line for line in said)
    assert any(oauth.user_codes[1] in line for line in said)
    assert token.access_token == oauth.issued_access[0]


def test_codes_that_keep_expiring_end_the_sign_in(oauth: FakeOAuthServer) -> None:
    oauth.device_script.extend(["expired"] * 3)
    with pytest.raises(OAuthError, match="expired 3 times"):
        run(oauth)


def test_declined_in_the_browser(oauth: FakeOAuthServer) -> None:
    oauth.device_script.extend(["denied"])
    with pytest.raises(OAuthError, match="declined"):
        run(oauth)
    assert oauth.issued_access == []


def test_capabilities_and_default_follow_the_reference() -> None:
    assert account_capabilities({"id": "kimi-k2-x"}) == ("thinking", "image_in", "video_in")
    assert account_capabilities({"id": "k-thinking"}) == ("thinking", "always_thinking")
    assert account_capabilities({"id": "plain", "supports_image_in": True}) == ("image_in",)
    plain, thinker = AccountModel("plain", 1, ()), AccountModel("t", 1, ("thinking",))
    assert default_model([plain, thinker]) == (thinker, True)
    assert default_model([plain]) == (plain, False)


def test_keyring_storage_without_the_package_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_keyring(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "keyring":
            raise ImportError("no keyring")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_keyring)
    with pytest.raises(KeyringUnavailable) as info:
        load_token(OAuthRef(storage="keyring", key="oauth/kimi-code"))
    message = str(info.value)
    assert "\n" not in message
    assert "keyring" in message and "kimi login" in message
    assert load_token(OAuthRef(storage="file", key="oauth/kimi-code")) is None  # file storage never needs it
