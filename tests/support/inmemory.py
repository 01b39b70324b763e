"""`kimi acp` and `kimi --wire` served inside the test process, over an in-memory stream pair.

The ACP and MCP Python SDKs test their servers this way: the real server and the real client,
joined by in-memory streams instead of a process's stdio. The server side is what the commands
run once their imports are done (`frontends/acp/entry.run`, `frontends/wire/main.run_wire`):
the same first-line handshake (`startup/early.early_answer` with the commands' own `answer`
functions: the early `initialize`, Wire's early `replay` of the lines that came with it), then
`entry.serve_streams` (our `StdioTransport`, the `RequestGuard` in front of the SDK's router, the
SDK's `Connection`, `ClientCalls`) or `main._prepare` and `main.serve_streams` (the `WireServer`).
The client side is unchanged: `serve_acp` drives it with `spawn_acp`'s `EditorClient` and schema
`Recorder` (every message validated) and yields the same kind of object; `WireMemory` has
`WireProcess`'s interface (`WireMemory.acp` is `WireProcess.spawn("acp")`). Converting a test
is changing one call. `KIMI_TEST_SERVERS=process` turns both back into real processes.

What a process would give for free is emulated, once per server ("one server, one process"):
- the environment: `kimi acp` from `spawn_acp` gets the SDK's trimmed environment plus `env`,
  `kimi --wire` the test's environment plus `env`; os.environ is that (and the working directory
  `cwd`) while the server runs, and is restored after;
- the process-wide state a fresh process starts without is reset when a server starts and put
  back when it stops: the temp dir, and all that kimi_acp registers in `util/process_state.py`
  (the scripted model's queues, the secrets registry, the sandbox probe, files registered as
  sensitive, share dirs checked, refused refresh tokens, caches, the log set-up: each server logs
  to its own `$KIMI_SHARE_DIR/logs/kimi.log`);
- exit: the end of input (EOF) lets the server shut down as it would; after the grace period
  the SDK's spawner gives a process it is cancelled (terminated); every task it started that
  still runs is then cancelled, as `asyncio.run` does when a process's main coroutine returns;
  a crash is exit code 1 and its traceback the "stderr", an option error exit code 2 and one line.

Two servers at once would share one process's state, which two processes never do: starting a
second while one runs raises, and `tests/conftest.py` fails a test that leaves one running. What
only a process shows — stdout purity, stderr, EOF and signals, the early handshake racing the
preload, orphans and process groups, start-up imports and fallbacks, file modes, memory — is
tested with processes (docs/architecture.md, Testing).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import os
import tempfile
import traceback
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp

from kimi_acp.util import process_state
from tests.support.acp_client import AgentCalls, EditorClient, Recorder, spawn_acp
from tests.support.wire_client import DEFAULT_TIMEOUT, WireClientMixin, WireProcess

# `KIMI_TEST_SERVERS=process`: `serve_acp` and `WireMemory` start real processes instead (the smoke
# jobs of .ci/run, where the start-up tricks are what is tested; and to check that a test passes
# both ways).
SERVERS_ENV = "KIMI_TEST_SERVERS"
CLIENT_LIMIT = 64 * 1024 * 1024  # what spawn_acp / WireProcess give their stdout readers
EXIT_TIMEOUT_S = 2.0  # the SDK's spawner: EOF, then 2 s before terminate, 2 s more before kill
# Imported before a server's state is reset, so what they register is reset with the rest (state a
# module registers while the server runs is emptied when it stops).
SERVER_MODULES = ("kimi_acp.startup.logs", "kimi_acp.frontends.acp.server", "kimi_acp.frontends.wire.server")


def in_memory() -> bool:
    """Whether servers run in this process (the default) or as processes (`KIMI_TEST_SERVERS=process`)."""
    value = os.environ.get(SERVERS_ENV, "memory").strip().lower()
    if value not in ("memory", "process"):
        raise ValueError(f"{SERVERS_ENV}={value!r}: memory or process")
    return value == "memory"


# --------------------------------------------------------------------------- the stream pair


class Pipe(asyncio.WriteTransport):
    """One direction of an in-memory pipe: what is written goes to `reader`, and closing it is the
    reader's end of input. Until a reader is connected (the server's stdin, read first by the
    early handshake) the bytes wait here. It never blocks: a StreamReader without a transport is
    never paused."""

    def __init__(self, reader: asyncio.StreamReader | None = None) -> None:
        super().__init__()
        self.reader = reader
        self._pending = bytearray()
        self._eof = False
        self._closing = False
        self._arrived = asyncio.Event()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or not data:  # a closed pipe: the bytes go nowhere
            return
        if self.reader is not None:
            self.reader.feed_data(bytes(data))
        else:
            self._pending += data
            self._arrived.set()

    def write_eof(self) -> None:
        self.close()

    def can_write_eof(self) -> bool:
        return True

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self.reader is not None:
            self.reader.feed_eof()
        else:
            self._eof = True
            self._arrived.set()

    def abort(self) -> None:
        self.close()

    def get_write_buffer_size(self) -> int:
        return 0

    async def read_first_line(self, limit: int) -> tuple[bytes, bytes, bool]:
        """`startup/early.read_first_line` on this pipe: (line, what came after it, eof), once a
        line, the end of input or more than `limit` bytes without a newline arrived."""
        while b"\n" not in self._pending and not self._eof and len(self._pending) <= limit:
            self._arrived.clear()
            await self._arrived.wait()
        data = bytes(self._pending)
        self._pending.clear()
        line, sep, rest = data.partition(b"\n")
        if sep:
            return line + sep, rest, False
        if self._eof:
            return data, b"", True
        return b"", data, False  # no newline within the limit: the server reports it

    def connect(self, limit: int, unread: bytes) -> asyncio.StreamReader:
        """The server's stdin from now on: `unread` first (what the handshake did not take, as
        `open_stdio(prefix=...)` feeds it), then everything written here."""
        reader = asyncio.StreamReader(limit=limit)
        reader.feed_data(unread + bytes(self._pending))
        self._pending.clear()
        if self._eof:
            reader.feed_eof()
        self.reader = reader
        return reader


class _NoFlowControl(asyncio.Protocol):
    """What `asyncio.StreamWriter.drain` awaits: a pipe that never fills never makes it wait."""

    async def _drain_helper(self) -> None:
        return None


def pipe_writer(pipe: Pipe) -> asyncio.StreamWriter:
    """An asyncio StreamWriter over `pipe` (what the SDK's client connection writes to)."""
    return asyncio.StreamWriter(pipe, _NoFlowControl(), None, asyncio.get_running_loop())


async def early_start(
    stdin: Pipe,
    stdout: Any,
    limit: int,
    answer: Callable[[dict[str, Any]], dict[str, Any] | None],
    more: Callable[[dict[str, Any], Callable[[], Any]], bytes | None] | None = None,
) -> tuple[asyncio.StreamReader, dict[str, Any] | None, bool]:
    """What `startup/early.start` does before the server runs, with the same answers: the first
    line answered when `answer` recognises it (`early.early_answer`), then, with `more`, the lines
    that came with it while `more` answers them (a preload that has just finished). Returns the
    server's stdin, the handshake's params (or None) and whether there is nothing to serve."""
    from kimi_acp.startup import early

    line, leftover, eof = await stdin.read_first_line(limit)
    answered = early.early_answer(line, answer)
    if answered is None:
        unread = line + leftover
        handshake = None
    else:
        output, handshake = answered
        stdout.write(output)
        unread = leftover
        while more is not None and not eof and b"\n" in unread:
            next_line, _, rest = unread.partition(b"\n")
            message = early.decode_line(next_line + b"\n")
            output = more(message, contextlib.nullcontext) if isinstance(message, dict) else None
            if output is None:
                break
            stdout.write(output)
            unread = rest
    nothing_to_serve = eof and not unread.strip()
    return stdin.connect(limit, unread), handshake, nothing_to_serve


# --------------------------------------------------------------------------- one process's state


class ProcessState:
    """Makes the test process look like a fresh server process while one in-memory server runs."""

    def __init__(self) -> None:
        self.active: str | None = None  # the name of the server running now
        self._owner: object | None = None
        self._restore: list[Callable[[], None]] = []

    def enter(self, name: str, env: Mapping[str, str], cwd: Path | None) -> object:
        """Returns the token `exit` takes."""
        if self.active is not None:
            raise RuntimeError(
                f"{name}: {self.active} is still running in this process; two servers at once would share one "
                "process's environment and state, which two processes never do: test this with processes"
            )
        self.active = name
        owner = self._owner = object()
        saved_env, saved_cwd, saved_tempdir = dict(os.environ), os.getcwd(), tempfile.tempdir

        def restore_process() -> None:
            tempfile.tempdir = saved_tempdir
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)

        self._restore = [restore_process]
        try:
            os.environ.clear()
            os.environ.update(env)
            if cwd is not None:
                os.chdir(cwd)
            tempfile.tempdir = None  # read again from TMPDIR
            for module in SERVER_MODULES:  # their state is registered before it is reset
                importlib.import_module(module)
            self._restore.append(process_state.reset())
        except BaseException:
            self.exit(owner)
            raise
        return owner

    def on_exit(self, restore: Callable[[], None]) -> None:
        self._restore.append(restore)

    def exit(self, owner: object | None = None) -> None:
        """Put back what the server changed (also for a server a failed test left running);
        with `owner`, only if that server's state is still the one in place."""
        if owner is not None and owner is not self._owner:
            return  # already put back (`left_running`)
        self._owner = None
        restore, self._restore = self._restore, []
        try:
            for undo in reversed(restore):
                undo()
        finally:
            self.active = None


_PROCESS_STATE = ProcessState()


# --------------------------------------------------------------------------- the server's tasks

_OWNER: contextvars.ContextVar[_ServerTasks | None] = contextvars.ContextVar("kimi_inmemory_server", default=None)


class _ServerTasks:
    """Every task the server started, directly or not (they inherit the context that names it)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.context = contextvars.copy_context()
        self.context.run(_OWNER.set, self)

    def install(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        previous = loop.get_task_factory()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, context: contextvars.Context | None = None) -> asyncio.Task[Any]:
            if previous is not None:
                task = previous(loop, coro) if context is None else previous(loop, coro, context=context)
            else:
                task = asyncio.Task(coro, loop=loop, context=context)
            owner = context.get(_OWNER) if context is not None else _OWNER.get()
            if owner is not None:
                owner.tasks.add(task)
                task.add_done_callback(owner.tasks.discard)
            return task

        loop.set_task_factory(factory)  # type: ignore[arg-type]
        return lambda: loop.set_task_factory(previous)

    def start(self, coro: Any, name: str) -> asyncio.Task[Any]:
        return asyncio.get_running_loop().create_task(coro, name=name, context=self.context)

    async def cancel_leftovers(self) -> None:
        """What `asyncio.run` does when the main coroutine returns: cancel the rest, wait for it."""
        left = [task for task in self.tasks if not task.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=EXIT_TIMEOUT_S)


@dataclass
class ServerRun:
    """The server's main task, as a process: started, fed EOF, waited for, terminated."""

    name: str
    tasks: _ServerTasks
    stdin: Pipe
    stdout: Pipe
    task: asyncio.Task[int] | None = None
    stderr_lines: list[str] = field(default_factory=list)  # what the process would print there

    @property
    def returncode(self) -> int | None:
        """None while it runs; its exit code when it returned; 1 when it raised (a process would
        have printed the traceback and exited 1); -15 when it had to be cancelled (terminated)."""
        assert self.task is not None
        if not self.task.done():
            return None
        if self.task.cancelled():
            return -15
        return 1 if self.task.exception() is not None else self.task.result()

    def error(self) -> BaseException | None:
        assert self.task is not None
        if self.task.done() and not self.task.cancelled():
            return self.task.exception()
        return None

    def stderr(self) -> str:
        """What the process would have printed on stderr: its one-line errors and the traceback of
        a crash (logs go to `$KIMI_SHARE_DIR/logs/kimi.log`, as a process's do)."""
        error = self.error()
        crash = "".join(traceback.format_exception(error)) if error is not None else ""
        return "".join(self.stderr_lines) + crash

    async def wait(self, timeout: float | None = None) -> int:
        assert self.task is not None
        await asyncio.wait([self.task], timeout=timeout)
        if not self.task.done():
            raise TimeoutError(f"{self.name} did not stop within {timeout} s")
        return self.returncode  # type: ignore[return-value]

    async def stop(self, timeout: float = EXIT_TIMEOUT_S) -> None:
        """EOF, the wait a spawner gives a process, then cancel it (terminate); then the tasks it
        left are cancelled, as at a process's exit."""
        assert self.task is not None
        self.stdin.close()
        await asyncio.wait([self.task], timeout=timeout)
        if not self.task.done():
            self.task.cancel()
            await asyncio.wait([self.task], timeout=timeout)
        await self.tasks.cancel_leftovers()
        self.stdout.close()

    def kill(self) -> None:
        assert self.task is not None
        self.stdin.close()
        if not self.task.done():
            self.task.cancel()


@contextlib.asynccontextmanager
async def _server_process(name: str, env: Mapping[str, str], cwd: Path | None) -> AsyncIterator[_ServerTasks]:
    """The process-like scope of one server: its environment and fresh state, its tasks."""
    tasks = _ServerTasks()
    owner = _PROCESS_STATE.enter(name, env, cwd)
    try:
        _PROCESS_STATE.on_exit(tasks.install(asyncio.get_running_loop()))
        yield tasks
        await tasks.cancel_leftovers()
    finally:
        _PROCESS_STATE.exit(owner)


def left_running() -> str | None:
    """After a test: the name of an in-memory server it left running (its state is put back
    now), else None. `tests/conftest.py` fails such a test."""
    name = _PROCESS_STATE.active
    if name is not None:
        _PROCESS_STATE.exit()
    return name


def _launch(name: str, tasks: _ServerTasks, main: Callable[[ServerRun, Any], Any]) -> tuple[ServerRun, asyncio.StreamReader]:
    """Start `main(run, stdout)`, the server's main coroutine (returning its exit code); its
    stdout closes when it ends. Returns the run and the client's end of its stdout."""
    from kimi_acp.startup.stdio import StdoutWriter

    client_in = asyncio.StreamReader(limit=CLIENT_LIMIT)
    run = ServerRun(name, tasks, stdin=Pipe(), stdout=Pipe(client_in))
    writer = StdoutWriter(run.stdout)
    run.task = tasks.start(main(run, writer), name=name)

    def exited(_: Any) -> None:
        writer.flush()  # what it wrote in its last loop pass still reaches the client
        run.stdout.close()  # the process is gone: EOF on its stdout

    run.task.add_done_callback(exited)
    return run, client_in


# --------------------------------------------------------------------------- kimi acp


def acp_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a `kimi acp` started by `spawn_acp` sees: the SDK's trimmed environment plus `env`."""
    from acp.transports import default_environment

    return {**default_environment(), "PYTHONFAULTHANDLER": "1", **env}


def acp_sandbox_option(args: Sequence[str]) -> str | None:
    """`kimi acp [--sandbox MODE]`: the mode, or None; other arguments are the CLI's business
    (test them with a process)."""
    if not args:
        return None
    from kimi_acp.cli.main import _sandbox_option

    mode = _sandbox_option(list(args))
    if mode is None:
        raise ValueError(f"kimi acp {' '.join(args)}: only --sandbox MODE is served in memory; use spawn_acp")
    return mode


async def _acp_main(run: ServerRun, stdout: Any, sandbox: str | None) -> int:
    """`frontends/acp/entry.run` after its imports: the early `initialize`, then the server."""
    from kimi_acp.frontends.acp import entry, server

    stdin, handshake, nothing_to_serve = await early_start(run.stdin, stdout, entry.STDIN_LIMIT, entry._early_initialize)
    if nothing_to_serve:
        return 0
    return await entry.serve_streams(server.AcpServer, stdin, stdout, sandbox=sandbox, initialize_params=handshake)


@dataclass
class InMemoryAcp(AgentCalls):
    """What `serve_acp` yields: `spawn_acp`'s `AcpProcess`, with the server's run for its process."""

    conn: Any
    server: ServerRun
    client: EditorClient
    recorder: Recorder


@contextlib.asynccontextmanager
async def serve_acp(
    env: dict[str, str], *, fs: bool = False, terminal: bool = False, elicitation: bool = False, cwd: Path | None = None,
    args: Sequence[str] = (),
) -> AsyncIterator[InMemoryAcp]:
    """`spawn_acp`, with `kimi acp`'s server in this process; every message it sends is schema-checked."""
    if not in_memory():
        async with spawn_acp(env, fs=fs, terminal=terminal, elicitation=elicitation, cwd=cwd, args=args) as agent:
            yield agent  # type: ignore[misc]
        return
    recorder = Recorder()
    client = EditorClient(recorder, fs=fs, terminal=terminal, elicitation=elicitation)
    sandbox = acp_sandbox_option(args)
    name = "kimi acp (in memory)"
    async with _server_process(name, acp_environment(env), cwd) as tasks:
        from kimi_acp.startup.logs import setup_logging

        setup_logging("acp")  # as the preload does (`entry._load_server_stack`), into this server's share dir
        run, client_in = _launch(name, tasks, lambda run, stdout: _acp_main(run, stdout, sandbox))
        conn = acp.connect_to_agent(
            client, pipe_writer(run.stdin), client_in, observers=[recorder.observe], use_unstable_protocol=True
        )
        try:
            yield InMemoryAcp(conn, run, client, recorder)
        except BaseException as exc:  # the test failed anyway: say what the schema check saw too
            if recorder.problems():
                exc.add_note("ACP schema check:\n" + "\n".join(recorder.problems()))
            raise
        finally:  # as spawn_agent_process: close the connection, then EOF and the wait for the exit
            await conn.close()
            await run.stop()
    if run.error() is not None:
        raise AssertionError(f"{name} crashed:\n{run.stderr()}") from run.error()
    # Every message the agent sent must validate; report them all at once.
    recorder.check()


# --------------------------------------------------------------------------- kimi --wire


async def _wire_main(run: ServerRun, stdout: Any, options: dict[str, Any]) -> int:
    """`frontends/wire/main.run_wire`: the session prepared in a thread (the preload), the early
    `initialize` and `replay`, then the server; an option error is exit code 2 and one line."""
    from kimi_acp.frontends.wire import main

    try:
        prepared = await asyncio.to_thread(main._prepare, **options)
    except main.StartupError as exc:
        run.stderr_lines.append(f"kimi: error: {exc}\n")
        return 2
    stdin, handshake, nothing_to_serve = await early_start(
        run.stdin,
        stdout,
        main.STDIN_LIMIT,
        lambda message: main._early_initialize(message, options),
        more=lambda message, hold: main._early_replay(message, options, hold),
    )
    if nothing_to_serve:
        await prepared.core.close()
        return 0
    return await main.serve_streams(prepared, stdin, stdout, early_initialize=handshake, batch_input=False)


class WireMemory(WireClientMixin):
    """`kimi --wire ARGS` (or, with `acp`, `kimi acp`) served in this process, with
    `WireProcess`'s interface: raw JSON-RPC lines."""

    def __init__(self, run: ServerRun, stdout: asyncio.StreamReader, scope: contextlib.AbstractAsyncContextManager[Any]) -> None:
        super().__init__()
        self.server = run
        self._stdout = stdout
        self._scope = scope
        self._ended = False

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> WireMemory:
        """`WireProcess.start(*args)`: the options are parsed as `kimi --wire` parses them (an
        option only the click CLI takes is a process's test)."""
        if not in_memory():
            return await WireProcess.start(*args, env=env, cwd=cwd)  # type: ignore[return-value]
        from kimi_acp.frontends.wire import main

        options = main.parse_fast(["--wire", *args])
        if options is None:
            raise ValueError(f"kimi --wire {' '.join(args)}: not served in memory (the click CLI parses it); use WireProcess")
        return await cls._serve("kimi --wire (in memory)", lambda run, stdout: _wire_main(run, stdout, options), env, cwd)

    @classmethod
    async def acp(cls, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> WireMemory:
        """`WireProcess.spawn("acp", *args)`: `kimi acp` driven with raw lines."""
        if not in_memory():
            return await WireProcess.spawn("acp", *args, env=env, cwd=cwd)  # type: ignore[return-value]
        sandbox = acp_sandbox_option(args)
        return await cls._serve("kimi acp (in memory)", lambda run, stdout: _acp_main(run, stdout, sandbox), env, cwd, logs="acp")

    @classmethod
    async def _serve(
        cls, name: str, main: Callable[[ServerRun, Any], Any], env: dict[str, str] | None, cwd: Path | None, logs: str | None = None
    ) -> WireMemory:
        scope = _server_process(name, {**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})}, cwd)
        tasks = await scope.__aenter__()
        if logs is not None:
            from kimi_acp.startup.logs import setup_logging

            setup_logging(logs)  # as `kimi acp`'s preload does (`entry._load_server_stack`)
        run, stdout = _launch(name, tasks, main)
        return cls(run, stdout, scope)

    # ------------------------------------------------------------------ WireProcess's interface

    @property
    def returncode(self) -> int | None:
        return self.server.returncode

    async def send_raw(self, line: str | bytes) -> None:
        data = line.encode() if isinstance(line, str) else line
        self.server.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        await asyncio.sleep(0)  # as a pipe write would: let the server read it

    async def recv(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        line = await asyncio.wait_for(self._stdout.readline(), timeout)
        if not line:
            raise EOFError(f"{self.server.name} closed stdout; stderr: {self.server.stderr()}")
        return self._received(line)

    async def close(self, timeout: float = 10.0) -> int:
        """EOF, and wait for the end (on a timeout: killed, and TimeoutError, as `WireProcess.close`)."""
        self.server.stdin.close()
        try:
            return await self.server.wait(timeout)
        except TimeoutError:
            self.server.kill()
            raise
        finally:
            await self._end()

    async def wait(self, timeout: float | None = None) -> int:
        """The exit code, once the server ended by itself (e.g. an option error)."""
        return await self.server.wait(timeout)

    async def stderr_text(self) -> str:
        return self.server.stderr()

    def kill(self) -> None:
        self.server.kill()

    async def aclose(self) -> None:
        """Teardown: stop it if it still runs (whatever happens), leaving no task behind."""
        if self.server.returncode is None:
            self.server.kill()
        await self._end()

    async def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        await self.server.stop()
        await self._scope.__aexit__(None, None, None)
