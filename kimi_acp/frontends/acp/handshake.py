"""The `initialize` answer, built from plain dicts so it can be sent before anything heavy loads.

`kimi acp` answers `initialize` from here while the ACP SDK and the agent core are still being
imported in the background; the SDK-side handler calls the same function later, so both paths
give the same answer.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from ..._version import __version__

PROTOCOL_VERSION = 1
SUPPORTED_PROTOCOL_VERSIONS = (1,)
AGENT_NAME = "kimi-acp"
AGENT_TITLE = "Kimi"

LOGIN_METHOD_ID = "login"
API_KEY_METHOD_ID = "kimi-api-key"  # no longer offered (schema 1.25 has no `env_var` type); still accepted by `authenticate`
API_KEY_ENV = "KIMI_API_KEY"
API_KEY_LINK = "https://platform.moonshot.ai/console/api-keys"


_CAPABILITY_TYPES: dict[str, type] = {"fs": dict, "terminal": bool, "_meta": dict}
_FS_TYPES: dict[str, type] = {"readTextFile": bool, "writeTextFile": bool, "_meta": dict}
# `clientInfo` (the schema's Implementation): the fields that, when present, must be strings.
_CLIENT_INFO_STRINGS = ("name", "version")


def initialize_problem(params: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) when `initialize` has a field of a type the schema does not allow;
    None when it can be answered. The early answer (entry.py) and the server (guard.py) both ask
    here, so a bad line gets the same -32602 whichever path reads it."""
    problem = protocol_version_problem(params)
    if problem is None:
        problem = _client_info_problem(params)
    return problem or capabilities_problem(params)


def protocol_version_problem(params: dict[str, Any]) -> tuple[str, str] | None:
    """`protocolVersion`: required, an integer from 0 to 65535 (the schema's uint16)."""
    if "protocolVersion" not in params:
        return "protocolVersion", "required (the ACP version the client speaks, e.g. 1)"
    version = params["protocolVersion"]
    if isinstance(version, bool) or not isinstance(version, int):
        return "protocolVersion", f"must be an integer (e.g. 1), got {_type_name(version)}"
    if not 0 <= version <= 65535:
        return "protocolVersion", f"must be between 0 and 65535, got {version}"
    return None


def _client_info_problem(params: dict[str, Any]) -> tuple[str, str] | None:
    """`clientInfo`: absent, null, or an object whose name, version and title are strings."""
    info = params.get("clientInfo")
    if info is None:
        return None
    if not isinstance(info, dict):
        return "clientInfo", f"must be an object with name and version, got {_type_name(info)}"
    for key in _CLIENT_INFO_STRINGS:
        if key in info and not isinstance(info[key], str):
            return f"clientInfo.{key}", f"must be a string, got {_type_name(info[key])}"
    if info.get("title") is not None and not isinstance(info["title"], str):
        return "clientInfo.title", f"must be a string or null, got {_type_name(info['title'])}"
    return None


def capabilities_problem(params: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) when `initialize`'s client capabilities have a type the schema does
    not allow where we read them; None when they are usable (or absent)."""
    caps = params.get("clientCapabilities")
    if caps is None:
        return None
    if not isinstance(caps, dict):
        return "clientCapabilities", f"must be an object, got {_type_name(caps)}"
    for key, kind in _CAPABILITY_TYPES.items():
        if key in caps and not isinstance(caps[key], kind):
            return f"clientCapabilities.{key}", f"must be {_article(kind)}, got {_type_name(caps[key])}"
    fs = caps.get("fs")
    for key, kind in _FS_TYPES.items():
        if isinstance(fs, dict) and key in fs and not isinstance(fs[key], kind):
            return f"clientCapabilities.fs.{key}", f"must be {_article(kind)}, got {_type_name(fs[key])}"
    return None


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array", dict: "an object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _article(kind: type) -> str:
    return "a boolean" if kind is bool else "an object"


def negotiate_version(requested: Any) -> int:
    """The highest version we support that is not above the client's (1 for anything invalid)."""
    if not isinstance(requested, int) or isinstance(requested, bool):
        return PROTOCOL_VERSION
    candidates = [v for v in SUPPORTED_PROTOCOL_VERSIONS if v <= requested]
    return max(candidates) if candidates else PROTOCOL_VERSION


def login_command() -> tuple[str, list[str]]:
    """How a terminal runs `kimi login` for this installation (for the legacy terminal-auth form)."""
    entry = sys.argv[0] if sys.argv else ""
    if entry and os.path.basename(entry) in ("kimi", "kimi-acp") and os.access(entry, os.X_OK):
        return os.path.abspath(entry), ["login"]
    found = shutil.which("kimi")
    if found:
        return found, ["login"]
    return sys.executable, ["-m", "kimi_acp", "login"]


def auth_methods(client_capabilities: dict[str, Any] | None) -> list[dict[str, Any]]:
    """`kimi login` in a terminal (Kimi account or API-key provider), in the schema's shapes only.

    Schema 1.25 knows `terminal` and the default agent method; an `env_var` method would make a
    strict client drop the list. So the API key in the environment is said in the login method's
    description and `_meta` instead."""
    command, args = login_command()
    description = (
        "Run `kimi login` in a terminal to sign in with your Kimi account (a browser page confirms a code), "
        f"or to choose an API-key provider and model. Setting {API_KEY_ENV} in the agent's environment "
        "(a Moonshot AI platform key) also signs in."
    )
    meta = {
        "terminal-auth": {"command": command, "args": args, "label": "Kimi login", "env": {}, "type": "terminal"},
        "env-var-auth": {"vars": [{"name": API_KEY_ENV}], "link": API_KEY_LINK},
    }
    login: dict[str, Any] = {"id": LOGIN_METHOD_ID, "name": "Log in with your Kimi account", "description": description}
    auth = (client_capabilities or {}).get("auth") or {}
    if isinstance(auth, dict) and auth.get("terminal") is True:
        # The client re-runs the agent command it has configured (`kimi acp`) with these args.
        login.update({"type": "terminal", "args": ["login"], "env": {}})
    login["_meta"] = meta
    return [login]


def agent_capabilities() -> dict[str, Any]:
    return {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        # Stdio, streamable HTTP and SSE servers from the client are all connected (kimi_acp/mcp).
        "mcpCapabilities": {"http": True, "sse": True},
        # additionalDirectories on new/load/resume/fork: more workspace roots for the tools.
        "sessionCapabilities": {
            "list": {}, "resume": {}, "close": {}, "fork": {}, "delete": {}, "additionalDirectories": {},
            # session/set_title, session/status, session/archive + unarchive and list's filter (session_admin.py)
            "title": {}, "status": {}, "archive": {},
            # the IDE's instructions on new/load/resume/fork: `append`, and `override` (frontends/acp/system_prompt.py)
            "systemPrompt": {"mode": {"override": {}}},
        },
        # `logout` forgets the Kimi account login (routed by guard.py; the SDK has no route for it).
        "auth": {"logout": {}},
    }


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    capabilities = params.get("clientCapabilities")
    return {
        "protocolVersion": negotiate_version(params.get("protocolVersion")),
        "agentCapabilities": agent_capabilities(),
        "authMethods": auth_methods(capabilities if isinstance(capabilities, dict) else None),
        "agentInfo": {"name": AGENT_NAME, "title": AGENT_TITLE, "version": __version__},
        # `_session/steering` (frontends/acp/steering.py), advertised as claude-agent-acp and codex-acp do
        "_meta": {"steering": {"supported": True}},
    }
