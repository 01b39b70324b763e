"""The agent's credentials over `kimi --wire` (issue #21, items 4 and 12): no child process it
starts (a Shell command, a background task, a plugin tool) inherits them, and no tool result or
log line carries a secret the process knows, even when the model "knows" it and asks for it."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.support.requirements import unavailable
from tests.support.wire_client import WireProcess, events, scripted_config_data, tool_call

# Security guarantees are checked on real processes, as a user runs the server (not in memory).
pytestmark = pytest.mark.processes

INIT = {"protocol_version": "1.10", "client": {"name": "test", "version": "1"}}
ENV_KEY = "sk-test-env-kimi-7d3c91e0"  # KIMI_API_KEY, as an IDE passes it
CONFIG_KEY = "sk-test-config-4b8a2f65"  # a provider's api_key in the config


def write_config(directory: Path, scripts: list[str], **extra: Any) -> Path:
    """`config.toml` in `directory`: the scripted model, plus a provider holding CONFIG_KEY (also
    the scripted one's key: what a plugin gets injected)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = scripted_config_data(directory, scripts)
    data["providers"]["scripted_provider"]["api_key"] = CONFIG_KEY
    data["providers"]["other"] = {"type": "openai_legacy", "base_url": "https://llm.example/v1", "api_key": CONFIG_KEY}
    data.update(extra)
    path = directory / "config.toml"
    path.write_text(tomlkit.dumps(data))
    return path


async def run(
    start_wire, config: Path, *, env: dict[str, str], asked: list[dict[str, Any]] | None = None
) -> tuple[WireProcess, dict[str, dict[str, Any]]]:
    """A yolo turn; what still asks (a call passing on a known key) is approved and put in `asked`."""
    wire = await start_wire((), "--yolo", config=config, env={"KIMI_API_KEY": ENV_KEY, "KIMI_LOG_LEVEL": "DEBUG", **env})
    initialized, _ = await wire.call("initialize", INIT)
    assert "result" in initialized
    response, seen, approvals = await wire.call_approving("prompt", {"user_input": "go"}, timeout=30)
    assert response["result"] == {"status": "finished"}
    if asked is not None:
        asked += approvals
    results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    return wire, results


def session_file(share_dir: Path, name: str) -> list[dict[str, Any]]:
    (path,) = list((share_dir / "sessions").rglob(name))
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_commands_get_no_key_and_no_result_carries_one(start_wire, tmp_path: Path, share_dir: Path, work_dir: Path):
    (work_dir / "notes.txt").write_text(f"deploy notes\nkey = {CONFIG_KEY}\n")
    scripts = [
        tool_call("env", "Shell", {"command": "env"}),
        tool_call("echo", "Shell", {"command": f"echo config={CONFIG_KEY} env={ENV_KEY}"}),
        tool_call("read", "ReadFile", {"path": "notes.txt"}),
        tool_call("bg", "Shell", {"command": "echo bg-kimi=${#KIMI_API_KEY} bg-copy=${#COPIED}", "run_in_background": True, "description": "bg"}),
        tool_call("out", "TaskOutput", {"task_id": "bash-1", "block": True, "timeout": 10}),
        "text: done",
    ]
    config = write_config(tmp_path / "cfg", scripts)
    asked: list[dict[str, Any]] = []
    wire, results = await run(
        start_wire, config, env={"COPIED": CONFIG_KEY, "OPENAI_API_KEY": "sk-test-openai-0a1b2c3d"}, asked=asked
    )
    assert await wire.close() == 0
    # yolo, yet the command holding both keys asked (redacted on the card); nothing else did (the
    # background `echo` holds words the agent cannot expand, but echo reads no file they could name)
    (echo_card,) = asked
    assert echo_card["description"] == "Run command `echo config=[redacted] env=[redacted]`"
    assert "hold a secret this agent knows" in echo_card["warning"]

    env_output = results["env"]["output"]
    assert "PATH=" in env_output  # the command ran and printed its environment
    for leaked in ("KIMI_API_KEY", "OPENAI_API_KEY", "COPIED=", ENV_KEY, CONFIG_KEY, "sk-test-openai"):
        assert leaked not in env_output
    assert results["echo"]["output"].strip() == "config=[redacted] env=[redacted]"
    assert "key = [redacted]" in results["read"]["output"] and CONFIG_KEY not in results["read"]["output"]
    assert "bg-kimi=0 bg-copy=0" in results["out"]["output"]

    tool_messages = [m for m in session_file(share_dir, "context.jsonl") if m.get("role") == "tool"]
    echo_message = json.dumps([m for m in tool_messages if m.get("tool_call_id") == "echo"])
    assert "config=[redacted] env=[redacted]" in echo_message
    stored_results = [r["message"] for r in session_file(share_dir, "wire.jsonl") if r.get("message", {}).get("type") == "ToolResult"]
    assert len(stored_results) == 5 and "config=[redacted] env=[redacted]" in json.dumps(stored_results)
    for text in (json.dumps(tool_messages), json.dumps(stored_results)):
        assert CONFIG_KEY not in text and ENV_KEY not in text

    log_text = "".join(p.read_text() for p in (share_dir / "logs").glob("kimi.log*"))
    assert "[redacted]" in log_text  # the scripted model logs its script, our Shell its command
    assert CONFIG_KEY not in log_text and ENV_KEY not in log_text


async def test_pass_env_lets_a_named_variable_through(start_wire, tmp_path: Path, share_dir: Path, work_dir: Path):
    scripts = [tool_call("len", "Shell", {"command": "echo kimi=${#KIMI_API_KEY} openai=${#OPENAI_API_KEY}"}), "text: done"]
    config = write_config(tmp_path / "cfg", scripts, permissions={"pass_env": ["KIMI_API_KEY"]})
    wire, results = await run(start_wire, config, env={"OPENAI_API_KEY": "sk-test-openai-0a1b2c3d"})
    assert await wire.close() == 0
    assert results["len"]["output"].strip() == f"kimi={len(ENV_KEY)} openai=0"


PLUGIN = """\
import json, os, sys
json.load(sys.stdin)
print(f"agent key: {os.environ.get('KIMI_API_KEY', 'absent')}")
print(f"injected key length: {len(os.environ.get('TOKEN', ''))}")
"""


async def test_a_plugin_tool_gets_its_injected_key_but_not_the_agents(start_wire, tmp_path: Path, share_dir: Path, work_dir: Path):
    config = write_config(share_dir, [tool_call("p1", "probe", {}), "text: done"])  # `plugin install` reads it too
    source = tmp_path / "src" / "probe"
    source.mkdir(parents=True)
    (source / "probe.py").write_text(PLUGIN)
    (source / "config.json").write_text("{}")
    (source / "plugin.json").write_text(json.dumps({
        "name": "probe", "version": "1.0.0", "description": "Shows its environment",
        "config_file": "config.json", "inject": {"TOKEN": "api_key"},
        "tools": [{"name": "probe", "description": "Probe", "command": [sys.executable, "probe.py"]}],
    }))
    installed = subprocess.run(
        [sys.executable, "-m", "kimi_acp", "plugin", "install", str(source)],
        env={**os.environ, "KIMI_SHARE_DIR": str(share_dir)}, capture_output=True, text=True, timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    wire, results = await run(start_wire, config, env={})
    assert await wire.close() == 0
    output = results["p1"]["output"]
    assert "agent key: absent" in output and f"injected key length: {len(CONFIG_KEY)}" in output


# --------------------------------------------------------------------------- the agent's own process


def key_forms(key: str) -> list[str]:
    """Every way the tests look for `key`: as written, hex, and base64 (standard and URL-safe) of
    its whole 3-byte groups at each of the three alignments in a longer stream."""
    data = key.encode()
    forms = [key, data.hex(), data.hex().upper()]
    for skip in range(3):
        rest = data[skip:]
        inner = base64.b64encode(rest[: len(rest) - len(rest) % 3]).decode()
        forms += [inner, inner.replace("+", "-").replace("/", "_")]
    return forms


def assert_no_form(text: str, key: str, where: str) -> None:
    """Not even 12 characters in a row of any form of `key` in `text`."""
    for form in key_forms(key):
        for start in range(len(form) - 11):
            assert form[start : start + 12] not in text, f"{where} holds {form[start : start + 12]!r} of {form!r}"


def ordinary_user() -> tuple[list[str], int | None]:
    """How to start the agent as a user without privileges, and that user's id (None: as we are).
    Root reads every process's /proc entry whatever it allows; a user's own commands are what the
    guarantee is about, so as root the agent runs as `nobody` (setpriv, util-linux)."""
    if os.geteuid() != 0:
        return [], None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        unavailable("running as root without setpriv (util-linux): the agent cannot run as an ordinary user")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"], 65534


async def test_a_command_reads_nothing_of_the_agents_own_process_and_no_encoding_of_a_key_gets_out(tmp_path: Path) -> None:
    """Issue #30, item 4: in yolo mode a Shell command goes for the agent's own environment
    (`/proc/$PPID/environ`, the Shell's parent), plain and base64-encoded: the kernel refuses it
    (`PR_SET_DUMPABLE` 0). And a key that reaches a tool result encoded, at any alignment, in
    standard or URL-safe base64 or hex, is redacted there, in the session files and in the log."""
    prefix, uid = ordinary_user()
    home = Path(tempfile.mkdtemp(prefix="kimi-ordinary-"))  # under /tmp: `nobody` can reach it
    try:
        share, work, cfg = home / "share", home / "project", home / "cfg"
        for directory in (share, work, cfg):
            directory.mkdir()
        encoded = []
        for before in (b"", b"A", b"AB"):
            data = before + f"KIMI_API_KEY={ENV_KEY}".encode() + b"\0PATH=/usr/bin"
            encoded += [base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode().rstrip("="), data.hex().upper()]
        (work / "dump.txt").write_text("\n".join(encoded) + "\n")
        scripts = [
            tool_call("b64", "Shell", {"command": "base64 -w0 /proc/$PPID/environ; echo; echo exit=$?"}),
            tool_call("plain", "Shell", {"command": "tr '\\0' '\\n' < /proc/$PPID/environ | grep KIMI; ls /proc/$PPID/fd | wc -l"}),
            tool_call("dump", "Shell", {"command": "cat dump.txt"}),
            "text: done",
        ]
        config = write_config(cfg, scripts)
        if uid is not None:
            for path in (home, *home.rglob("*")):
                os.chown(path, uid, uid)
        env = {**os.environ, "KIMI_SHARE_DIR": str(share), "HOME": str(home), "KIMI_API_KEY": ENV_KEY, "KIMI_LOG_LEVEL": "DEBUG"}
        proc = await asyncio.create_subprocess_exec(
            *prefix, sys.executable, "-m", "kimi_acp", "--wire", "--yolo", "--work-dir", str(work), "--config-file", str(config),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(home),
            limit=64 * 1024 * 1024,
        )  # fmt: skip
        wire = WireProcess(proc)
        try:
            initialized, _ = await wire.call("initialize", INIT)
            assert "result" in initialized, initialized
            response, seen, _asked = await wire.call_approving("prompt", {"user_input": "go"}, timeout=60)
            assert response["result"] == {"status": "finished"}
        finally:
            assert await wire.close() == 0
        results = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
        assert "Permission denied" in results["b64"]["output"] and "exit=" in results["b64"]["output"]
        assert "Permission denied" in results["plain"]["output"] and "KIMI" not in results["plain"]["output"]
        assert results["dump"]["output"].count("[redacted]") == len(encoded)
        stored = [(share / "logs").glob("kimi.log*"), (share / "sessions").rglob("*.jsonl")]
        texts = {"the tool results": json.dumps(results)} | {str(p): p.read_text() for files in stored for p in files}
        assert any("[redacted]" in text for name, text in texts.items() if name.endswith("context.jsonl"))
        for where, text in texts.items():
            assert_no_form(text, ENV_KEY, where)
    finally:
        shutil.rmtree(home, ignore_errors=True)
