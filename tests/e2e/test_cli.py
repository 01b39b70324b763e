"""The `kimi` command as a user runs it: real subprocesses of `python -m kimi_acp ...`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kimi_acp import __version__
from tests.support.processes import process_alive, sleep_marker, wait_until
from tests.support.wire_client import WireProcess, events, scripted_config, tool_call

FAKE_KEY = "sk-FAKE-do-not-print-7f3a9c2e1b"

CONFIG_TOML = f"""\
default_model = "k2"

[providers.moonshot]
type = "kimi"
base_url = "https://api.moonshot.example/v1"
api_key = "{FAKE_KEY}"

[providers.local]
type = "openai_legacy"
base_url = "http://127.0.0.1:9/v1"

[models.k2]
provider = "moonshot"
model = "kimi-k2-0905-preview"
max_context_size = 262144
capabilities = ["image_in"]

[models.qwen]
provider = "local"
model = "qwen3-coder"
max_context_size = 32768
"""


def kimi(*args: str, cwd: Path | None = None, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kimi_acp", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        cwd=str(cwd) if cwd else None,
        env=dict(os.environ),
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kimi: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# --------------------------------------------------------------------------- plain commands


def test_version() -> None:
    for flag in ("--version", "-V"):
        result = kimi(flag)
        assert result.returncode == 0
        assert result.stdout.strip() == f"kimi-acp, version {__version__}"
        assert result.stderr == ""


def test_no_arguments_prints_help_and_exits_0() -> None:
    result = kimi()
    assert result.returncode == 0
    assert "Usage: kimi" in result.stdout  # after "run `kimi login` first" while no model is set up
    for word in ("--wire", "acp", "info", "sessions", "login"):
        assert word in result.stdout
    assert result.stderr == ""


def test_info_lists_models_and_providers_without_the_key(share_dir: Path) -> None:
    (share_dir / "config.toml").write_text(CONFIG_TOML)
    result = kimi("info")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert FAKE_KEY not in out + result.stderr
    assert f"kimi-acp {__version__}" in out
    assert str(share_dir / "config.toml") in out
    assert "default model: k2" in out
    assert "k2: kimi-k2-0905-preview via moonshot, context 262144 [image_in]" in out
    assert "qwen: qwen3-coder via local" in out
    assert "moonshot: type kimi, base_url https://api.moonshot.example/v1, api key set" in out
    assert "local: type openai_legacy, base_url http://127.0.0.1:9/v1, api key not set" in out
    assert "plugins:       (none)" in out
    plugin = share_dir / "plugins" / "greeter"
    plugin.mkdir(parents=True)
    (plugin / "plugin.json").write_text(json.dumps({"name": "greeter", "version": "1.0", "tools": [
        {"name": "greet", "description": "d", "command": ["true"]}]}))
    assert "  greeter 1.0: greet" in kimi("info").stdout
    assert json.loads(kimi("info", "--json").stdout)["plugins"] == {"greeter": {"version": "1.0", "tools": ["greet"]}}


def test_info_json(share_dir: Path, tmp_path: Path) -> None:
    (share_dir / "config.toml").write_text(CONFIG_TOML)
    result = kimi("info", "--json")
    assert result.returncode == 0
    assert FAKE_KEY not in result.stdout + result.stderr
    info = json.loads(result.stdout)
    assert info["version"] == __version__ and info["share_dir"] == str(share_dir)
    assert info["default_model"] == "k2"
    assert info["models"]["k2"] == {
        "provider": "moonshot", "model": "kimi-k2-0905-preview", "max_context_size": 262144, "capabilities": ["image_in"],
    }
    assert info["providers"]["moonshot"] == {"type": "kimi", "base_url": "https://api.moonshot.example/v1", "api_key": "set"}
    assert info["providers"]["local"]["api_key"] == "not set"
    # --config-file describes another file
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"providers": {"p": {"type": "_echo"}}}))
    info = json.loads(kimi("info", "--json", "--config-file", str(other)).stdout)
    assert info["config_file"] == str(other) and list(info["providers"]) == ["p"] and info["models"] == {}


def test_info_with_a_broken_config_is_a_one_line_error(share_dir: Path) -> None:
    path = share_dir / "config.toml"
    path.write_text("default_model = \n")
    assert_one_line_error(kimi("info"), str(path), "invalid TOML")


async def test_sessions_lists_what_a_wire_turn_left(start_wire, work_dir: Path) -> None:
    assert kimi("sessions", "--work-dir", str(work_dir)).stdout.strip() == f"No sessions for {work_dir}"
    wire = await start_wire(["text: sure"])
    response, _ = await wire.call("prompt", {"user_input": "Refactor the   parser\nplease"})
    assert response["result"] == {"status": "finished"}
    assert await wire.close() == 0
    empty = await start_wire([])  # a session that never ran a turn is not listed
    assert await empty.close() == 0

    result = kimi("sessions", "--work-dir", str(work_dir))
    assert result.returncode == 0
    (line,) = result.stdout.splitlines()
    session_id, updated_at, title = line.split("  ", 2)
    assert title == "Refactor the parser please"
    assert len(session_id) == 36 and "T" in updated_at
    rows = json.loads(kimi("sessions", "--work-dir", str(work_dir) + "/.", "--json").stdout)
    assert rows == [{"id": session_id, "title": title, "updated_at": updated_at}]
    # the default work dir is the current directory
    assert json.loads(kimi("sessions", "--json", cwd=work_dir).stdout) == rows


# --------------------------------------------------------------------------- config typos fail at load

TYPOS = {
    "unknown_type": (
        '[providers.foo]\ntype = "openai"\nbase_url = "https://api.openai.com/v1"\n',
        "at providers.foo.type: unknown provider type 'openai' (expected one of kimi, openai_legacy, openai_responses, anthropic, gemini, vertexai)",
    ),
    "base_url_without_scheme": (
        '[providers.foo]\ntype = "kimi"\nbase_url = "api.moonshot.cn/v1"\n',
        "at providers.foo.base_url: 'api.moonshot.cn/v1' has no scheme (write 'https://api.moonshot.cn/v1'",
    ),
}
TYPO_MODEL = 'default_model = "m"\n[models.m]\nprovider = "foo"\nmodel = "x"\nmax_context_size = 1000\n'


@pytest.mark.parametrize("case", sorted(TYPOS))
def test_config_typos_are_one_line_errors_in_every_command(share_dir: Path, work_dir: Path, case: str) -> None:
    text, fragment = TYPOS[case]
    path = share_dir / "config.toml"
    path.write_text(TYPO_MODEL + text)
    before = path.read_bytes()
    for args in (["info"], ["info", "--json"], ["--wire", "--work-dir", str(work_dir)], ["login"], ["acp", "login"]):
        line = assert_one_line_error(kimi(*args), f"{path} {fragment}")
        assert "_echo" not in line, args
    other = share_dir / "other.toml"
    other.write_text(TYPO_MODEL + text)
    assert_one_line_error(kimi("info", "--config-file", str(other)), f"{other} {fragment}")
    assert_one_line_error(kimi("--wire", "-w", str(work_dir), "--config", TYPO_MODEL + text), f"--config {fragment}")
    assert path.read_bytes() == before


def test_test_providers_and_empty_base_urls_still_pass_info(share_dir: Path) -> None:
    (share_dir / "config.toml").write_text(
        'default_model = "e"\n'
        '[providers.echo]\ntype = "_echo"\nbase_url = ""\n'
        '[providers.env]\ntype = "openai_legacy"\n'  # base_url from OPENAI_BASE_URL at run time
        '[models.e]\nprovider = "echo"\nmodel = "echo"\nmax_context_size = 10\ncapabilities = ["audio_in"]\n'
    )
    result = kimi("info")
    assert result.returncode == 0, result.stderr
    assert "e: echo via echo, context 10 [audio_in]" in result.stdout
    assert "env: type openai_legacy, base_url -, api key not set" in result.stdout


# --------------------------------------------------------------------------- start-up errors of --wire


BROKEN = {
    "bad_toml": ("default_model = \"unterminated\n", "invalid TOML"),
    "bad_key": ("[loop_control]\nmax_steps_per_turn = 0\n", "loop_control.max_steps_per_turn"),
    "bad_reference": ('default_model = "ghost"\n', "default_model 'ghost'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_wire_with_a_broken_default_config(share_dir: Path, work_dir: Path, case: str) -> None:
    text, fragment = BROKEN[case]
    path = share_dir / "config.toml"
    path.write_text(text)
    before = path.read_bytes()
    result = kimi("--wire", "--work-dir", str(work_dir))
    assert_one_line_error(result, str(path), fragment)
    assert path.read_bytes() == before
    assert sorted(p.name for p in share_dir.iterdir()) == ["config.toml"]  # no session, no log, no temp file


def test_wire_with_a_broken_config_file_and_config_text(tmp_path: Path, work_dir: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text('[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = "huge"\n')
    before = path.read_bytes()
    assert_one_line_error(kimi("--wire", "-w", str(work_dir), "--config-file", str(path)), str(path),
                          "models.x.max_context_size")
    assert path.read_bytes() == before
    missing = tmp_path / "missing.toml"
    assert_one_line_error(kimi("--wire", "-w", str(work_dir), "--config-file", str(missing)), str(missing))
    assert not missing.exists()
    assert_one_line_error(kimi("--wire", "-w", str(work_dir), "--config", "{not json"), "--config")


def test_wire_with_an_unknown_model(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    assert_one_line_error(
        kimi("--wire", "-w", str(work_dir), "--config-file", str(config), "--model", "unknown"), "'unknown'", str(config)
    )


def test_wire_with_a_missing_work_dir(tmp_path: Path) -> None:
    config = scripted_config(tmp_path, [])
    missing = tmp_path / "no-such-dir"
    assert_one_line_error(kimi("--wire", "--work-dir", str(missing), "--config-file", str(config)), str(missing))
    assert not missing.exists()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    result = kimi("--wire", "--work-dir", str(a_file), "--config-file", str(config))
    assert result.returncode == 2 and result.stdout == ""


def test_wire_with_conflicting_session_flags(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [])
    assert_one_line_error(
        kimi("--wire", "-w", str(work_dir), "--config-file", str(config), "--session", "abc", "--continue"),
        "cannot be used together",
    )
    assert_one_line_error(
        kimi("--wire", "-w", str(work_dir), "--config-file", str(config), "--session", "../escape"), "invalid session id"
    )


# --------------------------------------------------------------------------- lifecycle, logs, stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signal_while_idle_exits_0(start_wire_process, sig: signal.Signals) -> None:
    wire = await start_wire_process([])
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    assert init["result"]["protocol_version"] == "1.10"
    started = time.monotonic()
    wire.proc.send_signal(sig)
    code = await asyncio.wait_for(wire.proc.wait(), 5)
    assert code == 0
    assert time.monotonic() - started < 3
    assert await wire.stderr_text() == ""


async def test_sigterm_mid_turn_exits_0_and_leaves_no_children(
    start_wire_process, share_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMI_LOG_LEVEL", "DEBUG")  # the log tells when the command is fully started
    marker = sleep_marker(30)
    wire = await start_wire_process([tool_call("tc-1", "Shell", {"command": f"sleep {marker}; echo never"})], "--yolo")
    await wire.request("prompt", {"user_input": "wait"})
    await wire.until(lambda m: m.get("params", {}).get("type") == "ToolCall")
    log = share_dir / "logs" / "kimi.log"
    started_ok = await wait_until(
        lambda: process_alive("sleep\0" + marker) and log.is_file() and "started pid" in log.read_text(), 5.0
    )
    assert started_ok, "the shell command never started"
    started = time.monotonic()
    wire.proc.send_signal(signal.SIGTERM)
    code = await asyncio.wait_for(wire.proc.wait(), 8)
    elapsed = time.monotonic() - started
    assert code == 0
    assert elapsed < 4, f"SIGTERM took {elapsed:.2f}s"
    assert await wait_until(lambda: not process_alive(marker), 1.0), "the shell command outlived kimi --wire"
    assert "Traceback" not in await wire.stderr_text()
    # whatever reached stdout before the exit is still well-formed JSON-RPC
    assert wire.proc.stdout is not None
    for line in (await wire.proc.stdout.read()).splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_logs_go_to_the_share_dir_and_stdout_carries_only_json_rpc(
    tmp_path: Path, work_dir: Path, share_dir: Path
) -> None:
    scripts = [
        tool_call("tc-1", "Shell", {"command": "echo to-stdout; echo to-stderr >&2"}),
        "text: done",
    ]
    config = scripted_config(tmp_path, scripts)
    wire = await WireProcess.start(
        "--work-dir", str(work_dir), "--config-file", str(config), "--yolo", env={"KIMI_LOG_LEVEL": "DEBUG"}
    )
    try:
        await wire.send_raw("{broken json")
        await wire.call("initialize", {"protocol_version": "1.10"})
        response, seen = await wire.call("prompt", {"user_input": "print things"})
        assert response["result"] == {"status": "finished"}
        assert "to-stdout" in json.dumps(events(seen, "ToolResult"))
        assert wire.proc.stdin is not None
        wire.proc.stdin.close()
        assert wire.proc.stdout is not None
        rest = await asyncio.wait_for(wire.proc.stdout.read(), 10)
        assert await asyncio.wait_for(wire.proc.wait(), 10) == 0
    finally:
        wire.kill()
    lines = [json.dumps(m) for m in wire.received] + rest.decode().splitlines()
    assert lines
    for line in lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
        assert "method" in message or "result" in message or "error" in message
    assert await wire.stderr_text() == ""
    log = share_dir / "logs" / "kimi.log"
    assert log.is_file()
    text = log.read_text()
    assert "wire starting" in text
    assert sorted(p.name for p in (share_dir / "logs").iterdir()) == ["kimi.log"]


def test_info_shows_the_model_the_environment_provides(share_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("KIMI_MODEL_NAME", "kimi-from-env")
    result = kimi("info")
    assert result.returncode == 0, result.stderr
    assert FAKE_KEY not in result.stdout + result.stderr
    assert "default model: kimi-env" in result.stdout
    assert "kimi-env: kimi-from-env via kimi-env" in result.stdout
    assert "kimi-env: type kimi, base_url https://api.moonshot.ai/v1, api key set" in result.stdout


def test_wire_reads_requests_from_a_regular_file(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, ["text: from a file"])
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        '{"jsonrpc":"2.0","method":"initialize","id":"1","params":{"protocol_version":"1.10"}}\n'
        '{"jsonrpc":"2.0","method":"replay","id":"2"}\n'
    )
    with open(requests, "rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "kimi_acp", "--wire", "-w", str(work_dir), "--config-file", str(config)],
            stdin=stdin, capture_output=True, text=True, timeout=20,
        )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["id"] for a in answers] == ["1", "2"]
    assert answers[1]["result"] == {"status": "finished", "events": 0, "requests": 0}


def test_wire_batch_from_a_file_runs_the_prompt_to_its_end(tmp_path: Path, work_dir: Path) -> None:
    config = scripted_config(tmp_path, [tool_call("t1", "Shell", {"command": "echo needs-approval"}), "text: done anyway"])
    requests = tmp_path / "batch.jsonl"
    requests.write_text('{"jsonrpc":"2.0","method":"prompt","id":"p","params":{"user_input":"go"}}\n')
    with open(requests, "rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "kimi_acp", "--wire", "-w", str(work_dir), "--config-file", str(config)],
            stdin=stdin, capture_output=True, text=True, timeout=20,
        )
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    assert messages[-1] == {"jsonrpc": "2.0", "id": "p", "result": {"status": "finished"}}
    kinds = [m["params"]["type"] for m in messages if m.get("method") in ("event", "request")]
    assert "ApprovalRequest" in kinds  # shown, but nobody could answer: settled as rejected
    approvals = [m["params"]["payload"] for m in messages if m.get("params", {}).get("type") == "ApprovalResponse"]
    assert approvals and approvals[0]["response"] == "reject"


def test_info_shows_the_permission_rules_in_force(share_dir: Path) -> None:
    (share_dir / "config.toml").write_text(
        '[permissions]\nallow = ["Shell(git status:*)"]\ndeny = ["Shell(rm:*)", "ReadFile(secrets/**)"]\npass_env = ["AWS_PROFILE"]\n'
    )
    result = kimi("info")
    assert result.returncode == 0, result.stderr
    assert "  deny: Shell(rm:*), ReadFile(secrets/**)" in result.stdout
    assert "  allow: Shell(git status:*)" in result.stdout
    assert "  child processes keep: AWS_PROFILE" in result.stdout
    as_json = json.loads(kimi("info", "--json").stdout)
    assert as_json["permissions"] == {
        "deny": ["Shell(rm:*)", "ReadFile(secrets/**)"], "ask": [], "allow": ["Shell(git status:*)"], "pass_env": ["AWS_PROFILE"],
    }
    (share_dir / "config.toml").write_text('[permissions]\ndeny = ["Shell(rm"]\n')
    broken = kimi("info")
    assert broken.returncode == 2 and "not a rule" in broken.stderr and len(broken.stderr.strip().splitlines()) == 1
