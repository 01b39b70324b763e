"""`kimi login` → "Kimi account" as a user runs it: a pseudo-terminal, the device flow against a
loopback OAuth service, the model list from a loopback model server; then `kimi info`, `kimi logout`."""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.config import load_config, resolve_model
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import FakeLLMServer

MODELS = [
    {"id": "kimi-latest-turbo", "context_length": 131072, "display_name": "Kimi Latest Turbo"},
    {"id": "kimi-for-coding", "context_length": 262144, "supports_reasoning": True, "display_name": "Kimi For Coding"},
]


@pytest.fixture
def oauth() -> Iterator[FakeOAuthServer]:
    with FakeOAuthServer(interval=0.05) as server:
        yield server


@pytest.fixture
def models() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=MODELS) as server:
        yield server


def kimi_env(share: Path, oauth: FakeOAuthServer, models: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "KIMI_OAUTH_HOST")}
    env.update({
        "KIMI_SHARE_DIR": str(share), "KIMI_CODE_OAUTH_HOST": oauth.url, "KIMI_CODE_BASE_URL": models.base_url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "TERM": "dumb",
    })
    return env


class Terminal:
    """`python -m kimi_acp <args>` on a pseudo-terminal: read what it shows, type answers."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "kimi_acp", *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.output = ""

    def expect(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.output}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    data = b""
                if not data:
                    if text not in self.output:
                        raise AssertionError(f"{text!r} did not appear before exit; the terminal shows:\n{self.output}")
                    break
                self.output += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return self.output

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout=timeout)
        try:  # drain what is left
            while select.select([self.master], [], [], 0.1)[0]:
                data = os.read(self.master, 4096)
                if not data:
                    break
                self.output += data.decode("utf-8", "replace").replace("\r\n", "\n")
        except OSError:
            pass
        os.close(self.master)
        return code


def test_sign_in_with_a_kimi_account_then_info_and_logout(tmp_path: Path, oauth: FakeOAuthServer, models: FakeLLMServer) -> None:
    share = tmp_path / "share"  # not created: login creates it
    oauth.polls_before_approval = 3  # the user takes a moment to confirm in the browser
    env = kimi_env(share, oauth, models)

    term = Terminal(["login"], env)
    term.expect("Provider [1]: ")
    assert "1. Kimi account" in term.output
    term.type("")  # Enter: the Kimi account
    term.expect("Saved ")
    assert term.wait() == 0, term.output

    user_code = oauth.user_codes[0]
    assert f"Code: {user_code}" in term.output
    assert f"{oauth.url}/device?user_code={user_code}" in term.output
    assert "Waiting for you to confirm" in term.output
    polls = [r for r in oauth.requests if r.form.get("grant_type", "").endswith("device_code")]
    assert len(polls) == 4
    assert all(r.headers["x-msh-platform"] == "kimi_cli" and r.headers["x-msh-device-id"] for r in oauth.requests)

    (access,) = oauth.issued_access
    credentials = share / "credentials" / "kimi-code.json"
    saved = json.loads(credentials.read_text())
    assert saved["access_token"] == access and saved["refresh_token"].startswith("rt-")
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(credentials.parent.stat().st_mode) == 0o700
    assert access not in term.output and saved["refresh_token"] not in term.output

    (listing,) = models.requests  # the model list was checked with the new token
    assert (listing.method, listing.path) == ("GET", "/v1/models")
    assert listing.headers["authorization"] == f"Bearer {access}"

    config_path = share / "config.toml"
    data = tomllib.loads(config_path.read_text())
    oauth_ref = {"storage": "file", "key": "oauth/kimi-code"}
    assert data["providers"]["managed:kimi-code"] == {"type": "kimi", "base_url": models.base_url, "api_key": "", "oauth": oauth_ref}
    assert data["default_model"] == "kimi-code/kimi-for-coding"  # the first thinking model
    assert data["default_thinking"] is True
    assert data["models"]["kimi-code/kimi-latest-turbo"]["max_context_size"] == 131072
    assert data["models"]["kimi-code/kimi-for-coding"]["display_name"] == "Kimi For Coding"
    assert data["services"]["moonshot_search"] == {"base_url": f"{models.base_url}/search", "api_key": "", "oauth": oauth_ref}
    assert data["services"]["moonshot_fetch"]["oauth"] == oauth_ref
    resolved = resolve_model(load_config(config_path).config)
    assert resolved is not None and resolved.usable and resolved.provider.oauth is not None

    info = subprocess.run([sys.executable, "-m", "kimi_acp", "info"], env=env, capture_output=True, text=True, timeout=30)
    assert info.returncode == 0, info.stderr
    assert "signed in with Kimi account (expires " in info.stdout
    info_json = subprocess.run([sys.executable, "-m", "kimi_acp", "info", "--json"], env=env, capture_output=True, text=True, timeout=30)
    assert json.loads(info_json.stdout)["providers"]["managed:kimi-code"]["login"].startswith("signed in")
    for text in (info.stdout, info.stderr, info_json.stdout):
        assert access not in text and saved["refresh_token"] not in text

    out = subprocess.run([sys.executable, "-m", "kimi_acp", "logout"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "Signed out of your Kimi account." in out.stdout
    assert not credentials.exists()
    data = tomllib.loads(config_path.read_text())
    assert "managed:kimi-code" not in data["providers"] and data["models"] == {} and data["default_model"] == ""
    assert "moonshot_search" not in data.get("services", {})
    again = subprocess.run([sys.executable, "-m", "kimi_acp", "logout"], env=env, capture_output=True, text=True, timeout=30)
    assert again.returncode == 0 and "No Kimi account login was stored." in again.stdout


def test_sign_in_declined_in_the_browser_writes_nothing(tmp_path: Path, oauth: FakeOAuthServer, models: FakeLLMServer) -> None:
    share = tmp_path / "share"
    oauth.device_script.extend(["pending", "denied"])
    term = Terminal(["acp", "login"], kimi_env(share, oauth, models))  # what an IDE's terminal auth runs
    term.expect("Provider [1]: ")
    term.type("1")
    assert term.wait() == 1
    assert "kimi: error: Kimi account sign-in failed: sign-in was declined in the browser" in term.output
    assert "Traceback" not in term.output
    assert not (share / "credentials" / "kimi-code.json").exists()
    assert not (share / "config.toml").exists() or "managed:kimi-code" not in (share / "config.toml").read_text()
    assert models.requests == []


def test_unreachable_oauth_service_is_one_clear_line(tmp_path: Path, oauth: FakeOAuthServer, models: FakeLLMServer) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = kimi_env(tmp_path / "share", oauth, models)
    env["KIMI_CODE_OAUTH_HOST"] = f"http://127.0.0.1:{port}"
    term = Terminal(["login"], env)
    term.expect("Provider [1]: ")
    term.type("")
    assert term.wait() == 1
    assert f"cannot reach http://127.0.0.1:{port}" in term.output
    assert "Traceback" not in term.output
