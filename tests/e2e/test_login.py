"""`kimi login` as a user runs it: a real subprocess, answers piped on stdin, a real loopback server."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.config import load_config, resolve_model
from tests.fakes.openai_server import FakeLLMServer

KEY = "sk-test-secret-4f9a1c"
GOOD_KEY = "sk-good-key-77d2e0"


@pytest.fixture
def share(tmp_path: Path) -> Path:
    return tmp_path / "share"  # not created: login must create it


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=["alpha-model", "beta-model", "gamma-model"]) as srv:
        yield srv


def login(share: Path, *answers: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run `python -m kimi_acp login` with one answer per line on stdin."""
    env = {**os.environ, "KIMI_SHARE_DIR": str(share), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    stdin = "".join(f"{a}\n" for a in answers)
    return subprocess.run(
        [sys.executable, "-m", "kimi_acp", "login"],
        input=stdin, capture_output=True, text=True, env=env, timeout=timeout,
    )


def assert_no_secret(proc: subprocess.CompletedProcess[str], *secrets: str) -> None:
    for secret in secrets:
        assert secret not in proc.stdout
        assert secret not in proc.stderr
    assert "Traceback" not in proc.stderr


def read_toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_openai_compatible_happy_path(share: Path, server: FakeLLMServer) -> None:
    proc = login(share, "4", server.base_url, KEY, "my-model", "", "")

    assert proc.returncode == 0, proc.stderr
    path = share / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = load_config(path).config
    assert loaded.default_model == "my-model"
    resolved = resolve_model(loaded)
    assert resolved is not None and resolved.usable
    assert resolved.provider.type == "openai_legacy"
    assert resolved.provider.base_url == server.base_url
    assert resolved.provider.api_key.get_secret_value() == KEY
    assert resolved.model.model == "my-model"
    assert resolved.model.max_context_size == 128000
    (request,) = server.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert str(path) in proc.stdout and "kimi help acp" in proc.stdout
    assert_no_secret(proc, KEY)


def test_pick_listed_model_by_number(share: Path, server: FakeLLMServer) -> None:
    proc = login(share, "4", server.base_url, KEY, "2", "", "")

    assert proc.returncode == 0, proc.stderr
    assert " 1. alpha-model" in proc.stdout and " 3. gamma-model" in proc.stdout
    data = read_toml(share / "config.toml")
    assert data["default_model"] == "beta-model"  # the alias defaults to the model name
    assert data["models"]["beta-model"] == {"provider": "beta-model", "model": "beta-model", "max_context_size": 128000}


def test_listed_context_length_becomes_the_default(share: Path) -> None:
    with FakeLLMServer(models=[{"id": "served", "object": "model", "max_model_len": 32768}]) as srv:
        proc = login(share, "4", srv.base_url, "", "", "", "")

    assert proc.returncode == 0, proc.stderr
    data = read_toml(share / "config.toml")
    assert data["models"]["served"]["max_context_size"] == 32768
    assert data["providers"]["served"]["api_key"] == ""
    assert "authorization" not in srv.requests[0].headers  # no key, no header


def test_rejected_key_then_good_key(share: Path) -> None:
    with FakeLLMServer(models=["m"], api_keys={GOOD_KEY}) as srv:
        proc = login(share, "4", srv.base_url, KEY, "y", GOOD_KEY, "", "", "")

    assert proc.returncode == 0, proc.stderr
    assert "rejected" in proc.stderr
    assert [r.headers.get("authorization") for r in srv.requests] == [f"Bearer {KEY}", f"Bearer {GOOD_KEY}"]
    assert read_toml(share / "config.toml")["providers"]["m"]["api_key"] == GOOD_KEY
    assert_no_secret(proc, KEY, GOOD_KEY)


def test_rejected_key_saved_anyway(share: Path) -> None:
    with FakeLLMServer(models=["m"], api_keys={GOOD_KEY}) as srv:
        proc = login(share, "4", srv.base_url, KEY, "n", "m", "", "")

    assert proc.returncode == 0, proc.stderr
    assert len(srv.requests) == 1
    assert read_toml(share / "config.toml")["providers"]["m"]["api_key"] == KEY
    assert_no_secret(proc, KEY)


def test_existing_config_is_preserved_and_extended(share: Path, server: FakeLLMServer) -> None:
    share.mkdir()
    path = share / "config.toml"
    original = (
        "# my hand-written notes: keep me\n"
        'default_model = "other"\n'
        'theme = "dark"  # not a Kimi key\n'
        "\n"
        "[providers.other]\n"
        'type = "kimi"\n'
        'base_url = "https://example.invalid/v1"\n'
        'api_key = "sk-other"\n'
        'custom_headers = { X-Team = "blue" }\n'
        "\n"
        "[models.other]\n"
        'provider = "other"  # shared provider\n'
        'model = "other-model"\n'
        "max_context_size = 1000\n"
        'display_name = "Other"\n'
    )
    path.write_text(original, encoding="utf-8")
    before = read_toml(path)

    proc = login(share, "4", server.base_url, KEY, "1", "", "local")

    assert proc.returncode == 0, proc.stderr
    text = path.read_text(encoding="utf-8")
    assert "# my hand-written notes: keep me" in text
    assert "# not a Kimi key" in text and "# shared provider" in text
    after = read_toml(path)
    assert after["theme"] == "dark"
    assert after["providers"]["other"] == before["providers"]["other"]
    assert after["models"]["other"] == before["models"]["other"]
    assert after["default_model"] == "local"
    assert after["providers"]["local"] == {"type": "openai_legacy", "base_url": server.base_url, "api_key": KEY}
    assert after["models"]["local"]["model"] == "alpha-model"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_model(load_config(path).config).usable


@pytest.mark.parametrize(
    "broken",
    [
        "default_model = [\n",  # not TOML
        'default_model = "missing"\n',  # TOML, but does not validate
        "[models.x]\nprovider = 3\n",
    ],
)
def test_broken_existing_config_is_left_alone(share: Path, server: FakeLLMServer, broken: str) -> None:
    share.mkdir()
    path = share / "config.toml"
    path.write_bytes(broken.encode())

    proc = login(share, "4", server.base_url, KEY, "m", "", "")

    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kimi: error: ") and str(path) in lines[0]
    assert path.read_bytes() == broken.encode()
    assert server.requests == []  # stopped before asking for the key
    assert_no_secret(proc, KEY)


@pytest.mark.parametrize("answered", [0, 1, 2, 3, 4, 5])
def test_eof_midway_writes_nothing(share: Path, server: FakeLLMServer, answered: int) -> None:
    answers = ["4", server.base_url, KEY, "m", "", ""][:answered]

    proc = login(share, *answers)

    assert proc.returncode == 1
    assert "Login cancelled." in proc.stderr
    assert not (share / "config.toml").exists()
    assert_no_secret(proc, KEY)


def test_eof_keeps_existing_config_bytes(share: Path, server: FakeLLMServer) -> None:
    share.mkdir()
    path = share / "config.toml"
    path.write_text('# mine\ndefault_model = ""\n', encoding="utf-8")
    before = path.read_bytes()

    proc = login(share, "4", server.base_url, KEY, "m")

    assert proc.returncode == 1
    assert path.read_bytes() == before


def test_bad_context_size_is_asked_again(share: Path, server: FakeLLMServer) -> None:
    proc = login(share, "4", server.base_url, KEY, "m", "lots", "0", "-5", "4096", "")

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Max context size") == 4
    assert "positive whole number" in proc.stdout
    assert read_toml(share / "config.toml")["models"]["m"]["max_context_size"] == 4096


def test_anthropic_verification_headers(share: Path) -> None:
    with FakeLLMServer(models=["claude-a"]) as srv:
        proc = login(share, "5", srv.url, KEY, "", "", "")

    assert proc.returncode == 0, proc.stderr
    (request,) = srv.requests
    assert request.path == "/v1/models"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    data = read_toml(share / "config.toml")
    assert data["default_model"] == "claude-sonnet-4-5"
    assert data["models"]["claude-sonnet-4-5"]["max_context_size"] == 200000
    assert data["providers"]["claude-sonnet-4-5"]["type"] == "anthropic"
    assert_no_secret(proc, KEY)


def test_kimi_code_defaults_and_unverifiable_server(share: Path) -> None:
    """Kind 2 (the API-key subscription) with Enter everywhere but the URL; a server without /models only warns."""
    with FakeLLMServer() as srv:  # no model list: GET /v1/models answers 404
        proc = login(share, "2", srv.base_url, KEY, "", "", "")

    assert proc.returncode == 0, proc.stderr
    assert "could not verify (HTTP 404" in proc.stderr and "saving anyway" in proc.stderr
    data = read_toml(share / "config.toml")
    assert data["default_model"] == "kimi-for-coding"
    assert data["providers"]["kimi-for-coding"]["type"] == "kimi"
    assert data["models"]["kimi-for-coding"] == {
        "provider": "kimi-for-coding",
        "model": "kimi-for-coding",
        "max_context_size": 262144,
        "capabilities": ["thinking"],
    }
    assert_no_secret(proc, KEY)


def test_unreachable_server_warns_and_saves(share: Path) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"

    proc = login(share, "4", base_url, KEY, "m", "", "")

    assert proc.returncode == 0, proc.stderr
    assert "could not verify (" in proc.stderr and "saving anyway" in proc.stderr
    assert read_toml(share / "config.toml")["providers"]["m"]["base_url"] == base_url
    assert_no_secret(proc, KEY)
