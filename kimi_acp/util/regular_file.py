"""Reading only regular files: a FIFO, a device or a socket is refused before anything waits on it.

ReadFile of a FIFO used to block the event loop, and with it every session of the process (issue
#30): a FIFO with no writer waits forever, `/dev/zero` never ends, and both report size 0. Every
read of a file whose path someone else chose goes through `open_regular`; writes refuse the same
(`fs.replace_file`). Light (the standard library and `errors.py`): the early Wire answer reads
SKILL.md files through it.
"""

from __future__ import annotations

import errno
import os
import stat
from io import BufferedReader
from pathlib import Path

from ..errors import ToolError

# Opening never waits: a FIFO with no writer, a terminal, a device opened non-blocking return at
# once (and then are refused); on a regular file O_NONBLOCK changes nothing.
_OPEN_READ_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a file of this `st_mode` is when it is not a regular file ("a FIFO (named pipe)", …);
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


class NotRegularFileError(ToolError, OSError):
    """A FIFO, a device or a socket where a file's content was to be read or written: reading one
    can wait forever (a FIFO without a writer) or never end (`/dev/zero`), so it is refused."""

    def __init__(self, path: str | Path, mode: int) -> None:
        kind = special_kind(mode)
        super().__init__(
            f"`{path}` is {kind}, not a regular file: only regular files are read or written as files "
            "(reading this one could wait forever or never end)."
        )


def check_regular(path: str | Path, mode: int) -> None:
    """Raise IsADirectoryError for a directory, NotRegularFileError for anything else but a regular file."""
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, mode)


def open_regular(path: str | Path) -> BufferedReader:
    """Open a regular file for reading (binary), never blocking on anything else.

    Every read of a file whose path someone else chose (a tool's argument, a repository's
    AGENTS.md or SKILL.md) goes through here: the path is looked at first, so a device is never
    even opened (opening some has effects), then opened non-blocking and looked at again through
    the descriptor, so a file swapped for a FIFO in between is refused too."""
    check_regular(path, os.stat(path).st_mode)
    fd = os.open(path, _OPEN_READ_FLAGS)
    try:
        check_regular(path, os.fstat(fd).st_mode)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
