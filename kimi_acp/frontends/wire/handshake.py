"""The Wire `initialize` answer, importable before anything heavy (the early answer uses it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...wire.protocol import SERVER_NAME, WIRE_PROTOCOL_VERSION


def initialize_result(commands: Sequence[Any] | None = None) -> dict[str, Any]:
    """The `initialize` result without external tools (the early answer, and the server's base).

    `commands` is the session's slash command list (`core.slash.commands()`); the built-ins when
    not given (the early answer, sent only when no skill can exist, see `main.py`)."""
    from ..._version import __version__
    from ...core.hook_events import HOOK_EVENTS
    from ...core.slash import wire_entries
    from ...core.slash_commands import BUILTIN_COMMANDS

    return {
        "protocol_version": WIRE_PROTOCOL_VERSION,
        "server": {"name": SERVER_NAME, "version": __version__},
        "slash_commands": wire_entries(BUILTIN_COMMANDS if commands is None else commands),
        "capabilities": {"supports_question": True},  # AskUserQuestion, for clients that declare it
        # Counts of [[hooks]] and subscriptions: the server fills them in (see main.py's early answer).
        "hooks": {"supported_events": list(HOOK_EVENTS), "configured": {}},
    }
