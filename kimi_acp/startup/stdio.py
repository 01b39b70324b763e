"""Non-blocking stdin/stdout for the protocol servers, and their lifecycle (EOF, SIGTERM)."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
from collections.abc import Callable
from typing import BinaryIO

STDIN_LINE_LIMIT = 100 * 1024 * 1024  # a single JSON-RPC line may carry large prompts or images


class StdoutWriter:
    """Writes whole lines to stdout without awaiting.

    Lines written during one pass of the event loop go out in a single `write` (flushed by a
    `call_soon` callback, so no later than the next pass): a 2,000-update replay is a handful of
    system calls, not 2,000, and a lone streamed chunk still leaves at once. When stdout is a
    regular file (output redirected), writes go straight to it: files never block.
    """

    def __init__(self, transport: asyncio.WriteTransport | None, file: BinaryIO | None = None) -> None:
        self._transport = transport
        self._file = file
        self._batch: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        if self._transport is None:
            if self._file is not None:
                try:
                    self._file.write(data)
                except OSError:
                    self._file = None
            return
        if self._batch is None:
            self._batch = [data]
            asyncio.get_running_loop().call_soon(self.flush)
        else:
            self._batch.append(data)

    def flush(self) -> None:
        batch, self._batch = self._batch, None
        if batch and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(batch))

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until buffered output reached the pipe, e.g. before exiting."""
        self.flush()
        if self._transport is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        # the transport has no "drained" event to wait on
        while self._transport.get_write_buffer_size() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)

    def close(self) -> None:
        self.flush()
        if self._transport is not None:
            self._transport.close()


async def open_stdio(limit: int = STDIN_LINE_LIMIT, *, prefix: bytes = b"") -> tuple[asyncio.StreamReader, StdoutWriter]:
    """Async stdin/stdout; `prefix` is input already read from fd 0 (see `startup/early.py`)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if prefix:
        reader.feed_data(prefix)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file (`kimi --wire < requests.jsonl`): not a pipe
        _feed_from_file(reader)
    # Write through a dup of fd 1 so nothing else (a stray print) can interleave with our framing
    # buffer, and point sys.stdout at stderr: stdout carries protocol messages only.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout = sys.stderr
    try:
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, out)
    except ValueError:  # a regular file, not a pipe
        return reader, StdoutWriter(None, out)
    return reader, StdoutWriter(transport)


_FEEDERS: set[asyncio.Task[None]] = set()


def stdin_is_regular_file() -> bool:
    try:
        return stat.S_ISREG(os.fstat(0).st_mode)
    except OSError:
        return False


def _feed_from_file(reader: asyncio.StreamReader) -> None:
    """Feed stdin to `reader` from a worker thread (regular files cannot be watched by the loop)."""

    async def feed() -> None:
        loop = asyncio.get_running_loop()
        while chunk := await loop.run_in_executor(None, os.read, 0, 65536):
            reader.feed_data(chunk)
        reader.feed_eof()

    task = asyncio.get_running_loop().create_task(feed())
    _FEEDERS.add(task)
    task.add_done_callback(_FEEDERS.discard)


def install_shutdown_signals(on_signal: Callable[[], None], *, already_requested: bool = False) -> None:
    """SIGTERM/SIGINT/SIGHUP request a clean shutdown instead of killing us mid-write.

    `already_requested`: a signal arrived during start-up (see `early.ShutdownSignals`).
    """
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, on_signal)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    if already_requested:
        loop.call_soon(on_signal)
