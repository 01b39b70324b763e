"""Parsing, validating and merging MCP entries from the three sources (no server involved)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kimi_acp.mcp.config import (
    McpClientSettings,
    McpConfigError,
    RemoteServerConfig,
    StdioServerConfig,
    default_mcp_file,
    load_default_servers,
    load_flag_servers,
    merge_servers,
    parse_acp_servers,
    parse_mcp_json,
    redact,
    redact_url,
    resolve_servers,
)


def test_kimi_mcp_json_format() -> None:
    servers = parse_mcp_json(
        {
            "mcpServers": {
                "fs": {
                    "command": "npx",
                    "args": ["-y", "@x/fs"],
                    "env": {"TOKEN": "s3cret-value", "PORT": 8080},
                },
                "ctx7": {
                    "url": "https://mcp.context7.com/mcp",
                    "headers": {"KEY": "k-123456"},
                    "transport": "http",
                },
                "stream": {"url": "https://a.example/mcp", "transport": "streamable-http"},
                "legacy": {"url": "https://b.example/sse", "transport": "sse"},
                "guessed": {"url": "https://c.example/v1/sse?x=1"},
                "plain": {"url": "https://d.example/mcp"},
                "typed": {"type": "stdio", "command": "srv"},
            },
            "otherKey": True,
        },
        origin="mcp.json",
    )
    by = {s.name: s for s in servers}
    assert by["fs"] == StdioServerConfig(
        "fs", "npx", ("-y", "@x/fs"), (("TOKEN", "s3cret-value"), ("PORT", "8080"))
    )
    assert by["ctx7"] == RemoteServerConfig(
        "ctx7", "https://mcp.context7.com/mcp", "http", (("KEY", "k-123456"),)
    )
    assert by["stream"].transport == "http"
    assert by["legacy"].transport == "sse"
    assert by["guessed"].transport == "sse"  # fastmcp's rule: a `/sse` path segment
    assert by["plain"].transport == "http"
    assert by["typed"].transport == "stdio"
    assert [s.name for s in servers] == ["fs", "ctx7", "stream", "legacy", "guessed", "plain", "typed"]


@pytest.mark.parametrize(
    ("entry", "key", "reason"),
    [
        ({"args": ["x"]}, None, "needs `command`"),
        ({"command": ""}, "command", "non-empty string"),
        ({"command": "x", "args": "a b"}, "args", "array of strings"),
        ({"command": "x", "args": ["a", 3]}, "args[1]", "must be a string"),
        ({"command": "x", "env": {"A": ["no"]}}, "env.A", "must be a string"),
        ({"command": "x", "env": ["A=1"]}, "env", "object of strings"),
        ({"command": "x", "url": "http://h/"}, "url", "not both"),
        ({"url": "ftp://h/x"}, "url", "http:// or https://"),
        ({"url": "https://h/x", "headers": {"A": None}}, "headers.A", "must be a string"),
        ({"url": "https://h/x", "transport": "websocket"}, "transport", "unsupported transport"),
        ({"command": "x", "transport": "http"}, "transport", "need a `url`"),
        ("npx", None, "must be an object"),
    ],
)
def test_invalid_entries_name_the_entry_and_the_key(entry: object, key: str | None, reason: str) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_json({"mcpServers": {"broken": entry}}, origin="/x/mcp.json")
    err = info.value
    assert (err.source, err.entry, err.key) == ("/x/mcp.json", "broken", key)
    assert reason in err.reason
    assert str(err).startswith('/x/mcp.json: server "broken"')
    if key:
        assert f"key `{key}`" in str(err)


def test_error_messages_never_carry_secret_values() -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_json(
            {"mcpServers": {"b": {"command": "x", "env": {"TOKEN": 12.5, "BAD": {"v": "hunter2-secret"}}}}},
            origin="f",
        )
    assert "hunter2" not in str(info.value)


def test_acp_mcp_servers_from_dicts_and_sdk_models() -> None:
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

    models = [
        McpServerStdio(
            name="local", command="/bin/srv", args=["--x"], env=[EnvVariable(name="K", value="secret-v")]
        ),
        HttpMcpServer(
            type="http",
            name="remote",
            url="https://h/mcp",
            headers=[HttpHeader(name="Auth", value="Bearer t0k")],
        ),
        SseMcpServer(type="sse", name="old", url="https://h/sse", headers=[]),
    ]
    dicts = [
        {
            "name": "local",
            "command": "/bin/srv",
            "args": ["--x"],
            "env": [{"name": "K", "value": "secret-v"}],
        },
        {
            "type": "http",
            "name": "remote",
            "url": "https://h/mcp",
            "headers": [{"name": "Auth", "value": "Bearer t0k"}],
        },
        {"type": "sse", "name": "old", "url": "https://h/sse", "headers": None},
    ]
    for items in (models, dicts):
        servers = parse_acp_servers(items)
        assert servers == [
            StdioServerConfig("local", "/bin/srv", ("--x",), (("K", "secret-v"),)),
            RemoteServerConfig("remote", "https://h/mcp", "http", (("Auth", "Bearer t0k"),)),
            RemoteServerConfig("old", "https://h/sse", "sse"),
        ]
        assert all(s.kind == "session" for s in servers)


@pytest.mark.parametrize(
    ("items", "entry", "key"),
    [
        ([{"command": "x", "args": [], "env": []}], "mcpServers[0]", "name"),
        ([{"name": "a", "args": [], "env": []}], 'mcpServers[0] ("a")', "command"),
        ([{"name": "a", "command": "x", "env": [{"name": "K"}]}], 'mcpServers[0] ("a")', "env[0].value"),
        ([{"type": "http", "name": "a", "headers": []}], 'mcpServers[0] ("a")', "url"),
        (
            [{"type": "http", "name": "a", "url": "https://h", "headers": [{"value": "v"}]}],
            'mcpServers[0] ("a")',
            "headers[0].name",
        ),
        ([{"type": "ws", "name": "a", "url": "wss://h"}], 'mcpServers[0] ("a")', "type"),
        ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "mcpServers[1]", "name"),
        (["nope"], "mcpServers[0]", None),
    ],
)
def test_invalid_acp_entries(items: list[object], entry: str, key: str | None) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_acp_servers(items)
    assert (info.value.entry, info.value.key) == (entry, key)
    assert str(info.value).startswith(f"mcpServers: {entry}")


def test_precedence_session_beats_flag_beats_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    default_mcp_file().parent.mkdir(parents=True, exist_ok=True)
    default_mcp_file().write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {"command": "from-file"},
                    "b": {"command": "from-file"},
                    "c": {"command": "from-file"},
                }
            }
        )
    )
    flag_file = tmp_path / "flag.json"
    flag_file.write_text(
        json.dumps({"mcpServers": {"b": {"command": "from-flag-file"}, "c": {"command": "from-flag-file"}}})
    )
    flags = load_flag_servers(
        [flag_file], [json.dumps({"mcpServers": {"c": {"command": "from-inline-flag"}}})]
    )
    with caplog.at_level(logging.INFO, logger="kimi_acp.mcp.config"):
        resolved = resolve_servers(
            session=[{"name": "a", "command": "from-session", "args": [], "env": []}], flags=flags
        )
    commands = {s.name: s.command for s in resolved.servers}  # type: ignore[union-attr]
    assert commands == {"a": "from-session", "b": "from-flag-file", "c": "from-inline-flag"}
    assert resolved.problems == []
    assert any("'a' from mcpServers overrides" in r.getMessage() for r in caplog.records)
    # The order of arguments does not matter, only the kind of source.
    file_a = StdioServerConfig("a", "f", kind="file")
    session_a = StdioServerConfig("a", "s", kind="session")
    assert merge_servers([session_a, file_a])[0].command == "s"


def test_mcp_json_is_lenient_other_sources_strict(tmp_path: Path) -> None:
    default_mcp_file().parent.mkdir(parents=True, exist_ok=True)
    default_mcp_file().write_text(
        json.dumps({"mcpServers": {"good": {"command": "x"}, "bad": {"url": 5}, "fixed": {"url": 1}}})
    )
    servers, problems = load_default_servers()
    assert [s.name for s in servers] == ["good"]
    assert [(p.entry, p.key) for p in problems] == [("bad", "url"), ("fixed", "url")]
    # An entry a better source replaces is no problem any more.
    resolved = resolve_servers(session=[{"name": "fixed", "command": "y", "args": [], "env": []}])
    assert [p.entry for p in resolved.problems] == ["bad"]
    # Flags and sessions reject.
    bad_flag = tmp_path / "bad.json"
    bad_flag.write_text("{not json")
    with pytest.raises(McpConfigError, match=r"--mcp-config-file .*bad.json: invalid JSON"):
        load_flag_servers([bad_flag])
    with pytest.raises(McpConfigError, match=r'--mcp-config: server "x", key `command`'):
        load_flag_servers([], ['{"mcpServers": {"x": {"command": 1}}}'])
    with pytest.raises(McpConfigError, match="cannot read"):
        load_flag_servers([tmp_path / "missing.json"])


def test_unreadable_default_file_is_one_problem() -> None:
    default_mcp_file().parent.mkdir(parents=True, exist_ok=True)
    default_mcp_file().write_text("{")
    servers, problems = load_default_servers()
    assert servers == [] and len(problems) == 1 and "invalid JSON" in str(problems[0])


def test_secrets_stay_out_of_repr_describe_and_redaction() -> None:
    stdio = StdioServerConfig("s", "cmd", ("--flag",), (("API_KEY", "sk-very-secret"),))
    remote = RemoteServerConfig(
        "r",
        "https://user:pa55word@h.example/mcp?token=qwerty123&x=1",
        "http",
        (("Authorization", "Bearer abc-secret"),),
    )
    for cfg in (stdio, remote):
        for text in (repr(cfg), cfg.describe()):
            for secret in ("sk-very-secret", "pa55word", "qwerty123", "abc-secret"):
                assert secret not in text
    assert "API_KEY" in stdio.describe() and "Authorization" in remote.describe()
    assert redact_url(remote.url) == "https://user:***@h.example/mcp?token=***&x=***"
    assert redact("failed with Bearer abc-secret at qwerty123", remote.secrets()) == "failed with *** at ***"
    assert redact("exit code 1", ("1",)) == "exit code ***"  # the helper redacts what it is given...
    assert (
        "1" not in StdioServerConfig("s", "c", env=(("DEBUG", "1"),)).secrets()
    )  # ...short values are not secrets


def test_equality_ignores_where_an_entry_came_from() -> None:
    a = StdioServerConfig("a", "x", origin="one", kind="file")
    b = StdioServerConfig("a", "x", origin="two", kind="session")
    assert a == b
    assert a != StdioServerConfig("a", "x", env=(("K", "v"),))


def test_client_settings_from_config_toml_section() -> None:
    assert McpClientSettings.from_config(None) == McpClientSettings(60_000, 30_000)
    settings = McpClientSettings.from_config(
        {"client": {"tool_call_timeout_ms": 1500, "connect_timeout_ms": 250}}
    )
    assert (settings.tool_call_timeout, settings.connect_timeout) == (1.5, 0.25)
    with pytest.raises(McpConfigError, match=r"key `tool_call_timeout_ms`: must be a positive integer"):
        McpClientSettings.from_config({"client": {"tool_call_timeout_ms": "60s"}})
    with pytest.raises(McpConfigError, match=r"mcp\.client"):
        McpClientSettings.from_config({"client": 3})
    assert McpClientSettings().max_message_bytes == 16 << 20
    assert McpClientSettings.from_config({"client": {"max_message_mb": 64}}).max_message_bytes == 64 << 20
    with pytest.raises(McpConfigError, match=r"key `max_message_mb`: must be a positive integer \(MiB\)"):
        McpClientSettings.from_config({"client": {"max_message_mb": 0}})


@pytest.mark.parametrize(
    "content",
    [
        None,  # no mcp.json
        '{"mcpServers": {}}',  # what removing the last server leaves
        "{}",
        '{"mcpServers": null}',
        '{"mcpServers": {"fs": {"command": "npx"}}}',
        '{"mcpServers": {"bad": 3}}',
        '{"mcpServers": []}',
        "[]",
        "{not json",
    ],
)
def test_the_start_up_check_of_mcp_json_agrees_with_reading_it(
    content: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions skip the MCP layer when `mcp_file_may_list_servers()` is False: only when reading
    the file would give no server and nothing to report."""
    from kimi_acp.util.share_dir import mcp_file_may_list_servers

    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path))
    if content is not None:
        default_mcp_file().write_text(content, encoding="utf-8")
    servers, problems = load_default_servers()
    assert mcp_file_may_list_servers() == bool(servers or problems)
