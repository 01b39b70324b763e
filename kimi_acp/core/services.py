"""Per-session helpers the turn loop drives without knowing what they are (MCP servers, …).

A feature module (e.g. `kimi_acp/mcp`) implements `TurnService` and a front end adds it to the
session's `AgentCore.services`. The core awaits `before_turn` before a turn's first step — that is
where a turn waits for servers still connecting, and where their loading events go out on the
stream — and closes every service with the session. The core never imports the features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class TurnService(Protocol):
    async def before_turn(self, send: Callable[[Any], None]) -> None:
        """Called at the start of every turn, before StepBegin; `send` puts messages on the stream."""
        ...

    async def aclose(self) -> None:
        """The session closes: release everything (processes, connections)."""
        ...
