"""MCP server entries from the three sources, validated and merged into one list per session.

Sources: an ACP client's `mcpServers` (session/new, load, resume, fork), `--mcp-config-file F` /
`--mcp-config JSON` of `kimi --wire`, and Kimi's `$KIMI_SHARE_DIR/mcp.json`. The JSON format is
Kimi Code CLI's (fastmcp's `MCPConfig`): `{"mcpServers": {name: {command, args, env, cwd} |
{url, headers, transport}}}`, so the same file works for both programs.

Standard library only (no pydantic models, no `mcp`): the front ends parse configs while a session
opens, and a session without MCP servers must not pay for anything more. Errors name the source,
the entry and the key, and never carry a header or env value.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ..errors import ConfigError
from ..util.secrets import replace
from ..util.share_dir import mcp_file

log = logging.getLogger(__name__)

Transport = Literal["stdio", "http", "sse"]
SourceKind = Literal["file", "flag", "session"]
# A name given by two sources: the more specific one wins.
PRECEDENCE: dict[str, int] = {"file": 0, "flag": 1, "session": 2}

DEFAULT_TOOL_CALL_TIMEOUT_MS = 60_000
DEFAULT_CONNECT_TIMEOUT_MS = 30_000
DEFAULT_MAX_MESSAGE_MB = 16  # one message from a stdio server; more ends its connection (stdio.py)

# The `transport` values fastmcp (and so Kimi Code CLI) accepts, plus `type` spellings of other
# clients' mcp.json files; all map to one of ours.
_TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "sse": "sse",
}
_SSE_PATH = re.compile(r"/sse(/|\?|&|$)")
_MIN_SECRET_LEN = 4  # shorter values ("1", "yes") are not secrets, and redacting them mangles messages
REDACTED = "***"


class McpConfigError(ConfigError, ValueError):
    """An MCP entry that cannot be used. `str()` is one line: source, entry, key, reason."""

    def __init__(self, reason: str, *, source: str, entry: str | None = None, key: str | None = None) -> None:
        self.reason = reason
        self.source = source
        self.entry = entry
        self.key = key
        where = source
        if entry is not None:
            where += f": server {json.dumps(entry)}" if not entry.startswith("mcpServers[") else f": {entry}"
        if key is not None:
            where += f", key `{key}`"
        super().__init__(f"{where}: {reason}")


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class StdioServerConfig:
    """A server we start as a child process and talk to over its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str | None = None
    origin: str = field(default="", compare=False)  # where it was read, for messages
    kind: SourceKind = field(default="file", compare=False)

    @property
    def transport(self) -> Transport:
        return "stdio"

    def secrets(self) -> tuple[str, ...]:
        return tuple(v for _, v in self.env if len(v) >= _MIN_SECRET_LEN)

    def describe(self) -> str:
        """One line for listings and logs: the command, env names but never their values."""
        text = " ".join([self.command, *self.args])
        if self.env:
            text += "  (env: " + ", ".join(k for k, _ in self.env) + ")"
        return redact(text, self.secrets())

    def to_json(self) -> dict[str, Any]:
        """The mcp.json form (secrets included: this is what gets written to the 0600 file)."""
        out: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if self.env:
            out["env"] = dict(self.env)
        if self.cwd:
            out["cwd"] = self.cwd
        return out


@dataclass(frozen=True)
class RemoteServerConfig:
    """A server we reach over streamable HTTP (`http`) or the older HTTP+SSE transport (`sse`)."""

    name: str
    url: str = field(repr=False)
    transport: Literal["http", "sse"] = "http"
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth: str | None = None
    origin: str = field(default="", compare=False)
    kind: SourceKind = field(default="file", compare=False)

    def secrets(self) -> tuple[str, ...]:
        found = [v for _, v in self.headers]
        parts = urlsplit(self.url)
        if parts.password:
            found.append(parts.password)
        found.extend(v for _, v in parse_qsl(parts.query, keep_blank_values=False))
        return tuple(v for v in found if len(v) >= _MIN_SECRET_LEN)

    def describe(self) -> str:
        text = redact_url(self.url)
        if self.headers:
            text += "  (headers: " + ", ".join(k for k, _ in self.headers) + ")"
        return text

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url, "transport": self.transport}
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.auth:
            out["auth"] = self.auth
        return out


McpServerConfig = StdioServerConfig | RemoteServerConfig


@dataclass(frozen=True)
class McpClientSettings:
    """`[mcp.client]` of config.toml: Kimi's `tool_call_timeout_ms`, and our `connect_timeout_ms`
    and `max_message_mb` (the most one message from a stdio server may hold, `stdio.py`)."""

    tool_call_timeout_ms: int = DEFAULT_TOOL_CALL_TIMEOUT_MS
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
    max_message_mb: int = DEFAULT_MAX_MESSAGE_MB

    @property
    def max_message_bytes(self) -> int:
        return self.max_message_mb << 20

    @property
    def tool_call_timeout(self) -> float:
        return self.tool_call_timeout_ms / 1000

    @property
    def connect_timeout(self) -> float:
        return self.connect_timeout_ms / 1000

    @classmethod
    def from_config(cls, mcp_section: Any) -> McpClientSettings:
        """From the `[mcp]` table of config.toml (a dict, or None when absent)."""
        source = "config.toml [mcp.client]"
        if mcp_section is None:
            return cls()
        if not isinstance(mcp_section, Mapping):
            raise McpConfigError("must be a table", source="config.toml", key="mcp")
        client = mcp_section.get("client")
        if client is None:
            return cls()
        if not isinstance(client, Mapping):
            raise McpConfigError("must be a table", source="config.toml", key="mcp.client")
        values: dict[str, int] = {}
        keys = {"tool_call_timeout_ms": "milliseconds", "connect_timeout_ms": "milliseconds", "max_message_mb": "MiB"}
        for key, unit in keys.items():
            if key in client:
                value = client[key]
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise McpConfigError(f"must be a positive integer ({unit})", source=source, key=key)
                values[key] = value
        return cls(**values)


# --------------------------------------------------------------------------- secrets


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value replaced by `***` (longest first, so no fragment is left)."""
    return replace(text, secrets, mark=REDACTED, min_chars=1)  # the one mechanism: util/secrets.py


def redact_url(url: str) -> str:
    """A URL fit for a log: no password, query values replaced by `***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        user = netloc.rsplit("@", 1)[0].split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{k}={REDACTED}" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


# --------------------------------------------------------------------------- mcp.json / flags


def default_mcp_file() -> Path:
    """Kimi's global MCP file, `$KIMI_SHARE_DIR/mcp.json` (the one `kimi mcp` edits)."""
    return mcp_file()


def parse_mcp_json(data: Any, *, origin: str, kind: SourceKind = "file") -> list[McpServerConfig]:
    """Every entry of an `{"mcpServers": {...}}` document; the first bad one raises McpConfigError."""
    servers, errors = parse_mcp_json_lenient(data, origin=origin, kind=kind)
    if errors:
        raise errors[0]
    return servers


def parse_mcp_json_lenient(
    data: Any, *, origin: str, kind: SourceKind = "file"
) -> tuple[list[McpServerConfig], list[McpConfigError]]:
    """The good entries and an error for each bad one (a broken entry must not hide the others)."""
    if not isinstance(data, Mapping):
        return [], [McpConfigError("must be a JSON object", source=origin)]
    raw = data.get("mcpServers")
    if raw is None:
        return [], []
    if not isinstance(raw, Mapping):
        return [], [McpConfigError("must be an object of servers by name", source=origin, key="mcpServers")]
    servers: list[McpServerConfig] = []
    errors: list[McpConfigError] = []
    for name, entry in raw.items():
        try:
            servers.append(parse_json_entry(str(name), entry, origin=origin, kind=kind))
        except McpConfigError as exc:
            errors.append(exc)
    return servers, errors


def parse_json_entry(name: str, raw: Any, *, origin: str, kind: SourceKind = "file") -> McpServerConfig:
    """One `mcpServers` value of the JSON format."""

    def bad(reason: str, key: str | None = None) -> McpConfigError:
        return McpConfigError(reason, source=origin, entry=name, key=key)

    if not name.strip():
        raise bad("a server name must not be empty")
    if not isinstance(raw, Mapping):
        raise bad("must be an object with `command` (stdio) or `url` (http/sse)")
    key_used = "transport" if "transport" in raw else "type"
    transport_raw = raw.get("transport", raw.get("type"))
    transport: Transport | None = None
    if transport_raw is not None:
        if not isinstance(transport_raw, str) or transport_raw.lower() not in _TRANSPORT_ALIASES:
            raise bad(
                f"unsupported transport {json.dumps(transport_raw)} (expected stdio, http, streamable-http or sse)",
                key_used,
            )
        transport = _TRANSPORT_ALIASES[transport_raw.lower()]
    if "command" in raw and "url" in raw:
        raise bad("give either `command` (stdio) or `url` (http/sse), not both", "url")
    if "command" in raw:
        if transport not in (None, "stdio"):
            raise bad(f"`{transport}` servers need a `url`, not a `command`", key_used)
        command = raw["command"]
        if not isinstance(command, str) or not command.strip():
            raise bad("must be a non-empty string", "command")
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise bad("must be a string", "cwd")
        return StdioServerConfig(
            name=name,
            command=command,
            args=_string_list(raw.get("args"), "args", bad),
            env=_string_map(raw.get("env"), "env", bad),
            cwd=cwd or None,
            origin=origin,
            kind=kind,
        )
    if "url" in raw:
        if transport == "stdio":
            raise bad("stdio servers need a `command`, not a `url`", key_used)
        url = _check_url(raw["url"], bad)
        auth = raw.get("auth")
        if auth is not None and not isinstance(auth, str):
            raise bad("must be a string", "auth")
        return RemoteServerConfig(
            name=name,
            url=url,
            transport=transport or infer_transport(url),
            headers=_string_map(raw.get("headers"), "headers", bad),
            auth=auth,
            origin=origin,
            kind=kind,
        )
    raise bad("needs `command` (a stdio server) or `url` (an http or sse server)")


def infer_transport(url: str) -> Literal["http", "sse"]:
    """fastmcp's rule for a `url` without `transport`: a path segment `/sse` means SSE."""
    return "sse" if _SSE_PATH.search(urlsplit(url).path) else "http"


def load_mcp_file(
    path: str | Path, *, kind: SourceKind = "flag", origin: str | None = None
) -> list[McpServerConfig]:
    """A whole file, strictly (`--mcp-config-file`): unreadable, not JSON or any bad entry raises."""
    label = origin or str(path)
    return parse_mcp_json(_read_json_file(Path(path), label), origin=label, kind=kind)


def parse_mcp_config_text(text: str, *, origin: str = "--mcp-config") -> list[McpServerConfig]:
    """`--mcp-config JSON`: the same document as a file, given inline."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise McpConfigError(f"invalid JSON: {exc}", source=origin) from None
    return parse_mcp_json(data, origin=origin, kind="flag")


def load_flag_servers(files: Sequence[str | Path] = (), texts: Sequence[str] = ()) -> list[McpServerConfig]:
    """`--mcp-config-file` (each in turn) then `--mcp-config`; a later entry replaces an earlier one."""
    found: list[McpServerConfig] = []
    for path in files:
        found.extend(load_mcp_file(path, kind="flag", origin=f"--mcp-config-file {path}"))
    for i, text in enumerate(texts):
        found.extend(
            parse_mcp_config_text(
                text, origin="--mcp-config" if len(texts) == 1 else f"--mcp-config #{i + 1}"
            )
        )
    return merge_servers(found)


def load_default_servers(path: Path | None = None) -> tuple[list[McpServerConfig], list[McpConfigError]]:
    """mcp.json, leniently: a missing file is empty; a bad entry is returned as an error to report."""
    path = path or default_mcp_file()
    if not path.exists():
        return [], []
    try:
        data = _read_json_file(path, str(path))
    except McpConfigError as exc:
        return [], [exc]
    return parse_mcp_json_lenient(data, origin=str(path), kind="file")


def _read_json_file(path: Path, label: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"cannot read the file: {exc.strerror or exc}", source=label) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise McpConfigError(f"invalid JSON: {exc}", source=label) from None


# --------------------------------------------------------------------------- ACP mcpServers


def parse_acp_servers(items: Any, *, origin: str = "mcpServers") -> list[McpServerConfig]:
    """An ACP client's `mcpServers` (SDK models or plain dicts); the first bad entry raises.

    Stdio entries are `{name, command, args, env: [{name, value}]}`, HTTP and SSE entries
    `{type: "http"|"sse", name, url, headers: [{name, value}]}`.
    """
    if items is None:
        return []
    if not isinstance(items, (list, tuple)):
        raise McpConfigError("must be an array", source=origin)
    servers: list[McpServerConfig] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        raw = _as_dict(item)
        label = f"mcpServers[{i}]"

        def bad(reason: str, key: str | None = None, label: str = label) -> McpConfigError:
            return McpConfigError(reason, source=origin, entry=label, key=key)

        if raw is None:
            raise bad("must be an object")
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            raise bad("must be a non-empty string", "name")
        if name in seen:
            raise bad(f"duplicate server name {json.dumps(name)} (also mcpServers[{seen[name]}])", "name")
        seen[name] = i
        label = f"mcpServers[{i}] ({json.dumps(name)})"
        kind = raw.get("type")
        if kind in (None, "stdio"):
            command = raw.get("command")
            if not isinstance(command, str) or not command.strip():
                raise bad("must be a non-empty string", "command", label)
            servers.append(
                StdioServerConfig(
                    name=name,
                    command=command,
                    args=_string_list(raw.get("args"), "args", lambda r, k, label=label: bad(r, k, label)),
                    env=_pair_list(raw.get("env"), "env", lambda r, k, label=label: bad(r, k, label)),
                    origin=origin,
                    kind="session",
                )
            )
        elif kind in ("http", "sse"):
            servers.append(
                RemoteServerConfig(
                    name=name,
                    url=_check_url(raw.get("url"), lambda r, k, label=label: bad(r, k, label)),
                    transport=kind,
                    headers=_pair_list(
                        raw.get("headers"), "headers", lambda r, k, label=label: bad(r, k, label)
                    ),
                    origin=origin,
                    kind="session",
                )
            )
        else:
            raise bad(
                f'unsupported type {json.dumps(kind)} (expected "http", "sse" or none for stdio)',
                "type",
                label,
            )
    return servers


def _as_dict(item: Any) -> dict[str, Any] | None:
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)  # an ACP SDK model
    if callable(dump):
        data = dump(by_alias=True, exclude_none=True)
        return data if isinstance(data, dict) else None
    return None


# --------------------------------------------------------------------------- merging


def merge_servers(configs: Iterable[McpServerConfig]) -> list[McpServerConfig]:
    """One entry per name: session beats flag beats file; within a kind the later one wins.

    Each override is logged (names and origins only). Order is that of first appearance.
    """
    chosen: dict[str, McpServerConfig] = {}
    for cfg in configs:
        old = chosen.get(cfg.name)
        if old is None:
            chosen[cfg.name] = cfg
            continue
        if PRECEDENCE[cfg.kind] >= PRECEDENCE[old.kind]:
            winner, loser = cfg, old
        else:
            winner, loser = old, cfg
        log.info(
            "MCP server %r from %s overrides the one from %s",
            cfg.name,
            winner.origin or winner.kind,
            loser.origin or loser.kind,
        )
        chosen[cfg.name] = winner
    return list(chosen.values())


@dataclass(frozen=True)
class ResolvedServers:
    """What one session connects to, and the mcp.json entries that could not be used."""

    servers: list[McpServerConfig]
    problems: list[McpConfigError]


def resolve_servers(
    *,
    session: Any = None,
    flags: Sequence[McpServerConfig] = (),
    include_default_file: bool = True,
    default_file: Path | None = None,
) -> ResolvedServers:
    """The merged list for one session.

    `session` is an ACP `mcpServers` value (bad entries raise McpConfigError: answer -32602 with
    it); `flags` come from `load_flag_servers` (already strict); mcp.json is read leniently, its bad
    entries become `problems` (report them, the session goes on) unless a better source names the
    same server.
    """
    session_servers = parse_acp_servers(session) if session is not None else []
    file_servers: list[McpServerConfig] = []
    problems: list[McpConfigError] = []
    if include_default_file:
        file_servers, problems = load_default_servers(default_file)
    merged = merge_servers([*file_servers, *flags, *session_servers])
    names = {s.name for s in merged}
    problems = [p for p in problems if p.entry is None or p.entry not in names]
    return ResolvedServers(merged, problems)


# --------------------------------------------------------------------------- field helpers


def _check_url(value: Any, bad: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad("must be a non-empty string", "url")
    try:
        parts = urlsplit(value)
    except ValueError:
        raise bad("is not a valid URL", "url") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise bad(f"must be an http:// or https:// URL (got scheme {json.dumps(parts.scheme)})", "url")
    return value


def _string_list(value: Any, key: str, bad: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise bad("must be an array of strings", key)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise bad("must be a string", f"{key}[{i}]")
    return tuple(value)


def _string_map(value: Any, key: str, bad: Any) -> tuple[tuple[str, str], ...]:
    """`{"NAME": "value"}`; numbers are accepted as their text (a port in `env` is common)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise bad("must be an object of strings", key)
    out: list[tuple[str, str]] = []
    for name, item in value.items():
        if not isinstance(name, str) or not name:
            raise bad("names must be non-empty strings", key)
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise bad("must be a string", f"{key}.{name}")
        out.append((name, str(item)))
    return tuple(out)


def _pair_list(value: Any, key: str, bad: Any) -> tuple[tuple[str, str], ...]:
    """ACP's `[{name, value}]` lists (env, headers)."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise bad("must be an array of {name, value} objects", key)
    out: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        raw = _as_dict(item)
        if raw is None:
            raise bad("must be a {name, value} object", f"{key}[{i}]")
        name, val = raw.get("name"), raw.get("value")
        if not isinstance(name, str) or not name:
            raise bad("must be a non-empty string", f"{key}[{i}].name")
        if not isinstance(val, str):
            raise bad("must be a string", f"{key}[{i}].value")
        out.append((name, val))
    return tuple(out)
