"""A lock file shared by every process that refreshes the same login.

Zed may run several `kimi acp` processes and a terminal may run `kimi --wire` beside them; a
refresh token may be spent only once, so refreshing happens under an exclusive lock on
`credentials/<name>.lock` (the file Kimi Code CLI locks too): the holder refreshes and writes the
new tokens, the others wait, re-read the file and find them. flock on POSIX, msvcrt on Windows.
The lock dies with its process, so a crash never leaves it held (`file_lock.py`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import AccountError
from ..util.file_lock import release, try_lock

LOCK_TIMEOUT = 30.0  # a refresh is one HTTP request with retries; more means a stuck holder


class LockTimeout(AccountError, OSError):
    """Another process held the lock for longer than the timeout."""


class RefreshLock:
    def __init__(self, path: Path, *, timeout: float = LOCK_TIMEOUT, poll: float = 0.05) -> None:
        self.path = path
        self.timeout = timeout
        self.poll = poll
        self._fd: int | None = None

    def __enter__(self) -> RefreshLock:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                try_lock(fd)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(f"another process holds {self.path}") from None
                time.sleep(self.poll)
        self._fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        fd, self._fd = self._fd, None
        release(fd)

