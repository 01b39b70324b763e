"""Memory and CPU of a process and its descendants, read from /proc (Linux only).

RSS is `VmRSS` of `/proc/<pid>/status`, summed over the process tree. CPU time is the first field
of `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on CPU), summed over every thread of the tree;
where schedstat is missing it falls back to `utime + stime` of `/proc/<pid>/stat` (clock ticks).
"""

from __future__ import annotations

import asyncio
import os
import time

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _ppid_map() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rfind(b")") + 2 :].split()
        if len(rest) > 1:
            parents[int(entry)] = int(rest[1])
    return parents


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants (alive now)."""
    parents = _ppid_map()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, ()))
    return out


def rss_bytes(pid: int, include_children: bool = True) -> int:
    """Resident set size of the process (and its descendants) in bytes; 0 if it is gone."""
    total = 0
    for p in tree(pid) if include_children else [pid]:
        try:
            with open(f"/proc/{p}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def _cpu_of(pid: int) -> float:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    total_ns = 0
    ok = True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total_ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            ok = False
            break
    if ok:
        return total_ns / 1e9
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        rest = data[data.rfind(b")") + 2 :].split()
        return (int(rest[11]) + int(rest[12])) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_seconds(pid: int, include_children: bool = True) -> float:
    """CPU time (user + system) consumed so far by the process tree, in seconds."""
    return sum(_cpu_of(p) for p in (tree(pid) if include_children else [pid]))


async def wait_idle(pid: int, quiet: float = 0.1, max_busy: float = 0.003, timeout: float = 5.0) -> float:
    """Wait until the tree used < `max_busy` s of CPU during `quiet` s; returns the time waited."""
    start = time.perf_counter()
    last = cpu_seconds(pid)
    while time.perf_counter() - start < timeout:
        await asyncio.sleep(quiet)
        now = cpu_seconds(pid)
        if now - last < max_busy:
            break
        last = now
    return time.perf_counter() - start


MIB = 1024 * 1024
