"""Answering the first message before the heavy modules are loaded. Standard library only.

Both servers spend most of their start-up importing (asyncio, pydantic, the ACP SDK, the agent
core; figures: docs/performance.md, Figures that used to live in the code). A client's first
message is almost always a handshake whose answer needs none of that. So: a thread imports
everything while the main thread waits on stdin with plain blocking reads; the handshake is
answered straight to fd 1; then the asyncio server takes over, starting with whatever bytes were
read past the first line.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from ..util.meta_path import join_meta_path, leave_meta_path

READ_CHUNK = 65536
POLL_S = 0.02
FAST_SWITCH_INTERVAL_S = 0.0005  # while preloading, so the main thread gets the GIL back quickly
PAUSE_LIMIT_S = 0.05  # longest single wait of a paused preload (Preloader.paused)


class FirstLine:
    """The first line of stdin and any bytes that arrived after it in the same read."""

    def __init__(self, line: bytes, leftover: bytes, eof: bool) -> None:
        self.line = line
        self.leftover = leftover
        self.eof = eof


def read_first_line(limit: int, stop: Callable[[], bool] = lambda: False, data: bytes = b"") -> FirstLine | None:
    """Block until a full line (or EOF) arrived on fd 0, without Python's read-ahead buffering.

    As soon as `stop()` is true (checked every few ms while stdin is silent), e.g. because
    start-up failed and the process should exit without waiting for the client, it returns None,
    or what was read so far as `leftover` when that is not nothing. `data` is input already read
    (the line is looked for there first).
    """
    while b"\n" not in data:
        try:
            readable, _, _ = select.select([0], [], [], POLL_S)
        except InterruptedError:
            continue
        except (OSError, ValueError):
            readable = [0]  # not selectable (odd stdin): just read
        if not readable:
            if stop():
                return FirstLine(b"", data, False) if data else None
            continue
        try:
            chunk = os.read(0, READ_CHUNK)
        except InterruptedError:
            continue
        except OSError:
            return FirstLine(data, b"", True)
        if not chunk:
            return FirstLine(data, b"", True)
        data += chunk
        if len(data) > limit:
            break  # no newline within the limit: let the real server report it
    line, sep, rest = data.partition(b"\n")
    if not sep:
        return FirstLine(b"", data, False)
    return FirstLine(line + sep, rest, False)


def hint_if_terminal(text: str) -> None:
    """Started by hand, a server waits silently for JSON-RPC and looks hung: say what it is.

    Only when stdin is a terminal (an IDE's pipe never sees it), and only on stderr: stdout
    carries nothing but protocol messages. One `isatty` and one `write`: start-up is not slowed.
    """
    try:
        if os.isatty(0):
            os.write(2, text.encode())
    except OSError:
        pass


def write_stdout(data: bytes) -> None:
    """Write all of `data` to fd 1 (blocking; only used before the event loop owns stdout)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except InterruptedError:
            continue
        view = view[written:]


class Preloader:
    """Runs `load()` in a thread; `result()` blocks until it is done and re-raises errors.

    The cyclic garbage collector is off while it runs: imports create ~40k long-lived objects and
    nearly no garbage (~500 objects in cycles), yet ~80 collections ran over the growing young
    generations, a noticeable share of the preload. At the end everything is frozen (`settle_heap`) and
    collection resumes, so nothing of the preload is ever scanned again.

    With `pausable`, `paused()` stops the preload thread at its next import while the main thread
    computes an early answer: both need the one GIL, and sharing it in 0.5 ms slices made an early
    `replay` take several times as long. (A long switch interval does not do it: the preload,
    already waiting with the short one, takes the GIL and then keeps it for the long one.)
    """

    def __init__(self, load: Callable[[], Any], *, pausable: bool = False) -> None:
        self._load = load
        self._done = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._value: Any = None
        self._error: BaseException | None = None
        self._saved_interval = sys.getswitchinterval()
        self._thread = threading.Thread(target=self._run, name="kimi-preload", daemon=True)
        self._gate = _ImportGate(self) if pausable else None  # only a pausable preload pays for it
        self._collecting = False  # whether the collector was on when the preload started

    def start(self) -> Preloader:
        sys.setswitchinterval(FAST_SWITCH_INTERVAL_S)
        self._collecting = gc.isenabled()
        gc.disable()
        if self._gate is not None:
            join_meta_path(self._gate)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._value = self._load()
        except BaseException as exc:  # handed to the main thread, never lost here
            self._error = exc
        finally:
            if self._gate is not None:
                leave_meta_path(self._gate)
            self._running.set()
            sys.setswitchinterval(self._saved_interval)
            if self._collecting:
                settle_heap()
                gc.enable()
            self._done.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The preload thread stops at its next import until the block ends. The block must not
        import anything: the paused thread waits inside the import system, holding its lock
        (at most `PAUSE_LIMIT_S` at a time, so a mistake costs time, never a deadlock)."""
        if self._gate is None:
            raise RuntimeError("this preload was not started pausable")
        self._running.clear()
        try:
            yield
        finally:
            self._running.set()

    def wait_if_paused(self) -> None:
        if threading.get_ident() == self._thread.ident:
            self._running.wait(PAUSE_LIMIT_S)

    def failed(self) -> bool:
        return self._done.is_set() and self._error is not None

    def done(self) -> bool:
        return self._done.is_set()

    def result(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _ImportGate:
    """First on `sys.meta_path` while the preload runs: finds nothing, and holds the preload
    thread while it is paused."""

    def __init__(self, preloader: Preloader) -> None:
        self._preloader = preloader

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        self._preloader.wait_if_paused()
        return


def settle_heap() -> None:
    """After start-up: move everything allocated so far out of the garbage collector's sight.

    The preloaded modules are ~60k long-lived objects; a full collection walking them is slow,
    and would land in the middle of some streamed answer. Frozen, they are never scanned again.
    """
    gc.freeze()


class ShutdownSignals:
    """Remembers SIGTERM/SIGINT/SIGHUP received during start-up, so they end us cleanly (exit 0)
    instead of killing the process before the event loop installs its own handlers."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> ShutdownSignals:
        for sig in self.SIGNALS:
            try:
                signal.signal(sig, self._on_signal)
            except (OSError, ValueError):
                pass
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.requested = True


def request_params(message: Any, method: str) -> dict[str, Any] | None:
    """The params of a well-formed JSON-RPC request for `method`, else None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != method:
        return None
    request_id = message.get("id")
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return None
    params = message.get("params")
    return params if isinstance(params, dict) else None


@dataclass
class EarlyStart:
    """What happened before the server proper runs."""

    preloader: Preloader
    signals: ShutdownSignals
    unread: bytes  # input the server must still read (the first line too, unless answered here)
    handshake: dict[str, Any] | None  # params of the handshake answered here
    eof: bool

    @property
    def nothing_to_serve(self) -> bool:
        """Stdin ended (or a signal came) with nothing left to answer."""
        return self.signals.requested or (self.eof and not self.unread.strip())


def start(
    load: Callable[[], Any],
    answer: Callable[[dict[str, Any]], dict[str, Any] | None],
    limit: int,
    more: Callable[[dict[str, Any], Callable[[], Any]], bytes | None] | None = None,
) -> EarlyStart:
    """Preload with `load()` while waiting for the first message; answer it when `answer` can.

    `answer(message)` returns the JSON-RPC result for a handshake it recognises, else None (the
    message, and any malformed line, is then left to the server); with `more`, it runs with the
    preload paused (it must import nothing then). Returns as soon as the first
    line is handled, or when the preload failed or a signal arrived before any input. With
    `more`, the messages after an answered handshake are offered to it while the preload runs
    (Wire's early `replay`): it returns the bytes to write, or None to leave it to the server;
    its second argument is `Preloader.paused`, for the computing part of its answer.
    """
    signals = ShutdownSignals().install()
    preloader = Preloader(load, pausable=more is not None).start()
    first = read_first_line(limit, stop=lambda: preloader.failed() or signals.requested)
    if first is None:
        return EarlyStart(preloader, signals, b"", None, True)
    with preloader.paused() if more is not None else nullcontext():  # the answer alone on the GIL
        early = early_answer(first.line, answer)
    if early is None:
        return EarlyStart(preloader, signals, first.line + first.leftover, None, first.eof)
    output, params = early
    write_stdout(output)
    unread, eof = first.leftover, first.eof
    if more is not None and not eof:
        stop = lambda: preloader.done() or signals.requested  # noqa: E731
        unread, eof = _serve_more(unread, more, limit, stop=stop, hold=preloader.paused)
    return EarlyStart(preloader, signals, unread, params, eof)


def decode_line(line: bytes) -> Any:
    """A line of input as JSON; None when it is empty or malformed (the server proper answers it)."""
    try:
        return json.loads(line) if line.strip() else None
    except (ValueError, RecursionError):
        return None


def early_answer(line: bytes, answer: Callable[[dict[str, Any]], dict[str, Any] | None]) -> tuple[bytes, dict[str, Any]] | None:
    """The output answering the first `line` when `answer` recognises it as a handshake, and the
    handshake's params; None leaves the line to the server."""
    message = decode_line(line)
    result = answer(message) if isinstance(message, dict) else None
    if result is None:
        return None
    response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return (json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n").encode(), message["params"]


def _serve_more(
    data: bytes,
    more: Callable[[dict[str, Any], Callable[[], Any]], bytes | None],
    limit: int,
    stop: Callable[[], bool],
    hold: Callable[[], Any],
) -> tuple[bytes, bool]:
    """After the handshake, while the preload runs: answer the lines `more` can answer (its output
    is written as is), in order. `more(message, hold)` computes its answer inside `with hold():`
    (`Preloader.paused`: no imports in there). Returns at the first line it cannot (left
    unread, with all that follows) or once `stop()` is true, with the input not handled and
    whether stdin ended."""
    while True:
        first = read_first_line(limit, stop=stop, data=data)
        if first is None:
            return data, False
        if not first.line:
            return first.leftover, first.eof
        message = decode_line(first.line)
        output = more(message, hold) if isinstance(message, dict) else None
        if output is None:
            return first.line + first.leftover, first.eof
        write_stdout(output)
        if first.eof:
            return first.leftover, True
        data = first.leftover
