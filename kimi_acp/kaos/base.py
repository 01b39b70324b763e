"""The OS boundary every tool goes through, so a front end can reroute it.

`LocalKaos` touches this machine; the ACP front end supplies one that reads and writes through the
client's `fs/*` methods and runs commands in the client's terminal. Tools never call `open` or
`subprocess` themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class BinaryFileError(Exception):
    """The file is not text (NUL bytes or not decodable); tools refuse to show it."""


@dataclass(frozen=True)
class FileStat:
    is_file: bool
    is_dir: bool
    size: int
    mtime: float


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or killed) shell command produced."""

    output: str  # stdout and stderr merged, in arrival order, capped at the requested limit
    exit_code: int | None  # None when killed by a signal or timeout
    signal: str | None = None  # e.g. "SIGKILL"
    timed_out: bool = False
    truncated: bool = False  # output exceeded the limit; the tail was dropped
    terminal_id: str | None = None  # set when the command ran in a client terminal the user can see


class Kaos(Protocol):
    name: str

    async def read_text(self, path: Path) -> str:
        """Whole file as text. Raises FileNotFoundError, IsADirectoryError, BinaryFileError."""
        ...

    async def read_bytes(self, path: Path, limit: int | None = None) -> bytes:
        """Raw bytes (at most `limit`). Raises FileNotFoundError, IsADirectoryError."""
        ...

    async def write_text(self, path: Path, text: str, *, append: bool = False) -> int:
        """Write (or append) text; returns the file's size in bytes afterwards, as written."""
        ...

    async def stat(self, path: Path) -> FileStat | None:
        """None when the path does not exist."""
        ...

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        output_limit: int,
        tool_call_id: str | None = None,
    ) -> CommandResult:
        """Run `command` through the user's shell in `cwd`; stdin is closed.

        On timeout the whole process group is killed and `timed_out` is set. If the awaiting task
        is cancelled, the process group is killed before CancelledError propagates.
        """
        ...
