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

from ... import __version__

PROTOCOL_VERSION = 1
SUPPORTED_PROTOCOL_VERSIONS = (1,)
AGENT_NAME = "kimi-acp"
AGENT_TITLE = "Kimi"

LOGIN_METHOD_ID = "login"
API_KEY_METHOD_ID = "kimi-api-key"
API_KEY_ENV = "KIMI_API_KEY"


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
    """`kimi login` in a terminal (Kimi account or API-key provider), and an API key in the environment."""
    command, args = login_command()
    description = (
        "Run `kimi login` in a terminal to sign in with your Kimi account (a browser page confirms a code), "
        "or to choose an API-key provider and model."
    )
    legacy = {"terminal-auth": {"command": command, "args": args, "label": "Kimi login", "env": {}, "type": "terminal"}}
    login: dict[str, Any] = {"id": LOGIN_METHOD_ID, "name": "Log in with your Kimi account", "description": description}
    auth = (client_capabilities or {}).get("auth") or {}
    if isinstance(auth, dict) and auth.get("terminal") is True:
        # The client re-runs the agent command it has configured (`kimi acp`) with these args.
        login.update({"type": "terminal", "args": ["login"], "env": {}})
    login["_meta"] = legacy
    api_key = {
        "id": API_KEY_METHOD_ID,
        "name": "Kimi API key",
        "description": f"Set {API_KEY_ENV} in the agent's environment (Moonshot AI platform key).",
        "type": "env_var",
        "varName": API_KEY_ENV,
        "vars": [{"name": API_KEY_ENV}],
        "link": "https://platform.moonshot.ai/console/api-keys",
    }
    return [login, api_key]


def agent_capabilities() -> dict[str, Any]:
    return {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        # Stdio, streamable HTTP and SSE servers from the client are all connected (kimi_acp/mcp).
        "mcpCapabilities": {"http": True, "sse": True},
        # additionalDirectories on new/load/resume/fork: more workspace roots for the tools.
        "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}, "delete": {}, "additionalDirectories": {}},
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
    }
