"""`kimi login --provider …` as a script runs it: a real subprocess, no questions, the key from an
environment variable or stdin (never argv), checked against a real loopback server; a bare `kimi`
says to run `kimi login` first; `kimi help TOPIC` shows the docs the package carries."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.cli.login_script import PROVIDERS
from kimi_acp.cli.main import LOGIN_PROVIDERS
from kimi_acp.config import load_config, resolve_model
from tests.fakes.openai_server import FakeLLMServer

KEY = "sk-script-secret-81c3aa"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def share(tmp_path: Path) -> Path:
    return tmp_path / "share"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=["alpha-model", "beta-model"], api_keys={KEY}) as srv:
        yield srv


def kimi(share: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "KIMI_SHARE_DIR": str(share), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    return subprocess.run(
        [sys.executable, "-m", "kimi_acp", *args], input=stdin, capture_output=True, text=True,
        env={**environ, **(env or {})}, timeout=30, cwd=cwd,
    )


def clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert KEY not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_the_key_from_an_environment_variable(share: Path, server: FakeLLMServer) -> None:
    proc = kimi(share, "login", "--provider", "openai", "--base-url", server.base_url, "--model", "beta-model",
                "--api-key-env", "MY_LLM_KEY", env={"MY_LLM_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    clean(proc)
    path = share / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    resolved = resolve_model(load_config(path).config)
    assert resolved is not None and resolved.usable and resolved.alias == "beta-model"
    assert (resolved.provider.type, resolved.provider.base_url) == ("openai_legacy", server.base_url)
    assert resolved.provider.api_key.get_secret_value() == KEY and resolved.model.max_context_size == 128000
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert "kimi help acp" in proc.stdout


def test_the_key_from_stdin_and_every_option(share: Path, server: FakeLLMServer) -> None:
    proc = kimi(share, "login", "--provider", "openai", "--base-url", server.base_url, "--model", "alpha-model",
                "--max-context-size", "32768", "--name", "alpha", "--api-key-stdin", stdin=KEY + "\n")
    assert proc.returncode == 0, proc.stderr
    clean(proc)
    data = tomllib.loads((share / "config.toml").read_text())
    assert data["default_model"] == "alpha"
    assert data["models"]["alpha"] == {"provider": "alpha", "model": "alpha-model", "max_context_size": 32768}


def test_a_rejected_key_saves_nothing_unless_unchecked(share: Path, server: FakeLLMServer) -> None:
    wrong = "sk-wrong-key-000"
    args = ["login", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--api-key-env", "K"]
    proc = kimi(share, *args, env={"K": wrong})
    assert proc.returncode == 1 and "rejected" in proc.stderr and wrong not in proc.stderr + proc.stdout
    assert not (share / "config.toml").exists() or "default_model = \"m\"" not in (share / "config.toml").read_text()
    proc = kimi(share, *args, "--no-check", env={"K": wrong})
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 1  # unchecked: not asked again


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--provider", "nope"], {}, "--provider: unknown provider 'nope'"),
        (["--provider", "moonshot"], {}, "needs an API key: --api-key-env VAR or --api-key-stdin"),
        (["--provider", "moonshot", "--api-key-env", "UNSET_VAR_X"], {}, "UNSET_VAR_X is not set"),
        (["--provider", "moonshot", "--api-key-env", "K", "--api-key-stdin"], {"K": KEY}, "give the key one way"),
        (["--provider", "openai", "--base-url", "localhost:1/v1", "--api-key-env", "K"], {"K": KEY}, "--base-url:"),
        (["--provider", "openai", "--no-check", "--api-key-env", "K"], {"K": KEY}, "--model: required for this provider"),
        (["--provider", "kimi-account", "--model", "x"], {}, "--model: the Kimi account signs in with the browser"),
        (["--model", "x"], {}, "--provider is required"),
        (["--api-key", KEY], {}, "No such option '--api-key'"),  # never on argv
    ],
)
def test_a_missing_or_bad_option_is_one_line_and_asks_nothing(share: Path, args: list[str], env: dict[str, str], says: str) -> None:
    proc = kimi(share, "login", *args, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr and "?" not in proc.stdout and "[1]" not in proc.stdout  # no question asked
    clean(proc)
    assert not (share / "config.toml").exists() or "default_model = \"\"" in (share / "config.toml").read_text()


def test_the_help_names_every_provider() -> None:
    assert tuple(PROVIDERS) == LOGIN_PROVIDERS


def test_a_bare_kimi_says_to_log_in_first(share: Path, server: FakeLLMServer) -> None:
    first = kimi(share)
    assert first.returncode == 0 and first.stdout.startswith("No model is set up yet. Run `kimi login` first")
    kimi(share, "login", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--no-check")
    ready = kimi(share)
    assert "kimi login" not in ready.stdout.split("Commands:")[-1].split("\n\n", 1)[-1]
    assert ready.stdout.startswith("Usage: kimi") and "kimi help acp" in ready.stdout


@pytest.mark.smoke  # also run on a regular (non-editable) install: the docs come from the wheel
def test_kimi_help_shows_the_docs_the_package_carries(share: Path, tmp_path: Path) -> None:
    listing = kimi(share, "help", cwd=tmp_path)  # not the checkout: the installed package is imported
    assert listing.returncode == 0 and "acp " in listing.stdout and "configuration " in listing.stdout
    shown = kimi(share, "help", "acp", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == (ROOT / "docs" / "acp.md").read_text(encoding="utf-8")
    missing = kimi(share, "help", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and "no help topic 'nope'" in missing.stderr


def test_no_message_sends_a_user_to_a_checkout_path() -> None:
    """`docs/acp.md` exists only in a checkout: what the program prints names `kimi help TOPIC`."""
    from kimi_acp.cli.help import first_steps
    from kimi_acp.cli.login_common import NEXT_STEP
    from kimi_acp.cli.main import ACP_HELP
    from kimi_acp.frontends.acp.entry import terminal_hint
    from kimi_acp.frontends.wire.main import TERMINAL_HINT

    printed = [NEXT_STEP, *ACP_HELP, terminal_hint("kimi acp"), TERMINAL_HINT, first_steps(ready=True), first_steps(ready=False)]
    assert not [text for text in printed if "docs/" in text]
    assert all("kimi help" in text for text in (NEXT_STEP, terminal_hint("kimi acp"), TERMINAL_HINT))
