"""Exclusive, non-blocking locks on open files, shared by processes: flock on POSIX, msvcrt on Windows.

The kernel drops a lock with its process, so a crash never leaves one held. Users: the login
refresh (`auth/lock.py`), a session's turn (`core/session_lock.py`), and `wait_lock` around
each read-modify-write of a file every kimi process edits (`mcp.json`, `kimi.json`): two
processes take turns, so neither writes back a copy that lacks the other's change.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def try_lock(fd: int) -> None:
        """Lock `fd` or raise OSError at once when another holder has it."""
        if os.fstat(fd).st_size == 0:
            os.write(fd, b"\0")
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def try_lock(fd: int) -> None:
        """Lock `fd` or raise OSError at once when another holder has it."""
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def release(fd: int | None) -> None:
    """Unlock and close `fd` (None: nothing held)."""
    if fd is None:
        return
    try:
        unlock(fd)
    finally:
        os.close(fd)


WAIT_S = 10.0  # a read-modify-write takes milliseconds; longer means a stuck holder


def wait_lock(path: Path, *, timeout: float = WAIT_S, poll: float = 0.01) -> int:
    """Open (create, 0600) and lock `path`, waiting for other holders; the fd, for `release`.
    TimeoutError (an OSError) when it is still held after `timeout` seconds."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            try_lock(fd)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise TimeoutError(f"another kimi process holds {path}") from None
            time.sleep(poll)
