"""Editing `mcp.json` for `kimi mcp add/remove`: atomic, mode 0600 (it holds headers and env
values), and every key we do not manage left exactly as it was. Each read-modify-write holds
`mcp.json.lock`, so concurrent `kimi mcp add` runs all land."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..util.file_lock import release, wait_lock
from ..util.fs import atomic_write_text
from .config import McpConfigError

FILE_MODE = 0o600


def read_document(path: Path) -> dict[str, Any]:
    """The whole file as a dict; a missing file is `{}`. A file we cannot parse is never rewritten."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise McpConfigError(f"cannot read the file: {exc.strerror or exc}", source=str(path)) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise McpConfigError(f"invalid JSON: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise McpConfigError("must be a JSON object", source=str(path))
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise McpConfigError("must be an object of servers by name", source=str(path), key="mcpServers")
    return data


def write_document(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode=FILE_MODE)


def set_server(path: Path, name: str, entry: dict[str, Any]) -> bool:
    """Add or replace one server; returns True when it replaced an existing entry."""
    with _editing(path):
        data = read_document(path)
        servers = data.setdefault("mcpServers", {})
        replaced = name in servers
        servers[name] = entry
        write_document(path, data)
    return replaced


def remove_server(path: Path, name: str) -> bool:
    """Remove one server; False (and no write) when it is not there."""
    with _editing(path):
        data = read_document(path)
        servers = data.get("mcpServers") or {}
        if name not in servers:
            return False
        del servers[name]
        write_document(path, data)
    return True


@contextlib.contextmanager
def _editing(path: Path) -> Iterator[None]:
    """The file's lock for one read-modify-write; a holder that never lets go is a one-line error."""
    try:
        fd = wait_lock(path.with_name(path.name + ".lock"))
    except TimeoutError as exc:
        raise McpConfigError(f"cannot edit the file: {exc}; try again", source=str(path)) from None
    try:
        yield
    finally:
        release(fd)
