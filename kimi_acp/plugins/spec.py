"""plugin.json, as Kimi Code CLI writes and reads it (stdlib only: read at every session open).

    {"name": "...", "version": "...", "description": "...",
     "config_file": "config.json", "inject": {"dotted.path.in.config": "api_key" | "base_url"},
     "tools": [{"name": "...", "description": "...", "command": ["python3", "run.py"],
                "parameters": {JSON Schema}}],
     "runtime": {"host": "...", "host_version": "..."}}      # written at install

`name` and `version` are required; `inject` needs `config_file`. Unknown keys are ignored.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .paths import plugins_dir

log = logging.getLogger(__name__)

PLUGIN_JSON = "plugin.json"


class PluginError(ConfigError):
    """A plugin that cannot be read, installed or removed; the message says why."""


@dataclass(frozen=True)
class PluginToolSpec:
    name: str
    description: str
    command: tuple[str, ...]
    parameters: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class PluginSpec:
    name: str
    version: str
    directory: Path
    description: str = ""
    config_file: str | None = None
    inject: dict[str, str] = field(default_factory=dict, compare=False)
    tools: tuple[PluginToolSpec, ...] = ()
    runtime: dict[str, Any] | None = field(default=None, compare=False)


def parse_plugin_json(path: Path) -> PluginSpec:
    """The spec of `path` (a plugin.json); PluginError with the reason."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PluginError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise PluginError(f"{path}: not a JSON object")
    for key in ("name", "version"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise PluginError(f"{path}: `{key}` is required (a string)")
    inject = data.get("inject") or {}
    if not isinstance(inject, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in inject.items()):
        raise PluginError(f"{path}: `inject` must map config paths to host keys (strings)")
    config_file = data.get("config_file")
    if inject and not config_file:
        raise PluginError(f"{path}: `inject` requires `config_file`")
    if config_file is not None and not isinstance(config_file, str):
        raise PluginError(f"{path}: `config_file` must be a string")
    tools = data.get("tools") or []
    if not isinstance(tools, list):
        raise PluginError(f"{path}: `tools` must be a list")
    runtime = data.get("runtime")
    return PluginSpec(
        name=data["name"],
        version=data["version"],
        directory=path.parent,
        description=str(data.get("description") or ""),
        config_file=config_file,
        inject=dict(inject),
        tools=tuple(_tool(entry, path, i) for i, entry in enumerate(tools)),
        runtime=runtime if isinstance(runtime, dict) else None,
    )


def _tool(entry: Any, path: Path, index: int) -> PluginToolSpec:
    where = f"{path}: tools[{index}]"
    if not isinstance(entry, dict):
        raise PluginError(f"{where}: not an object")
    name, description, command = entry.get("name"), entry.get("description"), entry.get("command")
    if not isinstance(name, str) or not name:
        raise PluginError(f"{where}: `name` is required (a string)")
    if not isinstance(description, str):
        raise PluginError(f"{where}: `description` is required (a string)")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise PluginError(f"{where}: `command` must be a non-empty list of strings")
    parameters = entry.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise PluginError(f"{where}: `parameters` must be a JSON Schema object")
    return PluginToolSpec(name, description, tuple(command), parameters)


def installed_plugins(directory: Path | None = None) -> list[PluginSpec]:
    """The plugins installed in `directory` (default: the share dir's), by name; broken ones are
    logged and left out (a session still opens)."""
    root = directory or plugins_dir()
    try:
        children = sorted(root.iterdir())
    except OSError:  # no plugins directory: the usual case
        return []
    specs = []
    for child in children:
        plugin_json = child / PLUGIN_JSON
        if child.name.startswith(".") or not plugin_json.is_file():
            continue  # an install in progress stages in a dot directory
        try:
            specs.append(parse_plugin_json(plugin_json))
        except PluginError as exc:
            log.warning("plugin skipped: %s", exc)
    return specs
