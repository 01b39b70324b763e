"""What the core asks of hooks, without knowing how they run.

The core calls a `HookRunner` at fixed points of a session (prompt submitted, before and after a
tool, end of a turn, compaction, session start and end). The engine that runs config hooks and
Wire subscriptions lives in `kimi_acp/hooks.py`, a feature module the front ends attach; the core
never imports it. Without an engine, `NO_HOOKS` answers every point with "allow" at no cost.

Standard library only: the Wire start-up path reads `HOOK_EVENTS` before anything heavy loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .hook_events import HOOK_EVENTS as HOOK_EVENTS  # re-exported


@dataclass(frozen=True)
class HookVerdict:
    """The combined answer of every hook that ran for one event: any block wins."""

    action: Literal["allow", "block"] = "allow"
    reason: str = ""

    @property
    def blocked(self) -> bool:
        return self.action == "block"


ALLOW = HookVerdict()


class HookRunner(Protocol):
    """Runs the hooks of one session. `payload` holds the event's own fields; the runner adds
    `hook_event_name`, `session_id` and `cwd`. `target` is what matchers are tested against (a
    tool name, an error type, a compaction trigger, …)."""

    async def run(self, event: str, target: str, payload: dict[str, Any]) -> HookVerdict:
        """Run the matching hooks and wait for them; never raises but CancelledError."""
        ...

    def fire(self, event: str, target: str, payload: dict[str, Any]) -> None:
        """Run the matching hooks in the background; their verdict is not awaited (Post* events)."""
        ...

    async def settle(self, *, cancel: bool = False) -> None:
        """Wait for (or with `cancel`, stop) what `fire` started: the end of a turn or session."""
        ...


class NoHooks:
    """No hooks configured or attached: every point allows at once."""

    async def run(self, event: str, target: str, payload: dict[str, Any]) -> HookVerdict:
        return ALLOW

    def fire(self, event: str, target: str, payload: dict[str, Any]) -> None:
        return None

    async def settle(self, *, cancel: bool = False) -> None:
        return None


NO_HOOKS: HookRunner = NoHooks()
