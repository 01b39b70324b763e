"""`kimi mcp list | add | remove | test` through click's CliRunner, on the isolated share dir."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from click.testing import CliRunner

from kimi_acp.cli.mcp import build_mcp_group
from kimi_acp.mcp.config import default_mcp_file

from .helpers import SERVER


def invoke(*args: str):
    return CliRunner().invoke(build_mcp_group(), list(args), catch_exceptions=False)


def test_add_list_remove_keep_other_keys_and_secrets() -> None:
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "dark", "mcpServers": {"old": {"command": "x", "custom": 1}}}))
    path.chmod(0o644)

    added = invoke(
        "add",
        "--transport",
        "http",
        "ctx",
        "https://mcp.example/mcp",
        "-H",
        "Authorization: Bearer sk-top-secret",
    )
    assert added.exit_code == 0, added.output
    assert "Added MCP server 'ctx'" in added.output
    added = invoke(
        "add", "-e", "API_KEY=env-secret-1", "local", "--", sys.executable, SERVER, "stdio", "--prefix", "p_"
    )
    assert added.exit_code == 0, added.output

    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert data["mcpServers"]["old"] == {"command": "x", "custom": 1}
    assert data["mcpServers"]["ctx"] == {
        "url": "https://mcp.example/mcp",
        "transport": "http",
        "headers": {"Authorization": "Bearer sk-top-secret"},
    }
    assert data["mcpServers"]["local"] == {
        "command": sys.executable,
        "args": [SERVER, "stdio", "--prefix", "p_"],
        "env": {"API_KEY": "env-secret-1"},
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds secrets

    listed = invoke("list")
    assert listed.exit_code == 0
    assert f"MCP config file: {path}" in listed.output
    assert "ctx (http): https://mcp.example/mcp  (headers: Authorization)" in listed.output
    assert "local (stdio):" in listed.output and "(env: API_KEY)" in listed.output
    assert "sk-top-secret" not in listed.output and "env-secret-1" not in listed.output

    replaced = invoke("add", "--transport", "sse", "ctx", "https://mcp.example/sse")
    assert "Updated MCP server 'ctx'" in replaced.output
    assert json.loads(path.read_text())["mcpServers"]["ctx"] == {
        "url": "https://mcp.example/sse",
        "transport": "sse",
    }

    removed = invoke("remove", "ctx")
    assert removed.exit_code == 0 and "Removed MCP server 'ctx'" in removed.output
    assert "ctx" not in json.loads(path.read_text())["mcpServers"]
    missing = invoke("remove", "ctx")
    assert missing.exit_code == 1 and "not found" in missing.output


def test_bad_input_changes_nothing() -> None:
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{broken")
    result = invoke("add", "x", "--", "cmd")
    assert result.exit_code != 0 and "invalid JSON" in result.output
    assert path.read_text() == "{broken"  # never rewritten

    path.write_text("{}")
    for args in (
        ["add", "--transport", "http", "x", "ftp://nope"],
        ["add", "--transport", "http", "x", "https://a", "https://b"],
        ["add", "-H", "A: b", "x", "--", "cmd"],
        ["add", "-e", "NOEQUALS", "x", "--", "cmd"],
    ):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
    assert "NOEQUALS" not in invoke("add", "-e", "NOEQUALS", "x", "--", "cmd").output  # may be a secret
    assert path.read_text() == "{}"


def test_list_shows_invalid_entries() -> None:
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"ok": {"command": "x"}, "bad": {"url": 3}}}))
    listed = invoke("list")
    assert "ok (stdio): x" in listed.output
    assert "bad: invalid: must be a non-empty string (key `url`)" in listed.output
    path.unlink()
    assert "No MCP servers configured." in invoke("list").output


def test_test_connects_and_lists_tools() -> None:
    assert invoke("add", "local", "--", sys.executable, SERVER, "stdio").exit_code == 0
    assert invoke("add", "broken", "--", sys.executable, SERVER, "crash").exit_code == 0
    ok = invoke("test", "local")
    assert ok.exit_code == 0, ok.output
    assert "✓ Connected to 'local'" in ok.output
    assert "    - echo: Echo the text back." in ok.output
    assert "Available tools: 9" in ok.output
    bad = invoke("test", "broken")
    assert bad.exit_code == 1
    assert "✗ Connection failed:" in bad.output and "refuses to start" in bad.output
    unknown = invoke("test", "nope")
    assert unknown.exit_code == 1 and "not found" in unknown.output


def test_concurrent_add_and_remove_processes_all_land() -> None:
    """Eight `kimi mcp add` and four `kimi mcp remove` processes at once: each read-modify-write of
    mcp.json holds `mcp.json.lock`, so no process writes back a copy without the others' changes."""
    path = default_mcp_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "dark", "mcpServers": {f"old{i}": {"command": "x"} for i in range(4)}}))
    kimi = [sys.executable, "-m", "kimi_acp", "mcp"]
    runs = [[*kimi, "add", "--transport", "http", f"s{i}", f"https://mcp.example/{i}"] for i in range(8)]
    runs += [[*kimi, "remove", f"old{i}"] for i in range(4)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in runs]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert sorted(data["mcpServers"]) == [f"s{i}" for i in range(8)]
    assert data["mcpServers"]["s5"] == {"url": "https://mcp.example/5", "transport": "http"}


def test_test_shows_a_servers_tool_names_without_their_escape_sequences() -> None:
    """A tool named with terminal escapes (clear the screen, hide text) is printed escaped (issue #29)."""
    prefix = "\x1b[2J\x1b[8mhidden\u202e`\n"
    assert invoke("add", "odd", "--", sys.executable, SERVER, "stdio", "--prefix", prefix).exit_code == 0
    ok = invoke("test", "odd")
    assert ok.exit_code == 0, ok.output
    assert "    - \\x1b[2J\\x1b[8mhidden\\u202e\\x60\\necho: Echo the text back." in ok.output
    tools = [line for line in ok.output.splitlines() if line.startswith("    - ")]
    assert len(tools) == 9 and all(line.startswith("    - \\x1b[2J") for line in tools)  # one line each
    assert not any(char in line for line in tools for char in "\x1b\u202e"), ok.output
