"""Kimi Code CLI plugins end to end: `kimi plugin install` from a directory, then a `kimi acp`
session whose model calls the plugin's tools (approval asked, arguments on stdin, the default
model's key injected), a failing tool, and a cancelled one whose process is killed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import tomlkit

from tests.support.acp_fixtures import acp_env, of_kind
from tests.support.inmemory import serve_acp
from tests.support.processes import live_pids, sleep_marker, wait_until
from tests.support.wire_client import scripted_config_data, tool_call

KEY = "sk-plugin-test-5d1f0a"

GREET = """\
import json, os, sys
args = json.load(sys.stdin)
config = json.load(open("config.json"))
print(f"hello {args['who']}")
print(f"env key matches: {os.environ.get('auth.apiKey') == os.environ['EXPECTED_KEY']}")
print(f"file key matches: {config['auth']['apiKey'] == os.environ['EXPECTED_KEY']}")
print(f"base url: {os.environ.get('baseUrl')}")
print(f"cwd is the plugin: {os.path.basename(os.getcwd())}")
print(f"leaked: {os.environ['auth.apiKey']}")  # a careless plugin
"""


def make_plugin(directory: Path, marker: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "greet.py").write_text(GREET)
    (directory / "config.json").write_text(json.dumps({"auth": {"apiKey": ""}, "other": 1}))
    (directory / "plugin.json").write_text(json.dumps({
        "name": "greeter", "version": "1.2.0", "description": "Greets people",
        "config_file": "config.json", "inject": {"auth.apiKey": "api_key", "baseUrl": "base_url"},
        "tools": [
            {"name": "greet", "description": "Greet someone", "command": [sys.executable, "greet.py"],
             "parameters": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}},
            {"name": "grumble", "description": "Always fails",
             "command": [sys.executable, "-c", "import sys; sys.stderr.write('no way'); sys.exit(3)"]},
            {"name": "nap", "description": "Sleeps", "command": ["sleep", marker]},
        ],
    }))
    return directory


def config(share: Path, scripts: list[str]) -> None:
    data = scripted_config_data(share, scripts)
    data["providers"]["scripted_provider"].update(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    data["default_yolo"] = False
    # EXPECTED_KEY holds the key, so a child process would not get it (util/child_env.py): let it through
    data["permissions"] = {"pass_env": ["EXPECTED_KEY"]}
    (share / "config.toml").write_text(tomlkit.dumps(data))


def kimi(share: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **acp_env(share)}
    return subprocess.run([sys.executable, "-m", "kimi_acp", *args], env=env, capture_output=True, text=True, timeout=60)


async def test_an_installed_plugins_tools_run_in_an_ide_session(share: Path, project: Path, tmp_path: Path) -> None:
    marker = sleep_marker()
    config(share, [
        tool_call("g1", "greet", {"who": "Ada"}) + "\n" + tool_call("g2", "grumble", {}),
        "text: greeted",
        tool_call("n1", "nap", {}),
    ])
    source = make_plugin(tmp_path / "src" / "greeter", marker)
    installed = kimi(share, "plugin", "install", str(source))
    assert installed.returncode == 0, installed.stderr
    assert "Installed plugin 'greeter' v1.2.0" in installed.stdout
    assert "kimi-acp" in json.loads((share / "plugins" / "greeter" / "plugin.json").read_text())["runtime"]["host"]
    stored = share / "plugins" / "greeter" / "config.json"
    assert json.loads(stored.read_text()) == {"auth": {"apiKey": KEY}, "other": 1, "baseUrl": "http://127.0.0.1:9/v1"}
    assert oct(stored.stat().st_mode & 0o777) == "0o600"  # it holds a key now
    assert json.loads((source / "config.json").read_text())["auth"]["apiKey"] == ""  # the source is untouched
    assert "greeter v1.2.0 (installed)" in kimi(share, "plugin", "list").stdout

    env = {**acp_env(share), "EXPECTED_KEY": KEY}
    async with serve_acp(env) as agent:
        await agent.initialize()
        session_id = (await agent.new_session(project)).session_id
        assert (await agent.prompt(session_id, "greet Ada")).stop_reason == "end_turn"
        titles = [r["tool_call"].title for r in agent.client.permission_requests]
        assert titles[:2] == ["greeter: greet", "greeter: grumble"]  # each asked, the card named by plugin
        updates = agent.recorder.updates(session_id)
        ends = {u["toolCallId"].rsplit("/", 1)[-1]: u for u in of_kind(updates, "tool_call_update") if u.get("status") in ("completed", "failed")}
        greeting = json.dumps(ends["g1"]["content"])
        for line in ("hello Ada", "env key matches: True", "file key matches: True",
                     "base url: http://127.0.0.1:9/v1", "cwd is the plugin: greeter"):
            assert line in greeting
        assert "leaked: [redacted]" in greeting and KEY not in json.dumps(updates)  # redacted for the model and the IDE
        assert ends["g2"]["status"] == "failed" and "Plugin tool 'grumble' failed: no way" in json.dumps(ends["g2"]["content"])

        napping = asyncio.create_task(agent.prompt(session_id, "nap"))
        assert await wait_until(lambda: bool(live_pids(marker)), 10)
        await agent.conn.cancel(session_id=session_id)
        assert (await napping).stop_reason == "cancelled"
        assert await wait_until(lambda: not live_pids(marker), 5), "the plugin's process survived the cancel"
    logs = "".join(p.read_text() for p in (share / "logs").glob("*.log"))
    assert logs and KEY not in logs

    removed = kimi(share, "plugin", "remove", "greeter")
    assert removed.returncode == 0 and not (share / "plugins" / "greeter").exists()
    assert kimi(share, "plugin", "list").stdout.strip() == "No plugins installed."
