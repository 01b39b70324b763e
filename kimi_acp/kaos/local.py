"""`LocalKaos`: the Kaos protocol on this machine (files via the OS, commands via the user's shell).

Writes (WriteFile, StrReplaceFile, and `AcpKaos` when the editor cannot write) replace the file
whole (`util.fs.replace_file`): a temp file beside it, fsynced, renamed over it with the old mode,
so a full disk leaves the old content intact. A symlinked target is followed and the real file
replaced. A hard-linked file is replaced under the written name only: the link breaks and the other
names keep the old content, so an approved edit inside the project never changes a file outside it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import stat as _stat
from collections.abc import Callable, Mapping
from io import BufferedReader
from pathlib import Path

from ..util.child_env import child_environment
from ..util.fs import replace_file
from ..util.regular_file import open_regular
from .base import BinaryFileError, CommandResult, CommandSandbox, FileStat, TextWindow
from .process_group import DRAIN_AFTER_KILL_S, close_transport, killpg, started, wait_exit

logger = logging.getLogger(__name__)

_SNIFF_BYTES = 8 * 1024
_READ_CHUNK = 64 * 1024
# Lines are counted (and skipped) a chunk at a time: memory stays at one chunk whatever the file.
_COUNT_CHUNK = 1024 * 1024

# After SIGTERM on timeout, how long the group gets before SIGKILL.
_TERM_GRACE_S = 0.5
# After the shell exits, how long a background child may keep the output pipe open.
_PIPE_GRACE_S = 0.2
# Upper bound for draining the pipe once everything in the group has been killed.

_POSIX_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "ksh", "mksh", "ash"})

# Commands run unattended: no pagers, no colours, no credential prompts.
NONINTERACTIVE_ENV = {
    "PAGER": "cat",  # `man`, `systemctl`, ... would otherwise wait for a key press
    "GIT_PAGER": "cat",  # `git log/diff` would start `less`
    "TERM": "dumb",  # no cursor control sequences in the captured output
    "NO_COLOR": "1",  # https://no-color.org: plain text for the model
    "GIT_TERMINAL_PROMPT": "0",  # git fails instead of asking for credentials
}


def user_shell() -> str:
    """The shell commands run with: bash (the agent reads every command as bash parses it:
    kimi_acp/permissions/shell_parse.py), else `$SHELL` if it is a POSIX-like shell, else sh."""
    candidate = os.environ.get("SHELL", "")
    if os.path.basename(candidate) == "bash" and os.access(candidate, os.X_OK):
        return candidate
    for bash in ("/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"):
        if os.access(bash, os.X_OK):
            return bash
    if candidate and os.path.basename(candidate) in _POSIX_SHELLS and os.access(candidate, os.X_OK):
        return candidate
    return "/bin/sh"


def runs_bash() -> bool:
    """Whether commands run with bash, so that the agent's reading of them is bash's."""
    return os.path.basename(user_shell()) == "bash"


def command_env(shell: str) -> dict[str, str]:
    """The environment of a command, a background task or a hook: ours without the agent's
    credentials (util/child_env.py), unattended."""
    return child_environment({**NONINTERACTIVE_ENV, "SHELL": shell})


def decode_text(data: bytes, path: Path) -> str:
    """Strict UTF-8 decode; NUL bytes early on or invalid UTF-8 mean the file is not text."""
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise BinaryFileError(f"{path} looks like a binary file (NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BinaryFileError(f"{path} is not valid UTF-8 text: {exc}") from None


def _read_file(path: Path, limit: int | None) -> bytes:
    with open_regular(path) as f:
        return f.read() if limit is None else f.read(limit)


def _read_window(path: Path, offset: int, limit: int, max_line_chars: int, max_chars: int) -> TextWindow:
    """Stream the window's lines from disk; count the others in fixed-size chunks."""
    with open_regular(path) as f:
        if b"\x00" in f.read(_SNIFF_BYTES):
            raise BinaryFileError(f"{path} looks like a binary file (NUL bytes)")
        f.seek(0)
        chunk = bytearray(_COUNT_CHUNK)
        total: int | None = None
        if offset < 0:  # the tail: count first to know where it starts
            total = _count_lines(f, chunk)
            f.seek(0)
            offset = max(1, total + offset + 1)
        skipped = _skip_lines(f, chunk, offset - 1)
        if skipped < offset - 1:  # the file ends before the window
            return TextWindow([], offset, skipped)
        lines: list[str] = []
        cut: set[int] = set()
        chars = 0
        while len(lines) < limit and chars <= max_chars:
            line = _next_line(f, chunk, max_line_chars, path)
            if line is None:
                break
            text, was_cut = line
            if was_cut:
                cut.add(len(lines))
            lines.append(text)
            chars += len(text)
        if total is None:
            total = offset - 1 + len(lines) + _count_lines(f, chunk)
        return TextWindow(lines, offset, total, frozenset(cut))


def _count_lines(f: BufferedReader, chunk: bytearray) -> int:
    """Lines from the current position to the end; a final line without "\\n" counts."""
    count = 0
    last: bytes | bytearray = b"\n"
    while n := f.readinto(chunk):
        count += chunk.count(b"\n", 0, n)
        last = chunk[n - 1 : n]
    return count + (last != b"\n")


def _skip_lines(f: BufferedReader, chunk: bytearray, n: int) -> int:
    """Move past `n` lines; returns how many there were (fewer than `n` at the end of the file)."""
    if n <= 0:
        return 0
    seen = 0
    last: bytes | bytearray = b"\n"
    while True:
        at = f.tell()
        size = f.readinto(chunk)
        if not size:
            return seen + (last != b"\n")
        found = chunk.count(b"\n", 0, size)
        if seen + found >= n:
            f.seek(at + _nth_newline(chunk, size, n - seen) + 1)
            return n
        seen += found
        last = chunk[size - 1 : size]


def _nth_newline(chunk: bytearray, size: int, n: int) -> int:
    """Index of the n-th (1-based) "\\n" in chunk[:size], found by bisecting counts (no per-line loop)."""
    low, high = 0, size - 1  # the answer is in [low, high]
    while low < high:
        mid = (low + high) // 2
        if chunk.count(b"\n", 0, mid + 1) >= n:
            high = mid
        else:
            low = mid + 1
    return low


def _next_line(f: BufferedReader, chunk: bytearray, max_chars: int, path: Path) -> tuple[str, bool] | None:
    """The next line, cut to `max_chars` (and whether it was); None at the end of the file.

    At most 4 * (max_chars + 1) bytes of it are read into memory, which always holds more than
    `max_chars` characters, so a longer line is known to be cut; the rest is skipped in chunks.
    """
    cap = 4 * (max_chars + 1)
    raw = f.readline(cap)
    if not raw:
        return None
    complete = raw.endswith(b"\n") or len(raw) < cap
    try:
        if complete:
            text = raw.decode("utf-8")
        else:  # a partial character at the cut is left out, not an error
            text = codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
    except UnicodeDecodeError as exc:
        raise BinaryFileError(f"{path} is not valid UTF-8 text: {exc}") from None
    if not complete:
        _skip_rest_of_line(f, chunk)
        return text[:max_chars], True
    text = text.removesuffix("\n")
    text = text.removesuffix("\r")
    if len(text) > max_chars:
        return text[:max_chars], True
    return text, False


def _skip_rest_of_line(f: BufferedReader, chunk: bytearray) -> None:
    """Move past the next "\\n" (or to the end of the file), a chunk at a time."""
    while True:
        at = f.tell()
        size = f.readinto(chunk)
        if not size:
            return
        end = chunk.find(b"\n", 0, size)
        if end >= 0:
            f.seek(at + end + 1)
            return


def _write_file(path: Path, data: bytes, append: bool) -> int:
    return replace_file(path, data, append=append)


async def start_shell_command(
    command: str,
    *,
    cwd: Path,
    stdin: int = asyncio.subprocess.DEVNULL,
    stderr: int = asyncio.subprocess.STDOUT,
    env: dict[str, str] | None = None,
    sandbox: CommandSandbox | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> asyncio.subprocess.Process:
    """`command` through the user's shell, stdout piped, in a process group of its own (a cancel
    mid-spawn kills the group: see `process_group.started`). Shell, hooks and background tasks.

    With `sandbox`, the shell runs inside it: the group's leader is then the sandbox's launcher
    (bubblewrap's, which takes its whole sandbox down with it), so killing the group still kills
    everything the command started. `extra_env`: variables added to the command's environment (the
    switches that keep git from running a repository's programs: permissions/git_config.py)."""
    shell = user_shell()
    argv = [shell, "-c", command]
    if sandbox is not None:
        argv = sandbox.wrap(argv, cwd)
    return await started(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env={**(env if env is not None else command_env(shell)), **(extra_env or {})},
        )
    )


def _file_stat(path: Path) -> FileStat | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileStat(
        is_file=_stat.S_ISREG(st.st_mode),
        is_dir=_stat.S_ISDIR(st.st_mode),
        size=st.st_size,
        mtime=st.st_mtime,
        mode=st.st_mode,
    )


class LocalKaos:
    """Files and processes of the machine the agent runs on.

    Files are read and written in a worker thread, never on the event loop (a slow disk, a network
    file system, an fsync hold up only the call that waits for them), and only regular files
    (`util.fs.open_regular`): a FIFO, a device or a socket is refused with `NotRegularFileError`
    before anything waits on it, so one session's ReadFile of a FIFO never freezes the others.
    """

    name = "local"
    command_environment_known = True  # commands get our environment (without the credentials)
    # Called with (tool_call_id, text) as a foreground command's output arrives, so a front end
    # can show it while the command runs (`kimi web`); None: nobody watches.
    output_listener: Callable[[str, str], None] | None = None

    async def read_bytes(self, path: Path, limit: int | None = None) -> bytes:
        return await asyncio.to_thread(_read_file, path, limit)

    async def read_text(self, path: Path) -> str:
        return decode_text(await self.read_bytes(path), path)

    async def read_lines(
        self, path: Path, offset: int, limit: int, *, max_line_chars: int, max_chars: int
    ) -> TextWindow:
        return await asyncio.to_thread(_read_window, path, offset, limit, max_line_chars, max_chars)

    async def write_text(self, path: Path, text: str, *, append: bool = False) -> int:
        return await asyncio.to_thread(_write_file, path, text.encode("utf-8"), append)

    async def stat(self, path: Path) -> FileStat | None:
        return await asyncio.to_thread(_file_stat, path)

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
        proc = await start_shell_command(command, cwd=cwd, sandbox=sandbox, extra_env=extra_env)
        logger.debug("started pid %s in %s: %r", proc.pid, cwd, command)
        sink = _OutputSink(output_limit)
        listener = self.output_listener
        if listener is not None and tool_call_id:
            sink.on_text = lambda text: listener(tool_call_id, text)
        assert proc.stdout is not None
        reader = asyncio.create_task(_drain(proc.stdout, sink))
        timed_out = False
        try:
            if not await wait_exit(proc, timeout):
                timed_out = True
                killpg(proc.pid, signal.SIGTERM)
                await wait_exit(proc, _TERM_GRACE_S)
                killpg(proc.pid, signal.SIGKILL)
                await wait_exit(proc, DRAIN_AFTER_KILL_S)
            await _finish_reading(proc, reader)
        except BaseException:  # cancelled (or worse): leave no process behind, then propagate
            killpg(proc.pid, signal.SIGKILL)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # a second cancel must not skip the re-raise
                await wait_exit(proc, DRAIN_AFTER_KILL_S)
            close_transport(proc)
            raise
        returncode = proc.returncode
        close_transport(proc)
        exit_code: int | None = returncode
        sig: str | None = None
        if returncode is not None and returncode < 0:
            exit_code = None
            sig = _signal_name(-returncode)
        if timed_out:
            exit_code = None
        return CommandResult(
            output=sink.text(),
            exit_code=exit_code,
            signal=sig,
            timed_out=timed_out,
            truncated=sink.truncated,
        )


class _OutputSink:
    """Keeps the first `limit` characters of a byte stream decoded as UTF-8 (errors replaced)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.truncated = False
        self.on_text: Callable[[str], None] | None = None  # sees each kept piece as it arrives
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._size = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        if self.truncated:
            return  # keep draining the pipe, but stop decoding and storing
        chunk = self._decoder.decode(data, final)
        room = self.limit - self._size
        if len(chunk) > room:
            chunk = chunk[:room]
            self.truncated = True
        if chunk:
            self._parts.append(chunk)
            self._size += len(chunk)
            if self.on_text is not None:
                try:
                    self.on_text(chunk)
                except Exception:  # a viewer's failure must not stop the command's reading
                    logger.exception("output listener failed")

    def text(self) -> str:
        self.feed(b"", final=True)
        return "".join(self._parts)


async def _drain(stream: asyncio.StreamReader, sink: _OutputSink) -> None:
    while True:
        data = await stream.read(_READ_CHUNK)
        if not data:
            return
        sink.feed(data)




async def _finish_reading(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """The shell has exited: read what is left; kill leftovers that keep the pipe open."""
    done, _ = await asyncio.wait({reader}, timeout=_PIPE_GRACE_S)
    if not done:
        logger.debug("pid %s exited but its pipe is still open; killing the group", proc.pid)
        killpg(proc.pid, signal.SIGKILL)
        done, _ = await asyncio.wait({reader}, timeout=DRAIN_AFTER_KILL_S)
    if not done:
        # Something outside the process group holds the pipe (e.g. it called setsid).
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        return
    if reader.exception() is not None:
        logger.warning("reading command output failed: %r", reader.exception())






def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
