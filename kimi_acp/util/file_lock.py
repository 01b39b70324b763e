"""Exclusive, non-blocking locks on open files, shared by processes: flock on POSIX, msvcrt on Windows.

The kernel drops a lock with its process, so a crash never leaves one held. Users: the login
refresh (`auth/lock.py`) and a session's turn (`core/session_lock.py`).
"""

from __future__ import annotations

import os
import sys

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
