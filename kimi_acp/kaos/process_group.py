"""Commands in a process group of their own: start one safely, wait for it, kill it whole.

Shared by `LocalKaos` (the Shell tool), background tasks (kaos/tasks.py), the hook engine and
plugin tools: each starts its command with `start_new_session=True`, so killing the group also
kills whatever the command started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable

from .._compat.asyncio_process import close_pipes

DRAIN_AFTER_KILL_S = 1.0


async def started(spawning: Awaitable[asyncio.subprocess.Process]) -> asyncio.subprocess.Process:
    """Await a process being spawned in its own group. A cancel that arrives mid-spawn would let
    asyncio kill only the shell, leaving what it already started running; instead the spawn is
    awaited to its end and the whole group killed before the cancel goes on."""
    spawn = asyncio.ensure_future(spawning)
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            proc = await asyncio.wait_for(spawn, DRAIN_AFTER_KILL_S)
            killpg(proc.pid, signal.SIGKILL)
            await wait_exit(proc, DRAIN_AFTER_KILL_S)
            close_transport(proc)
        raise


async def wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait until the shell itself exited; True if it did within `timeout`.

    `Process.wait()` also waits for the pipes to close, which a background child can hold open
    forever, so poll the return code (set by the child watcher) instead.
    """
    deadline = time.monotonic() + timeout
    delay = 0.005
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
    return True


def killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def close_transport(proc: asyncio.subprocess.Process) -> None:
    """Close the pipes now (a killed group may leave them half-open); see _compat/asyncio_process.py."""
    close_pipes(proc)
