"""One MCP server of one session: connect (bounded), list tools, call them, notice death, close.

The SDK's transports and `ClientSession` are anyio context managers that must be entered and left
by the same task, so each connection attempt ("generation") runs in a runner task of its own that
holds them open until told to stop or until the transport ends. Calls come from tool tasks and
race the generation's end, so a call never waits on a dead server. A server that was connected and
dies is reconnected once, on the next call; a call already sent is never replayed (it may have
had effects), unless the connection was refused before the request could reach the server.

A call we stop waiting for (our tool timeout, the turn cancelled, the session closed) is cancelled
on the server too: it gets one `notifications/cancelled` with the request's id, which the SDK does
not send by itself. The id is seen on its way out (`_Outbox`), which also drops any further
`notifications/cancelled` for an id already cancelled, should a newer SDK start sending its own.

The `mcp` SDK is imported here, inside functions only.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..errors import ToolError
from ..util.secrets import register, register_named
from . import procs
from .config import McpServerConfig, RemoteServerConfig, StdioServerConfig, redact
from .status import ServerState, ServerStatus
from .stdio import DEFAULT_MAX_MESSAGE_BYTES, stdio_transport

log = logging.getLogger(__name__)

CLOSE_GRACE_S = 5.0  # a clean transport shutdown (stdio: EOF, wait, SIGTERM, SIGKILL) fits in this
STDERR_TAIL_LINES = 20
STDERR_LOG_LINES = 200  # per generation, so a chatty server cannot flood kimi.log
STDERR_DRAIN_S = 0.5  # how long a generation's end waits for the rest of a stdio server's stderr
_CONNECTION_CLOSED = -32000  # mcp.types.CONNECTION_CLOSED
CANCEL_SEND_S = 2.0  # a `notifications/cancelled` not written within this is given up on


class McpCallError(ToolError):
    """A call that could not be made or did not finish; the message is for the model (redacted)."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class _Lost(Exception):
    def __init__(self, reason: str, undelivered: bool) -> None:
        super().__init__(reason)
        self.undelivered = undelivered


@dataclass
class _Generation:
    """One connection attempt and, if it succeeds, its life until the transport ends."""

    ready: asyncio.Future[None]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None
    session: Any = None
    error: BaseException | None = None
    pids: list[int] = field(default_factory=list)
    connected: bool = False
    outbox: _Outbox | None = None


@dataclass(eq=False)
class _Call:
    """One `tools/call` in flight: the JSON-RPC id it went out with (set by `_Outbox`)."""

    task: asyncio.Task[Any] | None = None
    request_id: Any = None


_CURRENT_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("mcp_call", default=None)


class _Outbox:
    """The session's write stream, watched on the way out: the id of each call's `tools/call`
    request (the SDK keeps it to itself), and at most one `notifications/cancelled` per id."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.cancelled: set[Any] = set()

    async def send(self, item: Any) -> None:
        root = getattr(getattr(item, "message", None), "root", None)
        method = getattr(root, "method", None)
        if method == "tools/call" and root is not None and hasattr(root, "id"):
            call = _CURRENT_CALL.get()
            if call is not None and call.request_id is None:
                call.request_id = root.id
        elif method == "notifications/cancelled":
            request_id = (getattr(root, "params", None) or {}).get("requestId")
            if request_id in self.cancelled:
                return
            self.cancelled.add(request_id)
        await self._inner.send(item)

    async def __aenter__(self) -> _Outbox:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class McpConnection:
    """The client side of one configured server. `state` and `tools` are what the status shows."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        connect_timeout: float,
        call_timeout: float = 60.0,
        cwd: Path | None = None,
        on_change: Callable[[McpConnection], None] = lambda _c: None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.config = config
        self.name = config.name
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.max_message_bytes = max_message_bytes  # one message from a stdio server (stdio.py)
        self.cwd = cwd
        self.on_change = on_change
        self.state: ServerState = "pending"
        self.error: str | None = None
        self.tools: tuple[RemoteTool, ...] = ()
        self.ever_connected = False
        self._gen: _Generation | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._may_reconnect = False
        self._closed = False
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._background: set[asyncio.Task[None]] = set()
        self._calls: set[_Call] = set()  # in flight
        self._cancelling: set[asyncio.Task[None]] = set()  # `notifications/cancelled` being sent
        self.auth_override: Any = None  # an httpx.Auth for a remote server (`kimi mcp auth`)
        _register_credentials(config)

    # ------------------------------------------------------------------ status

    def status(self, tool_names: tuple[str, ...] = ()) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            status=self.state,
            tools=tool_names,
            error=self.error,
            transport=self.config.transport,
            origin=self.config.origin,
        )

    def _set(self, state: ServerState, error: str | None = None) -> None:
        self.state = state
        self.error = error
        try:
            self.on_change(self)
        except Exception:
            log.exception("MCP status callback failed")

    # ------------------------------------------------------------------ connecting

    def start(self) -> asyncio.Task[None]:
        """Begin connecting now (state `connecting` at once) unless an attempt is under way."""
        if self._connecting is None or self._connecting.done():
            self._set("connecting")
            self._connecting = asyncio.create_task(self._connect_once(), name=f"mcp-connect-{self.name}")
        return self._connecting

    async def connect(self) -> None:
        """Connect (or wait for the attempt in progress). Never raises: failures become `state`."""
        if self._closed:
            return
        await asyncio.shield(self.start())

    async def _connect_once(self) -> None:
        loop = asyncio.get_running_loop()
        gen = _Generation(ready=loop.create_future())
        gen.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "not retrieved"
        self._gen = gen
        gen.runner = asyncio.create_task(self._run(gen), name=f"mcp-{self.name}")
        waiter = asyncio.ensure_future(gen.ready)
        try:
            done, _ = await asyncio.wait({waiter}, timeout=self.connect_timeout)
        except asyncio.CancelledError:
            await self._end(gen, kill=True)
            raise
        if waiter in done and waiter.exception() is None:
            gen.connected = True
            self.ever_connected = True
            log.info("MCP server %r connected (%d tools)", self.name, len(self.tools))
            self._set("connected")
            return
        if waiter in done:
            reason = self._describe_error(waiter.exception(), starting=True)
        else:
            waiter.cancel()
            reason = f"no answer within {self.connect_timeout:g} s (connect timeout)"
        await self._end(gen, kill=True)
        if self._closed:
            return
        log.warning("MCP server %r failed to start: %s", self.name, reason)
        self._set("failed", reason)

    async def _run(self, gen: _Generation) -> None:
        """The runner: owns the transport and the session for one generation."""
        import anyio

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open_transport(stack, gen)
                forward_send, forward_receive = anyio.create_memory_object_stream[Any](0)
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                group.start_soon(self._forward, gen, read, forward_send)
                gen.outbox = _Outbox(write)
                session = await stack.enter_async_context(self._client_session(forward_receive, gen.outbox))
                await session.initialize()
                tools = await _list_tools(session)
                if gen.ready.done():  # the attempt timed out meanwhile and is being ended
                    return
                self.tools = tools
                gen.session = session
                gen.ready.set_result(None)
                await gen.wake.wait()
        except BaseException as exc:  # a runner ends with its reason, whatever it is
            gen.error = exc
            if not gen.ready.done():
                gen.ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
        finally:
            gen.session = None
            for pid in gen.pids:
                procs.release(pid)
            gen.ended.set()
            if gen.connected and not gen.stop.is_set() and not self._closed:
                self._lost(gen)

    async def _forward(self, gen: _Generation, read: Any, out: Any) -> None:
        """Pass the transport's messages on; its end is how a dead server is noticed."""
        import anyio

        try:
            async with out:
                async for item in read:
                    await out.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            gen.wake.set()

    def _lost(self, gen: _Generation) -> None:
        reason = "the server closed the connection"
        if gen.error is not None and not isinstance(gen.error, asyncio.CancelledError):
            reason = self._describe_error(gen.error)
        elif isinstance(self.config, StdioServerConfig):
            reason = "the server process exited"
            tail = self._stderr_tail()
            if tail:
                reason += f"; its last output: {tail}"
        self._may_reconnect = True
        log.warning("MCP server %r lost: %s (will reconnect once on the next call)", self.name, reason)
        self._set("failed", reason)

    async def _open_transport(self, stack: contextlib.AsyncExitStack, gen: _Generation) -> tuple[Any, Any]:
        cfg = self.config
        if isinstance(cfg, StdioServerConfig):
            errlog = await stack.enter_async_context(_StderrPipe(self))
            streams = await stack.enter_async_context(
                stdio_transport(
                    cfg.command,
                    list(cfg.args),
                    env=dict(cfg.env),
                    cwd=cfg.cwd or (str(self.cwd) if self.cwd else None),
                    errlog=errlog.writer,
                    max_message_bytes=self.max_message_bytes,
                    on_spawn=gen.pids.append,
                )
            )
            for pid in gen.pids:
                procs.register(pid)
            errlog.close_writer()  # the child has its copy; ours would keep the pipe open forever
            return streams[0], streams[1]
        assert isinstance(cfg, RemoteServerConfig)
        auth = self._remote_auth(cfg)
        import httpx

        read_timeout = max(300.0, self.call_timeout + 10.0)
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            streams = await stack.enter_async_context(
                sse_client(
                    cfg.url,
                    headers=dict(cfg.headers),
                    timeout=self.connect_timeout,
                    sse_read_timeout=read_timeout,
                    auth=auth,
                )
            )
            return streams[0], streams[1]
        from mcp.client.streamable_http import streamable_http_client

        client = await stack.enter_async_context(
            httpx.AsyncClient(
                headers=dict(cfg.headers),
                timeout=httpx.Timeout(self.connect_timeout, read=read_timeout),
                follow_redirects=True,
                auth=auth,
            )
        )
        http_streams = await stack.enter_async_context(streamable_http_client(cfg.url, http_client=client))
        return http_streams[0], http_streams[1]

    def _remote_auth(self, cfg: RemoteServerConfig) -> Any:
        """`auth: "oauth"`: the stored authorization (`mcp/oauth.py`); `kimi mcp auth` makes one.
        `self.auth_override` (what `kimi mcp auth` is authorizing with) comes first."""
        if self.auth_override is not None:
            return self.auth_override
        if not cfg.auth:
            return None
        if cfg.auth != "oauth":
            raise McpCallError(f"`auth: {cfg.auth}` is not supported: use \"oauth\", or put a token in `headers`")
        from .oauth import server_auth

        return server_auth(cfg.name, cfg.url)

    def _client_session(self, read: Any, write: Any) -> Any:
        from mcp import ClientSession, types
        from pydantic import FileUrl

        from .._version import __version__

        async def list_roots(context: Any) -> Any:
            """The session's work dir is the one root we offer (filesystem servers scope to it)."""
            if not self.cwd:
                return types.ListRootsResult(roots=[])
            root = Path(self.cwd).resolve()
            return types.ListRootsResult(roots=[types.Root(uri=FileUrl(root.as_uri()), name=root.name)])

        async def on_message(message: Any) -> None:
            root = getattr(message, "root", None)
            if isinstance(root, types.ToolListChangedNotification):
                task = asyncio.get_running_loop().create_task(self._refresh_tools())
                self._background.add(task)
                task.add_done_callback(self._background.discard)

        return ClientSession(
            read,
            write,
            list_roots_callback=list_roots,
            message_handler=on_message,
            client_info=types.Implementation(name="kimi-acp", version=__version__),
        )

    async def _refresh_tools(self) -> None:
        gen = self._gen
        if gen is None or gen.session is None:
            return
        try:
            self.tools = await asyncio.wait_for(_list_tools(gen.session), self.connect_timeout)
        except Exception as exc:
            log.warning(
                "MCP server %r: refreshing its tools failed: %s", self.name, self._describe_error(exc)
            )
            return
        log.info("MCP server %r changed its tools (%d now)", self.name, len(self.tools))
        self._set(self.state, self.error)

    # ------------------------------------------------------------------ calling

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> Any:
        """The server's `CallToolResult`; raises McpCallError (redacted) for anything else."""
        timeout = self.call_timeout if timeout is None else timeout
        for attempt in range(2):
            session, gen = await self._usable()
            try:
                return await self._request(gen, session, tool, arguments, timeout)
            except _Lost as lost:
                if attempt == 0 and lost.undelivered and self._may_reconnect:
                    continue
                raise McpCallError(
                    f"lost the connection to MCP server `{self.name}` during the call: {lost}"
                ) from None
        raise AssertionError("unreachable")

    async def _usable(self) -> tuple[Any, _Generation]:
        if self._closed:
            raise McpCallError(f"MCP server `{self.name}` is closed")
        if self._connecting is not None and not self._connecting.done():
            await asyncio.shield(self._connecting)
        gen = self._gen
        if gen is not None and gen.session is not None and not gen.ended.is_set():
            if self._process_alive(gen):
                return gen.session, gen
            # The process is gone but its end is not processed yet: let the runner notice.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(gen.ended.wait(), 2.0)
        if self._may_reconnect:
            self._may_reconnect = False
            log.info("MCP server %r: reconnecting", self.name)
            await self.connect()
            gen = self._gen
            if self.state == "connected" and gen is not None and gen.session is not None:
                return gen.session, gen
        raise McpCallError(f"MCP server `{self.name}` is not connected: {self.error or self.state}")

    def _process_alive(self, gen: _Generation) -> bool:
        return all(procs.pid_running(pid) for pid in gen.pids)

    async def _request(
        self, gen: _Generation, session: Any, tool: str, arguments: dict[str, Any], timeout: float
    ) -> Any:
        record = _Call()

        async def send() -> Any:
            _CURRENT_CALL.set(record)  # this task's own context: `_Outbox` notes the id here
            return await session.call_tool(tool, arguments)

        call = record.task = asyncio.ensure_future(send())
        ended = asyncio.ensure_future(gen.ended.wait())
        self._calls.add(record)
        try:
            done, _ = await asyncio.wait({call, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            ended.cancel()
            await self._abandon(gen, record, "the tool call was cancelled by the client")
            raise
        finally:
            self._calls.discard(record)
        if call in done:
            ended.cancel()
            if call.cancelled():
                raise McpCallError("the MCP call was cancelled")
            exc = call.exception()
            if exc is None:
                return call.result()
            if _is_connection_closed(exc):
                await _settle(gen.ended.wait(), 1.0)
                raise _Lost(self._gen_reason(gen), undelivered=False)
            if _is_session_expired(exc):
                # An HTTP server that restarted no longer knows our session and refused the call
                # unseen: this connection is over, and a new one may send the call again.
                await self._expire(gen)
                raise _Lost("the server no longer knows this session (it restarted?)", undelivered=True)
            raise McpCallError(self._describe_error(exc))
        call.cancel()
        if ended in done:
            raise _Lost(self._gen_reason(gen), undelivered=_refused(gen.error))
        ended.cancel()
        await self._abandon(gen, record, f"timed out after {timeout:g} s")
        raise McpCallError(f"MCP tool call timed out after {timeout:g} s")

    async def _abandon(self, gen: _Generation, record: _Call, reason: str, *, unwind: bool = True) -> None:
        """Tell the server we gave up on a call (its task cancelled unless `unwind` is False).

        Bounded: the notice is sent by a task of its own, waited for at most CANCEL_SEND_S (a
        cancellation of the waiter leaves it to finish alone), so a server that reads nothing
        cannot hold us."""
        task = asyncio.create_task(
            self._send_cancelled(gen, record, reason, unwind), name=f"mcp-cancel-{self.name}"
        )
        self._cancelling.add(task)
        task.add_done_callback(self._cancelling.discard)
        await asyncio.wait({task}, timeout=CANCEL_SEND_S + 0.5)

    async def _send_cancelled(self, gen: _Generation, record: _Call, reason: str, unwind: bool) -> None:
        from mcp import types

        if unwind and record.task is not None:
            # Let the call's task end first: its request may be going out right now, or (a newer
            # SDK) the SDK may send a notice of its own, which `_Outbox` then counts.
            await asyncio.wait({record.task}, timeout=CANCEL_SEND_S)
            if record.task.done() and not record.task.cancelled():
                return  # it was answered after all
        session, outbox = gen.session, gen.outbox
        if record.request_id is None or session is None or outbox is None or gen.ended.is_set():
            return  # never sent, or the connection is gone (which ends the request anyway)
        if record.request_id in outbox.cancelled:
            return
        notice = types.ClientNotification(
            types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=record.request_id, reason=reason)
            )
        )
        try:
            await asyncio.wait_for(session.send_notification(notice), CANCEL_SEND_S)
            log.info("MCP server %r: cancelled request %s (%s)", self.name, record.request_id, reason)
        except Exception as exc:
            log.warning(
                "MCP server %r: could not cancel request %s: %s", self.name, record.request_id, _flatten(exc)
            )

    async def _expire(self, gen: _Generation) -> None:
        await self._end(gen, kill=False)
        if self._gen is gen and not self._closed:
            self._may_reconnect = True
            self._set("failed", "the server no longer knows this session (it restarted?)")

    def _gen_reason(self, gen: _Generation) -> str:
        if gen.error is not None and not isinstance(gen.error, asyncio.CancelledError):
            return self._describe_error(gen.error)
        tail = self._stderr_tail()
        return "the server closed the connection" + (f"; its last output: {tail}" if tail else "")

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Stop the server for good (stdio: its whole process group). Idempotent."""
        self._closed = True
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connecting
        gen = self._gen
        if gen is not None and self._calls:  # calls still waiting: the server may stop them now
            await asyncio.gather(
                *(self._abandon(gen, c, "the session was closed", unwind=False) for c in list(self._calls))
            )
        if self._cancelling:  # notices still going out (a call cancelled just before): let them
            await asyncio.wait(set(self._cancelling), timeout=CANCEL_SEND_S)
        if self._gen is not None:
            await self._end(self._gen, kill=False)
        if self.state != "failed":
            self.state = "pending"

    async def _end(self, gen: _Generation, *, kill: bool) -> None:
        """Stop a generation: a clean close, or (`kill`, a hung server) its processes first."""
        gen.stop.set()
        gen.wake.set()
        if kill:
            for pid in gen.pids:
                await procs.terminate_group(pid, grace=0.5)
        runner = gen.runner
        if runner is None or runner.done():
            return
        if not kill:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(runner), CLOSE_GRACE_S)
        if not runner.done():
            runner.cancel()
            for pid in gen.pids:
                procs.signal_group(pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(runner), CLOSE_GRACE_S)

    # ------------------------------------------------------------------ messages

    def _describe_error(self, exc: BaseException | None, *, starting: bool = False) -> str:
        """An exception as one redacted line; a stdio server that died, with its last stderr lines."""
        text = _flatten(exc)
        if isinstance(self.config, StdioServerConfig):
            tail = self._stderr_tail()
            if _pipe_broke(exc) or text in ("Connection closed", "the server closed the connection"):
                # Whether a dying server shows up as EOF or as a broken stdin depends on timing.
                text = "the server exited during start-up" if starting else "the server process exited"
                text += f"; its last output: {tail}" if tail else " without any output"
            elif tail and "Connection closed" in text:
                text += f"; its last output: {tail}"
        elif not self.config.auth and _status_of(exc) == 401:
            text += (
                "; the server asks for authorization: if it signs in with OAuth, give its mcp.json entry "
                f"`\"auth\": \"oauth\"` (`kimi mcp add --transport http --auth oauth {self.name} URL`) and run "
                f"`kimi mcp auth {self.name}`; otherwise put a token in `headers`"
            )
        return redact(text, self.config.secrets())

    def _stderr_tail(self) -> str:
        return redact(" | ".join(self._stderr), self.config.secrets())[-500:]

    def _stderr_line(self, line: str, count: int) -> None:
        line = redact(line, self.config.secrets())
        self._stderr.append(line)
        level = logging.INFO if count <= STDERR_LOG_LINES else logging.DEBUG
        log.log(level, "MCP server %r stderr: %s", self.name, line)


class _StderrPipe:
    """A pipe for a stdio server's stderr: its lines go to our log (redacted) and a short tail."""

    def __init__(self, conn: McpConnection) -> None:
        self._conn = conn
        self.writer: Any = None
        self._transport: asyncio.ReadTransport | None = None
        self._eof: asyncio.Future[None] | None = None

    async def __aenter__(self) -> _StderrPipe:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        conn = self._conn

        eof = self._eof = asyncio.get_running_loop().create_future()

        class Reader(asyncio.Protocol):
            def __init__(self) -> None:
                self.buffer = b""
                self.count = 0

            def connection_lost(self, exc: Exception | None) -> None:
                if not eof.done():
                    eof.set_result(None)

            def data_received(self, data: bytes) -> None:
                self.buffer += data
                *lines, self.buffer = self.buffer.split(b"\n")
                for raw in lines:
                    text = raw.decode("utf-8", "replace").rstrip()
                    if text:
                        self.count += 1
                        conn._stderr_line(text, self.count)
                if len(self.buffer) > 8192:
                    self.buffer = self.buffer[-8192:]

        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(Reader, os.fdopen(read_fd, "rb", buffering=0))
        return self

    def close_writer(self) -> None:
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()
            self.writer = None

    async def __aexit__(self, *exc: object) -> None:
        self.close_writer()
        if self._eof is not None:  # the last lines, often why it died; a grandchild may hold the pipe
            await asyncio.wait({self._eof}, timeout=STDERR_DRAIN_S)
        if self._transport is not None:
            self._transport.close()


async def _list_tools(session: Any) -> tuple[RemoteTool, ...]:
    from mcp import types

    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever must not hang us
        result = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        for tool in result.tools:
            tools.append(RemoteTool(tool.name, tool.description or "", dict(tool.inputSchema or {})))
        cursor = result.nextCursor
        if not cursor:
            break
    return tuple(tools)


async def _settle(awaitable: Any, timeout: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(awaitable, timeout)


def _is_connection_closed(exc: BaseException) -> bool:
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == _CONNECTION_CLOSED and "closed" in str(
        getattr(error, "message", "")
    )


def _is_session_expired(exc: BaseException) -> bool:
    """The streamable HTTP transport's answer to a 404 for our session id."""
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == 32600 and getattr(error, "message", "") == "Session terminated"


def _refused(exc: BaseException | None) -> bool:
    """The request never ran: no connection could be made, or the server turned our session away
    (404, or 400 "no valid session ID" from older SDK servers) before looking at the call."""
    for leaf in _leaves(exc):
        if type(leaf).__name__ == "ConnectError" or isinstance(leaf, ConnectionRefusedError):
            return True
        response = getattr(leaf, "response", None)
        if type(leaf).__name__ == "HTTPStatusError" and getattr(response, "status_code", None) in (400, 404):
            return True
    return False


def _leaves(exc: BaseException | None) -> list[BaseException]:
    if exc is None:
        return []
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


_PIPE_ERRORS = ("BrokenResourceError", "ClosedResourceError", "EndOfStream")


def _status_of(exc: BaseException | None) -> int | None:
    """The HTTP status of the first HTTPStatusError in `exc`, if any."""
    for leaf in _leaves(exc):
        response = getattr(leaf, "response", None)
        if type(leaf).__name__ == "HTTPStatusError" and response is not None:
            return getattr(response, "status_code", None)
    return None


def _pipe_broke(exc: BaseException | None) -> bool:
    """Whether every leaf of `exc` is the transport's pipe breaking, i.e. the process went away."""
    leaves = [e for e in _leaves(exc) if not isinstance(e, asyncio.CancelledError)]
    return bool(leaves) and all(
        isinstance(e, (BrokenPipeError, ConnectionResetError)) or type(e).__name__ in _PIPE_ERRORS
        for e in leaves
    )


def _flatten(exc: BaseException | None) -> str:
    """The useful part of an exception (task groups wrap the real error in groups)."""
    if exc is None:
        return "unknown error"
    leaves = [e for e in _leaves(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    parts = []
    for leaf in leaves:
        error = getattr(leaf, "error", None)  # McpError carries ErrorData
        message = getattr(error, "message", None) or str(leaf) or type(leaf).__name__
        if isinstance(leaf, FileNotFoundError) and leaf.filename:
            message = f"command not found: {leaf.filename}"
        elif isinstance(leaf, OSError) and not getattr(leaf, "error", None):
            message = f"{type(leaf).__name__}: {leaf.strerror or leaf}"
        elif type(leaf).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout", "HTTPStatusError"):
            message = f"{type(leaf).__name__}: {leaf}"
        lines = str(message).strip().splitlines()
        parts.append(lines[0] if lines else type(leaf).__name__)  # httpx adds a line of MDN links
    return "; ".join(dict.fromkeys(parts))


def _register_credentials(config: McpServerConfig) -> None:
    """Out of every tool result and log line from now on (util/secrets.py): a remote server's URL
    password, and the header, query and env values whose name says they are credentials (our own
    messages about the server redact all of its values: `config.secrets()`)."""
    if isinstance(config, StdioServerConfig):
        register_named(config.env)
        return
    parts = urlsplit(config.url)
    register([parts.password])
    register_named(config.headers)
    register_named(parse_qsl(parts.query))
