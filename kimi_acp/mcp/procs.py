"""Stdio server processes: knowing which are ours, and ending each one's whole process group.

A stdio server runs in a session of its own (so its pid is its process group), and our transport
(`stdio.py`) reports its pid as it is spawned. On exit the transport closes its stdin, waits, then
kills the group. That leaves two holes we close here: a server that exits on EOF while its children
live on, and a process exit that never runs the transport's clean-up. So we kill what is left of
the group once the transport is closed, and kill every live group at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import signal
import time

log = logging.getLogger(__name__)

_live: set[int] = set()  # process groups of servers that may still be running, process-wide
_atexit_registered = False


def register(pgid: int) -> None:
    global _atexit_registered
    _live.add(pgid)
    if not _atexit_registered:
        atexit.register(kill_all)
        _atexit_registered = True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_running(pid: int) -> bool:
    """A live process (a zombie, dead but not yet reaped, does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when nothing is left of it."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def terminate_group(pgid: int, grace: float = 1.0) -> None:
    """SIGTERM, a short wait, then SIGKILL: for a server that hangs (no clean exit to wait for)."""
    if not signal_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return
        await asyncio.sleep(0.02)
    signal_group(pgid, signal.SIGKILL)


def release(pgid: int) -> None:
    """The transport is closed: whatever is left of the group (children of the server) dies now."""
    if signal_group(pgid, signal.SIGKILL):
        log.info("killed leftover processes of MCP server group %d", pgid)
    _live.discard(pgid)


def kill_all() -> None:
    """At interpreter exit: no server outlives us. SIGTERM, up to 0.3 s, then SIGKILL."""
    groups = [g for g in _live if signal_group(g, signal.SIGTERM)]
    deadline = time.monotonic() + 0.3
    while groups and time.monotonic() < deadline:
        time.sleep(0.02)
        groups = [g for g in groups if group_alive(g)]
    for g in groups:
        signal_group(g, signal.SIGKILL)
    _live.clear()
