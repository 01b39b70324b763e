"""One turn at a time per session, across processes.

Zed, a second IDE window, `kimi web` and `kimi --wire` may each have the same session open. Two
turns running at once would interleave their appends to `context.jsonl` and `wire.jsonl`, and
each would build on a history that lacks the other's turn. So a turn holds an exclusive lock on
the session's `turn.lock` from its start to its end; a turn asked for while another holds it is
refused with `SessionBusy`, naming the holder's pid. The lock is per open file, so it also
refuses a second core of the same process. Kimi Code CLI ignores the file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..util.file_lock import release, try_lock
from .errors import SessionBusy, SessionDeleted

LOCK_FILE = "turn.lock"


class TurnLock:
    def __init__(self, session_dir: Path) -> None:
        self.path = session_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock for a turn, or raise `SessionBusy` at once (`SessionDeleted`: the folder
        is gone, and is not re-created: a deleted session stays deleted)."""
        if self._fd is not None:
            return
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        except FileNotFoundError:
            raise SessionDeleted() from None
        try:
            try_lock(fd)
        except OSError:
            holder = _read_pid(fd)
            os.close(fd)
            raise SessionBusy(holder) from None
        with contextlib.suppress(OSError):  # only for the message another process may show
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        release(fd)


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
