"""The OS boundary of the file tools and Shell, so a front end can reroute them.

A `Kaos` reads a text file (whole, or a window of lines), reads bytes, writes or appends text,
stats a path and runs one foreground command through the user's shell, confined by a
`CommandSandbox` when the session's sandbox is on. `LocalKaos` (kaos/local.py) does it on this
machine: regular files only, off the event loop, writes replacing the file whole
(`util.fs.replace_file`), commands in a process group of their own. The ACP front end's `AcpKaos`
reads and writes through the client's `fs/*` methods and runs commands in the client's terminal
where the client offers them, and hands the rest to `LocalKaos`.

Not through it, on purpose: Glob and Grep search the disk itself (Grep runs ripgrep, or reads the
files in its fallback), background commands run locally in the session's `TaskTable`
(kaos/tasks.py), and the agent's own records (sessions, logs, tokens) are written by the modules
that keep them, through util/fs.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import ToolError


class BinaryFileError(ToolError):
    """The file is not text (NUL bytes or not decodable); tools refuse to show it."""


@dataclass(frozen=True)
class FileStat:
    is_file: bool  # a regular file (what `stat` says after following symlinks)
    is_dir: bool
    size: int
    mtime: float
    mode: int = 0  # st_mode: what a path that is neither is (util.fs.check_regular says it)


@dataclass(frozen=True)
class TextWindow:
    """Some consecutive lines of a text file: what `Kaos.read_lines` returns instead of the whole file.

    Lines are counted like `cat -n` (only "\\n" ends a line; a final unterminated line counts) and come
    without their line ending (and without a "\\r" before it). A line longer than the caller's
    `max_line_chars` is cut to that length and its index is in `cut`.
    """

    lines: list[str]
    start: int  # 1-based number of lines[0]; for an empty window, the line it would have started at
    total: int | None  # lines in the whole file; None when the source cannot tell without reading it all
    cut: frozenset[int] = frozenset()  # indexes into `lines` of the lines that were cut


def window_of_text(text: str, offset: int, limit: int, *, max_line_chars: int, max_chars: int) -> TextWindow:
    """`read_lines` over text already in memory (same counting and limits)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    total = len(lines)
    start = offset if offset > 0 else max(1, total + offset + 1)
    out: list[str] = []
    cut: set[int] = set()
    chars = 0
    for line in lines[start - 1 : start - 1 + limit]:
        if chars > max_chars:
            break
        line = line.removesuffix("\r")
        if len(line) > max_line_chars:
            line = line[:max_line_chars]
            cut.add(len(out))
        out.append(line)
        chars += len(line)
    return TextWindow(out, start, total, frozenset(cut))


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or killed) shell command produced."""

    output: str  # stdout and stderr merged, in arrival order, capped at the requested limit
    exit_code: int | None  # None when killed by a signal or timeout
    signal: str | None = None  # e.g. "SIGKILL"
    timed_out: bool = False
    truncated: bool = False  # output exceeded the limit; the tail was dropped
    terminal_id: str | None = None  # set when the command ran in a client terminal the user can see


class CommandSandbox(Protocol):
    """What confines a command: kimi_acp/sandbox implements it (bubblewrap, Landlock, Seatbelt).

    `wrap` returns the argv that runs `argv` confined with `cwd` as its working directory. It needs
    nothing from the environment (what the command must see, such as its TMPDIR, is in the argv), so
    a client terminal on the same machine runs the wrapped argv just as `LocalKaos` does."""

    @property
    def name(self) -> str:
        """"bubblewrap", "landlock", "seatbelt": said in notes and on cards."""
        ...

    def wrap(self, argv: Sequence[str], cwd: Path) -> list[str]: ...


class Kaos(Protocol):
    """What a tool reads, writes and runs through (see the module's docstring for what does not)."""

    name: str

    @property
    def command_environment_known(self) -> bool:
        """Whether a command gets the agent's environment (without its credentials); False when it
        runs in the IDE's terminal, with the IDE's (permissions/shell_expand.py then reads none of it)."""
        ...

    async def read_text(self, path: Path) -> str:
        """Whole file as text. Raises FileNotFoundError, IsADirectoryError, BinaryFileError."""
        ...

    async def read_lines(
        self, path: Path, offset: int, limit: int, *, max_line_chars: int, max_chars: int
    ) -> TextWindow:
        """At most `limit` lines from line `offset` (1-based; negative: the last -offset lines).

        Reads only the window (plus a count of the other lines where the source can count them
        cheaply), so a huge file or line costs no more memory than the window. Lines are cut to
        `max_line_chars`; the window stops after the line that brings its characters past
        `max_chars`. An offset past the end gives an empty window. Raises like `read_text`.
        """
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
        sandbox: CommandSandbox | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run `command` through the user's shell in `cwd`; stdin is closed; inside `sandbox` if given;
        with `extra_env` added to its environment.

        On timeout the whole process group is killed and `timed_out` is set. If the awaiting task
        is cancelled, the process group is killed before CancelledError propagates.
        """
        ...
