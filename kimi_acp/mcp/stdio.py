"""The stdio transport to an MCP server, with a bound on what one message may cost us.

The SDK's `stdio_client` reads a server's stdout with no limit: a line is gathered by joining
strings until its newline comes, so one 24 MiB answer cost ~157 MiB of peak memory, and a big
enough one takes every session of the process down (issue #30). This transport is the same protocol
on the SDK's public pieces (`JSONRPCMessage`, `SessionMessage`, the default environment), read our
way: bytes gathered in a list and joined once per line, and a line longer than `max_message_bytes`
(16 MiB unless `[mcp.client] max_message_mb` says otherwise) ends the connection with
`MessageTooLarge` the moment it grows past the limit. Its process group is killed at once (a server
that writes that much will not stop on its own), the call that was waiting fails with that reason,
and the server is started again on the next call (`connection.py`).

It also reports each server's pid as it is spawned, which `procs.py` needs to end the server's
whole process group. The server runs in a session of its own (its pid is its group), with the SDK's
minimal environment plus its own `env`, as with the SDK's client; on exit its stdin is closed, it
gets CLOSE_WAIT_S to exit, then its group is ended.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

from ..errors import ToolError
from . import procs
from .config import DEFAULT_MAX_MESSAGE_MB

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = DEFAULT_MAX_MESSAGE_MB << 20
READ_CHUNK = 64 * 1024
CLOSE_WAIT_S = 2.0  # the SDK's PROCESS_TERMINATION_TIMEOUT: stdin closed, then this long to exit


class MessageTooLarge(ToolError):
    """An MCP server sent a message longer than the limit: its connection ends, the call fails."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the server sent a message of more than {_size(limit)}, the most read from an MCP server "
            "at once (`[mcp.client] max_message_mb` in config.toml); the server was stopped and is "
            "started again on the next call"
        )


class LineReader:
    """Bytes in, whole lines out; a line longer than `limit` raises MessageTooLarge as soon as the
    bytes gathered for it pass the limit, never holding more than that (plus one chunk)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:end]
            if self._size + len(piece) > self.limit:
                raise MessageTooLarge(self.limit)
            line = b"".join([*self._parts, piece]) if self._parts else piece
            self._parts, self._size = [], 0
            if line.strip():
                lines.append(line)
            start = end + 1
        if start < len(chunk):
            self._size += len(chunk) - start
            if self._size > self.limit:
                raise MessageTooLarge(self.limit)
            self._parts.append(chunk[start:])
        return lines


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    errlog: TextIO,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_spawn: Callable[[int], None] = lambda _pid: None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) of SessionMessages to the server `command args`, as the SDK's
    `stdio_client` yields them; `on_spawn(pid)` is called once the process exists."""
    import anyio
    import anyio.lowlevel
    from mcp import types
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    incoming_writer, incoming = anyio.create_memory_object_stream[Any](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[Any](0)
    streams = (incoming, outgoing, incoming_writer, outgoing_reader)
    try:
        process = await anyio.open_process(
            [command, *args],
            env={**get_default_environment(), **(env or {})},
            stderr=errlog,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError:
        for stream in streams:
            await stream.aclose()
        raise
    on_spawn(process.pid)
    too_large = False

    async def read_messages() -> None:
        nonlocal too_large
        assert process.stdout is not None
        lines = LineReader(max_message_bytes)
        try:
            async with incoming_writer:
                while True:
                    try:
                        chunk = await process.stdout.receive(READ_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
                    try:
                        complete = lines.feed(chunk)
                    except MessageTooLarge:
                        too_large = True
                        procs.signal_group(process.pid, signal.SIGKILL)  # it would keep writing
                        raise
                    for line in complete:
                        try:
                            message = types.JSONRPCMessage.model_validate_json(line)
                        except Exception as exc:  # the SDK's way: the session hears of it, the rest goes on
                            log.warning("an MCP server sent a line that is not JSON-RPC: %.200r", line)
                            await incoming_writer.send(exc)
                            continue
                        await incoming_writer.send(SessionMessage(message))
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async def write_messages() -> None:
        assert process.stdin is not None
        try:
            async with outgoing_reader:
                async for item in outgoing_reader:
                    text = item.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((text + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group, process:
        group.start_soon(read_messages)
        group.start_soon(write_messages)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process, kill=too_large)
                for stream in streams:
                    await stream.aclose()


async def _stop(process: Any, *, kill: bool) -> None:
    """The MCP way: stdin closed, CLOSE_WAIT_S to exit, then its group ended; a server that sent
    too much was killed already, and is only waited for."""
    import anyio

    if process.stdin is not None:
        try:
            await process.stdin.aclose()
        except Exception:  # already closed, or the pipe broke: it is going away either way
            pass
    with anyio.move_on_after(CLOSE_WAIT_S):
        await process.wait()
        return
    if not kill:
        await procs.terminate_group(process.pid)
    procs.signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"
