"""A minimal asyncio JSON-RPC 2.0 client over a child process's stdio (one message per line).

It spawns the agent, correlates requests with responses, keeps every notification with the
`time.perf_counter()` at which its bytes were read (CLOCK_MONOTONIC on Linux, so comparable with
timestamps taken in other processes), and answers agent→client requests itself: ACP
`session/request_permission` and Wire `request` approvals are approved, anything else gets
"method not found". Every wait has a timeout; a process that exits fails all pending requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

READ_SIZE = 1 << 20
STDERR_KEEP = 16 * 1024
_LIVE: set[RpcProcess] = set()  # every agent not closed yet, for `kill_all` at exit
ANOMALIES: dict[str, int] = {}  # misbehaviour seen when closing agents, with how often


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _anomaly(text: str) -> None:
    text = _UUID.sub("<id>", text)  # the same message about another session counts as the same
    ANOMALIES[text] = ANOMALIES.get(text, 0) + 1


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(rest) > 2 and rest[0] != b"Z" and int(rest[2]) == pgid:
            members.append(int(entry))
    return members


def kill_all() -> None:
    """SIGKILL every agent process group still open (the bench's last line of defence)."""
    for process in list(_LIVE):
        process.kill_now()
    _LIVE.clear()


class RpcError(Exception):
    """A JSON-RPC error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @property
    def method_not_found(self) -> bool:
        return self.code == -32601


class ProcessGone(Exception):
    """The agent closed stdout (exited) while we were waiting for it."""


@dataclass
class Reply:
    """A response: its result (or error), when the request was written and when the answer was read."""

    result: Any
    error: RpcError | None
    sent: float
    received: float
    seq: int = 0  # how many notifications had been received when this response was read

    @property
    def elapsed(self) -> float:
        return self.received - self.sent

    def unwrap(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


Handler = Callable[[str, Any], Any]


class RpcProcess:
    """One agent subprocess. Use `spawn`, then `request` / `call`, and always `close`."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        started: float,
        handler: Handler | None,
        label: str = "agent",
        string_ids: bool = False,
    ) -> None:
        self.proc = proc
        self.string_ids = string_ids  # Wire's spec makes request ids strings (Kimi's server insists)
        self.argv_text = label
        self.started = started  # perf_counter() just before the process was created
        self.handler = handler or answer_agent_request
        self.notifications: list[tuple[float, dict[str, Any]]] = []
        self.bad_lines = 0  # stdout lines that are not JSON objects (a protocol violation)
        self._pending: dict[int | str, tuple[asyncio.Future[Reply], float]] = {}
        self._next_id = 0
        self._stderr = bytearray()
        self._gone: str | None = None
        self._reader = asyncio.create_task(self._read_stdout())
        self._err_reader = asyncio.create_task(self._read_stderr())
        _LIVE.add(self)

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        handler: Handler | None = None,
        label: str | None = None,
        string_ids: bool = False,
    ) -> RpcProcess:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,  # its own process group: `close` can kill children too
        )
        return cls(proc, started, handler, label or " ".join(argv), string_ids)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and self._gone is None

    def stderr_tail(self, limit: int = 2000) -> str:
        return bytes(self._stderr[-limit:]).decode(errors="replace").strip()

    # ------------------------------------------------------------------ sending

    def _write(self, message: dict[str, Any]) -> float:
        if self._gone is not None:
            raise ProcessGone(self._gone)
        stdin = self.proc.stdin
        assert stdin is not None
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        sent = time.perf_counter()
        stdin.write(data)
        return sent

    def send_request(self, method: str, params: Any = None) -> tuple[int | str, asyncio.Future[Reply]]:
        """Write a request now; returns its id and a future of its Reply (await it with a timeout)."""
        self._next_id += 1
        request_id: int | str = str(self._next_id) if self.string_ids else self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        sent = self._write(message)
        self._pending[request_id] = (future, sent)
        return request_id, future

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Reply:
        """Send and wait for the Reply (an error response is returned, not raised)."""
        request_id, future = self.send_request(method, params)
        await self._drain()
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._pending.pop(request_id, None)
            raise TimeoutError(f"{method}: no response within {timeout:g}s") from None

    async def call(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        """Send and return the result; raises RpcError for an error response."""
        return (await self.request(method, params, timeout)).unwrap()

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)
        await self._drain()

    async def flush(self) -> None:
        """Wait until what was written reached the pipe (after `send_request`)."""
        await self._drain()

    async def _drain(self) -> None:
        assert self.proc.stdin is not None
        try:
            await asyncio.wait_for(self.proc.stdin.drain(), 30)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ProcessGone(f"stdin closed: {exc}; stderr: {self.stderr_tail()}") from None

    # ------------------------------------------------------------------ receiving

    async def _read_stdout(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        buffer = b""
        try:
            while True:
                data = await stdout.read(READ_SIZE)
                now = time.perf_counter()
                if not data:
                    break
                buffer += data
                if b"\n" not in data:
                    continue
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._dispatch(now, line)
        except Exception as exc:  # never let the reader die silently
            self._gone = f"reader failed: {exc!r}"
        finally:
            await asyncio.sleep(0.05)  # let stderr catch up for the message
            reason = self._gone or f"agent closed stdout (exit code {self.proc.returncode})"
            tail = self.stderr_tail()
            self._gone = reason + (f"; stderr: {tail}" if tail else "")
            for future, _ in self._pending.values():
                if not future.done():
                    future.set_exception(ProcessGone(self._gone))
            self._pending.clear()

    async def _read_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        with contextlib.suppress(Exception):
            while data := await stderr.read(65536):
                self._stderr += data
                if len(self._stderr) > STDERR_KEEP:
                    del self._stderr[: len(self._stderr) - STDERR_KEEP]

    def _dispatch(self, now: float, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(message, dict):
            self.bad_lines += 1
            return
        method = message.get("method")
        if method is None:
            key = message.get("id")
            entry = self._pending.pop(key, None) if isinstance(key, (int, str)) else None
            if entry is None:
                return
            future, sent = entry
            if future.done():
                return
            error = message.get("error")
            if isinstance(error, dict):
                error_obj = RpcError(error.get("code", 0), str(error.get("message", "")), error.get("data"))
                reply = Reply(None, error_obj, sent, now, len(self.notifications))
            else:
                reply = Reply(message.get("result"), None, sent, now, len(self.notifications))
            future.set_result(reply)
        elif "id" in message:
            self._answer(message)
        else:
            self.notifications.append((now, message))

    def _answer(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = self.handler(message["method"], message.get("params"))
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        except Exception as exc:  # any failure becomes a reported error
            reply["error"] = {"code": -32603, "message": f"bench client: {exc}"}
        with contextlib.suppress(Exception):
            self._write(reply)

    # ------------------------------------------------------------------ shutdown

    async def close(self, timeout: float = 3.0) -> int | None:
        """EOF on stdin, wait a little, then SIGTERM and SIGKILL the whole process group.

        What a well-behaved agent would not do is recorded in `ANOMALIES`: lines on stdout that
        are not JSON, a non-zero exit or no exit after EOF, processes left behind, stderr output.
        """
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None and not self.proc.stdin.is_closing():
                self.proc.stdin.close()
        exited = True
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            exited = False
            for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
                self._signal_group(sig)
                try:
                    await asyncio.wait_for(self.proc.wait(), wait)
                    break
                except TimeoutError:
                    continue
        left = _group_members(self.proc.pid)
        self._signal_group(signal.SIGKILL)  # children it left behind, if any
        _LIVE.discard(self)
        for task in (self._reader, self._err_reader):
            task.cancel()
        # return_exceptions: the readers' own CancelledError is collected, ours (Ctrl-C) propagates
        await asyncio.gather(self._reader, self._err_reader, return_exceptions=True)
        who = self.argv_text
        if not exited:
            _anomaly(f"{who}: did not exit within {timeout:g} s of stdin EOF (terminated)")
        elif self.proc.returncode not in (0, None):
            _anomaly(f"{who}: exit code {self.proc.returncode} after stdin EOF")
        if left:
            _anomaly(f"{who}: left {len(left)} process(es) of its group running after exit")
        if self.bad_lines:
            _anomaly(f"{who}: wrote non-JSON lines on stdout")
        tail = self.stderr_tail(300)
        if tail:
            _anomaly(f"{who}: wrote to stderr: {tail!r}")
        return self.proc.returncode

    def kill_now(self) -> None:
        """Synchronous last resort (interpreter exit)."""
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


# --------------------------------------------------------------------------- agent→client requests


def answer_agent_request(method: str, params: Any) -> Any:
    """What the bench client answers: approve permissions (ACP and Wire), refuse the rest."""
    if method == "session/request_permission":
        options = (params or {}).get("options") or []
        allow = [o for o in options if o.get("kind") in ("allow_once", "allow_always")] or options
        if not allow:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": allow[0]["optionId"]}}
    if method == "request":  # Wire
        envelope = params or {}
        payload = envelope.get("payload") or {}
        if envelope.get("type") == "ApprovalRequest":
            return {"request_id": payload.get("id"), "response": "approve"}
        if envelope.get("type") == "QuestionRequest":
            return {"request_id": payload.get("id"), "answers": {}}
        if envelope.get("type") == "HookRequest":
            return {"request_id": payload.get("id"), "action": "allow"}
    raise RpcError(-32601, f"Method not found: {method} (benchmark client)")
