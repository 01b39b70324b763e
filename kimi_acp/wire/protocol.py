"""Wire protocol constants and the `initialize` answer, importable before anything heavy."""

from __future__ import annotations

from typing import Any

WIRE_PROTOCOL_VERSION = "1.10"
WIRE_PROTOCOL_LEGACY_VERSION = "1.1"
SERVER_NAME = "kimi-acp"


def initialize_result() -> dict[str, Any]:
    """The `initialize` result without external tools (the early answer, and the server's base)."""
    from .. import __version__
    from ..core.slash import COMMANDS

    return {
        "protocol_version": WIRE_PROTOCOL_VERSION,
        "server": {"name": SERVER_NAME, "version": __version__},
        "slash_commands": [{"name": c.name, "description": c.description, "aliases": list(c.aliases)} for c in COMMANDS],
        "capabilities": {"supports_question": False},
    }
