"""Learning the pid of each stdio MCP server the SDK spawns.

The SDK's `stdio_client` starts a server in a session of its own but does not say its pid, which
kimi-acp needs to kill what is left of the server's process group (mcp/procs.py). The only place
to learn it is the SDK's private spawn function, `mcp.client.stdio._create_platform_compatible_process`,
wrapped here (mcp 1.24–1.30 checked). Elsewhere, without that function, or with
`KIMI_PLAIN_STARTUP`, nothing is wrapped and the SDK's own clean-up is all there is (a server's
children may outlive it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import MCP_SDK, applies, fell_back, installed_version

TRICK = "mcp-stdio-pids"
PRIVATE_NAME = "_create_platform_compatible_process"
_MARK = "_kimi_acp_pid_hook"


def report_spawned_pids(report: Callable[[int], None]) -> bool:
    """Call `report(pid)` for every stdio server the SDK spawns from now on (idempotent: the first
    `report` stays); False when that cannot be known here."""
    if not applies(TRICK, (MCP_SDK, installed_version("mcp", "mcp"))):
        return False
    import mcp.client.stdio as stdio_module

    original: Any = getattr(stdio_module, PRIVATE_NAME, None)
    if original is None:
        fell_back(TRICK, AttributeError(f"mcp.client.stdio has no {PRIVATE_NAME}"))
        return False
    if getattr(original, _MARK, False):
        return True

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        report(process.pid)
        return process

    setattr(spawn, _MARK, True)
    setattr(stdio_module, PRIVATE_NAME, spawn)
    return True
