"""The shape of `mcpServers` in session/new, load, resume and fork, checked strictly.

The SDK silently drops entries it cannot parse, so a typo in an IDE's server settings would make
that server vanish without a word. Here a bad entry is an "Invalid params" error naming the entry
and the key. Shapes from the ACP schema: stdio {name, command, args?, env?: [{name, value}]},
http / sse {type, name, url, headers?: [{name, value}]}.
"""

from __future__ import annotations

from typing import Any

from .errors import invalid_params

MCP_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
_REMOTE_TYPES = ("http", "sse")


def check_mcp_servers(value: Any) -> None:
    """Raise an "Invalid params" RequestError for the first problem found."""
    if value is None:
        return
    if not isinstance(value, list):
        raise invalid_params("mcpServers", "must be an array of MCP server configurations")
    for index, entry in enumerate(value):
        problem = _entry_problem(entry)
        if problem is not None:
            name = entry.get("name") if isinstance(entry, dict) else None
            where = f"mcpServers[{index}]" + (f" ({name!r})" if isinstance(name, str) and name else "")
            raise invalid_params(where, problem)


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "must be an object"
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        return "name is required (a non-empty string)"
    kind = entry.get("type")
    if kind is None or kind == "stdio":
        if not isinstance(entry.get("command"), str) or not entry["command"]:
            return "command is required for a stdio server (or give type 'http' or 'sse' and a url)"
        args = entry.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            return "args must be an array of strings"
        return _pairs_problem(entry.get("env"), "env")
    if kind in _REMOTE_TYPES:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return f"url is required for a {kind} server (an http:// or https:// URL)"
        return _pairs_problem(entry.get("headers"), "headers")
    return f"type {kind!r} is not supported (use 'http', 'sse', or omit it for stdio)"


def _pairs_problem(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{key} must be an array of {{name, value}} objects"
    for item in value:
        if not (isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str)):
            return f"{key} entries must be {{\"name\": string, \"value\": string}}"
    return None
