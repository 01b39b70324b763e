"""`kimi mcp list | add | remove | test | auth | reset-auth NAME`: edit and check `$KIMI_SHARE_DIR/mcp.json`.

The syntax is Kimi Code CLI's (`kimi mcp add --transport http NAME URL --header "K: V"`,
`kimi mcp add NAME -- COMMAND ARGS...`, `--auth oauth`), and so is the file. Values of headers and
env are written to the file (mode 0600) but never printed. `auth` signs in to an OAuth server in
the browser; its tokens go where Kimi Code CLI keeps them (`mcp/oauth_store.py`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..mcp.config import (
    McpClientSettings,
    McpConfigError,
    RemoteServerConfig,
    default_mcp_file,
    parse_json_entry,
    parse_mcp_json_lenient,
)
from ..mcp.oauth_store import OAuthStore
from ..mcp.store import read_document, remove_server, set_server
from ..util.visible_text import name_text, one_line


def build_mcp_group() -> click.Group:
    """The `mcp` click group; `kimi_acp/cli/main.py` registers it as `kimi mcp`."""

    @click.group(
        name="mcp", help="Manage MCP servers in $KIMI_SHARE_DIR/mcp.json (the file Kimi Code CLI reads)."
    )
    def mcp() -> None:
        from ..startup.logs import setup_logging

        setup_logging("mcp")  # the SDK's records go to kimi.log, redacted; never to the terminal

    @mcp.command("list", help="List the configured MCP servers (secrets are not shown).")
    def list_servers() -> None:
        path = default_mcp_file()
        data = _read(path)
        servers, errors = parse_mcp_json_lenient(data, origin=str(path))
        click.echo(f"MCP config file: {path}")
        if not servers and not errors:
            click.echo("No MCP servers configured.")
            return
        for cfg in servers:
            line = f"  {cfg.name} ({cfg.transport}): {cfg.describe()}"
            if isinstance(cfg, RemoteServerConfig) and cfg.auth == "oauth" and not OAuthStore(cfg.url).has_tokens():
                line += f" [authorization required - run: kimi mcp auth {cfg.name}]"
            click.echo(line)
        for err in errors:
            click.echo(
                f"  {err.entry or '?'}: invalid: {err.reason}" + (f" (key `{err.key}`)" if err.key else "")
            )

    @mcp.command(
        "add",
        help="Add (or replace) an MCP server. Examples:\n\n"
        "\b\n"
        "  kimi mcp add --transport http context7 https://mcp.context7.com/mcp -H 'CONTEXT7_API_KEY: key'\n"
        "  kimi mcp add --transport sse legacy http://127.0.0.1:8000/sse\n"
        "  kimi mcp add chrome-devtools -- npx chrome-devtools-mcp@latest",
    )
    @click.argument("name")
    @click.argument("target", nargs=-1, required=True, metavar="URL | -- COMMAND [ARGS]...")
    @click.option(
        "-t", "--transport", type=click.Choice(["stdio", "http", "sse"]), default="stdio", show_default=True
    )
    @click.option("-e", "--env", "env", multiple=True, metavar="KEY=VALUE", help="Environment (stdio).")
    @click.option(
        "-H", "--header", "headers", multiple=True, metavar="'KEY: VALUE'", help="HTTP header (http/sse)."
    )
    @click.option(
        "-a", "--auth", type=click.Choice(["oauth"]), default=None,
        help="Authorization (http/sse): oauth, then run `kimi mcp auth NAME`.",
    )
    def add(
        name: str,
        target: tuple[str, ...],
        transport: str,
        env: tuple[str, ...],
        headers: tuple[str, ...],
        auth: str | None,
    ) -> None:
        entry: dict[str, Any]
        if transport == "stdio":
            if headers:
                raise click.UsageError("--header is only for http and sse servers")
            if auth:
                raise click.UsageError("--auth is only for http and sse servers")
            command, *args = target
            entry = {"command": command, "args": args}
            if env:
                entry["env"] = _pairs(env, "=", "--env")
        else:
            if env:
                raise click.UsageError("--env is only for stdio servers")
            if len(target) != 1:
                raise click.UsageError(f"a {transport} server takes exactly one URL")
            entry = {"url": target[0], "transport": transport}
            if headers:
                entry["headers"] = _pairs(headers, ":", "--header")
            if auth:
                entry["auth"] = auth
        path = default_mcp_file()
        try:
            parse_json_entry(name, entry, origin="kimi mcp add")
        except McpConfigError as exc:
            raise click.UsageError(exc.reason) from None
        _read(path)  # refuse before writing when the file is broken
        replaced = _edit(lambda: set_server(path, name, entry))
        click.echo(f"Updated MCP server '{name}' in {path}." if replaced else f"Added MCP server '{name}' to {path}.")
        if auth == "oauth" and not OAuthStore(entry["url"]).has_tokens():
            click.echo(f"Run `kimi mcp auth {name}` to authorize it.")

    @mcp.command("remove", help="Remove an MCP server.")
    @click.argument("name")
    def remove(name: str) -> None:
        path = default_mcp_file()
        _read(path)
        if not _edit(lambda: remove_server(path, name)):
            click.echo(f"MCP server '{name}' not found in {path}.", err=True)
            sys.exit(1)
        click.echo(f"Removed MCP server '{name}' from {path}.")

    @mcp.command("test", help="Connect to an MCP server and list its tools.")
    @click.argument("name")
    @click.option(
        "--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Seconds."
    )
    def test(name: str, timeout: float) -> None:
        cfg = _server(name)
        click.echo(f"Testing connection to '{name}' ({cfg.transport}: {cfg.describe()})...")
        ok, lines = asyncio.run(_probe(cfg, timeout))
        for line in lines:
            click.echo(line, err=not ok)
        sys.exit(0 if ok else 1)

    @mcp.command("auth", help="Authorize an OAuth MCP server in the browser (tokens shared with Kimi Code CLI).")
    @click.argument("name")
    def auth(name: str) -> None:
        cfg = _oauth_server(name)
        from ..mcp.oauth import NoAuthorizationNeeded

        click.echo(f"Authorizing with '{name}'...")
        try:
            tools = asyncio.run(_authorize(cfg))
        except NoAuthorizationNeeded as exc:
            click.echo(f"'{name}' did not ask for authorization: it works without signing in. Available tools: {exc.tools}")
            return
        except Exception as exc:  # one line, never a traceback
            click.echo(f"Authorization failed: {exc}", err=True)
            sys.exit(1)
        click.echo(f"Successfully authorized with '{name}'.")
        click.echo(f"Available tools: {tools}")

    @mcp.command("reset-auth", help="Forget the OAuth tokens of an MCP server (it must be authorized again).")
    @click.argument("name")
    def reset_auth(name: str) -> None:
        cfg = _server(name)
        if not isinstance(cfg, RemoteServerConfig):
            click.echo(f"MCP server '{name}' is not a remote server.", err=True)
            sys.exit(1)
        if OAuthStore(cfg.url).clear():
            click.echo(f"OAuth tokens cleared for '{name}'.")
        else:
            click.echo(f"No OAuth tokens were stored for '{name}'.")

    return mcp


def _server(name: str) -> Any:
    """The named entry of mcp.json, or a one-line error and exit 1."""
    path = default_mcp_file()
    raw = _read(path).get("mcpServers") or {}
    if name not in raw:
        click.echo(f"MCP server '{name}' not found in {path}.", err=True)
        sys.exit(1)
    try:
        return parse_json_entry(name, raw[name], origin=str(path))
    except McpConfigError as exc:
        click.echo(f"✗ {exc}", err=True)
        sys.exit(1)


def _oauth_server(name: str) -> RemoteServerConfig:
    cfg = _server(name)
    if not isinstance(cfg, RemoteServerConfig):
        click.echo(f"MCP server '{name}' is not a remote server.", err=True)
        sys.exit(1)
    if cfg.auth != "oauth":
        click.echo(f"MCP server '{name}' does not use OAuth. Add it with --auth oauth.", err=True)
        sys.exit(1)
    return cfg


async def _authorize(cfg: RemoteServerConfig) -> int:
    from ..mcp.connection import McpConnection
    from ..mcp.oauth import AUTHORIZE_TIMEOUT_S, authorize

    async def connect(provider: Any) -> int:
        conn = McpConnection(cfg, connect_timeout=AUTHORIZE_TIMEOUT_S + 30, cwd=Path.cwd())
        conn.auth_override = provider
        try:
            await conn.connect()
            if conn.state != "connected":
                raise RuntimeError(conn.error or "the server did not connect")
            return len(conn.tools)
        finally:
            await conn.aclose()

    return await authorize(cfg.name, cfg.url, connect, click.echo)


async def _probe(cfg: Any, timeout: float) -> tuple[bool, list[str]]:
    from ..mcp.manager import McpManager

    manager = McpManager(
        [cfg], settings=McpClientSettings(connect_timeout_ms=int(timeout * 1000)), work_dir=Path.cwd()
    )
    try:
        status = (await manager.wait_ready()).servers[0]
        if status.status != "connected":
            return False, [f"✗ Connection failed: {status.error}"]
        conn_tools = manager.tools()
        lines = [f"✓ Connected to '{cfg.name}'", f"  Available tools: {len(conn_tools)}"]
        for tool in conn_tools:  # the server's words, on the user's terminal: no escape sequence of theirs runs there
            desc = one_line(" ".join(tool.remote.description.split()), 70)
            lines.append(f"    - {name_text(tool.remote.name).text}: {desc}".rstrip(": "))
        return True, lines
    finally:
        await manager.aclose()


def _read(path: Path) -> dict[str, Any]:
    try:
        return read_document(path)
    except McpConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _edit(change: Callable[[], bool]) -> bool:
    """One locked read-modify-write of mcp.json; a broken file or a stuck lock is one line."""
    try:
        return change()
    except McpConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _pairs(items: tuple[str, ...], sep: str, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(sep)
        key = key.strip()
        if not found or not key:
            raise click.UsageError(f"{option} expects KEY{sep}VALUE")  # never echo it: it may be a secret
        out[key] = value.strip() if sep == ":" else value
    return out
