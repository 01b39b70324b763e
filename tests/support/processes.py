"""Finding the processes a test started (by a marker in their command line) and waiting on them."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """A pid that does not exist or is a zombie (killed, not yet reaped by init) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def live_pids(marker: str) -> list[int]:
    """Live processes whose command line contains `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() not in f.read():
                    continue
        except OSError:
            continue
        if pid_alive(int(pid)):
            found.append(int(pid))
    return found


def process_alive(marker: str) -> bool:
    return bool(live_pids(marker))


def sleep_marker(base: int = 30) -> str:
    """A `sleep` duration unique to this test run, so concurrent runs never see each other's."""
    return f"{base}.{uuid.uuid4().int % 10**8:08d}"


async def wait_until(predicate: Callable[[], bool], timeout: float = 3.0, interval: float = 0.02) -> bool:
    """Poll until `predicate()` is true; returns whether it became true in time."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(interval)
    return True
