"""Drive a real `kimi --wire` subprocess over stdio, as a Wire client would."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 15.0


def scripted_config_data(
    directory: Path, scripts: Sequence[str], *, max_context_size: int = 100_000, always_ask: bool = True
) -> dict[str, Any]:
    """The canonical test config (a `_scripted_echo` model); its scripts are written to `directory`.

    `always_ask`: every Shell command asks, as before issue #29, so that the tests of approval
    cards, answers and cancels can drive them with `echo` and `ls`. The default of a real config
    (commands that only read run unasked) is tested with `always_ask=False`
    (tests/e2e/test_read_only_wire.py, test_read_only_acp.py)."""
    scripts_file = directory / "scripts.json"
    scripts_file.write_text(json.dumps(list(scripts)), encoding="utf-8")
    return {
        "permissions": {"always_ask": always_ask},
        "default_model": "scripted",
        "models": {
            "scripted": {"provider": "scripted_provider", "model": "scripted_echo", "max_context_size": max_context_size}
        },
        "providers": {
            "scripted_provider": {
                "type": "_scripted_echo",
                "base_url": "",
                "api_key": "",
                "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(scripts_file)},
            }
        },
    }


def scripted_config(tmp_path: Path, scripts: Sequence[str], *, max_context_size: int = 100_000, always_ask: bool = True) -> Path:
    """Write `_scripted_echo` scripts and the canonical test config; returns the config path."""
    path = tmp_path / "config.json"
    data = scripted_config_data(tmp_path, scripts, max_context_size=max_context_size, always_ask=always_ask)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return "tool_call: " + json.dumps({"id": call_id, "name": name, "arguments": args})


class WireClientMixin:
    """The line-level JSON-RPC helpers of a Wire client, over `send_raw` and `recv` (a process's
    stdio in `WireProcess`, an in-memory pair in `tests/support/inmemory.WireMemory`)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self._next_id = 0

    async def send_raw(self, line: str | bytes) -> None:
        raise NotImplementedError

    async def recv(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        raise NotImplementedError

    def _received(self, line: bytes) -> dict[str, Any]:
        message = json.loads(line)
        self.received.append(message)
        return message

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message))

    async def request(self, method: str, params: Any = None, *, id: Any = None) -> Any:
        """Send a request; returns its id (use `response(id)` to wait for the answer)."""
        if id is None:
            self._next_id += 1
            id = f"req-{self._next_id}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return id

    async def respond(self, request_id: Any, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
        """Read messages until one matches; returns all read, the match last."""
        seen = []
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            message = await self.recv(max(remaining, 0.01))
            seen.append(message)
            if predicate(message):
                return seen

    async def response(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Wait for the response to `request_id`; returns (response, messages before it)."""
        seen = await self.until(lambda m: m.get("id") == request_id and "method" not in m, timeout)
        return seen[-1], seen[:-1]

    async def call(self, method: str, params: Any = None, *, timeout: float = DEFAULT_TIMEOUT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        request_id = await self.request(method, params)
        return await self.response(request_id, timeout)

    async def call_approving(
        self, method: str, params: Any = None, *, timeout: float = DEFAULT_TIMEOUT
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """`call`, approving (once) every approval the agent asks meanwhile; returns (response,
        messages before it, the approval requests' payloads)."""
        request_id = await self.request(method, params)
        seen: list[dict[str, Any]] = []
        asked: list[dict[str, Any]] = []
        while True:
            part = await self.until(lambda m: m.get("method") == "request" or (m.get("id") == request_id and "method" not in m), timeout)
            seen += part[:-1]
            last = part[-1]
            if last.get("method") != "request":
                return last, seen, asked
            seen.append(last)
            payload = last["params"]["payload"]
            asked.append(payload)
            await self.respond(last["id"], {"request_id": payload["id"], "response": "approve"})

    async def next_request(self, timeout: float = DEFAULT_TIMEOUT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Wait for the next agent→client `request`; returns (request, messages before it)."""
        seen = await self.until(lambda m: m.get("method") == "request", timeout)
        return seen[-1], seen[:-1]


class WireProcess(WireClientMixin):
    """One `python -m kimi_acp --wire ...` child with line-level JSON helpers."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        super().__init__()
        self.proc = proc

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> WireProcess:
        return await cls.spawn("--wire", *args, env=env, cwd=cwd)

    @classmethod
    async def spawn(cls, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> WireProcess:
        """`python -m kimi_acp <args>` with line-level JSON helpers (any JSON-RPC over stdio)."""
        # A crash (SIGSEGV) prints the Python stacks of every thread to stderr, which tests show.
        full_env = {"PYTHONFAULTHANDLER": "1", **os.environ, **(env or {})}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kimi_acp",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=str(cwd) if cwd else None,
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    async def send_raw(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = line.encode() if isinstance(line, str) else line
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        await self.proc.stdin.drain()

    async def recv(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            stderr = await self.stderr_text()
            raise EOFError(f"kimi --wire closed stdout; stderr: {stderr}")
        return self._received(line)

    async def close(self, timeout: float = 10.0) -> int:
        """Close stdin (EOF) and wait for a clean exit."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise

    async def stderr_text(self) -> str:
        assert self.proc.stderr is not None
        try:
            data = await asyncio.wait_for(self.proc.stderr.read(), 5)
        except TimeoutError:
            return ""
        return data.decode(errors="replace")

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    async def aclose(self) -> None:
        """Teardown: close if still running; kill if it will not."""
        if self.proc.returncode is None:
            try:
                await self.close(timeout=5)
            except Exception:  # teardown: whatever went wrong, it must not live on
                self.kill()


def events(messages: list[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    """The `event` params among messages (optionally of one type)."""
    out = [m["params"] for m in messages if m.get("method") == "event"]
    return [e for e in out if kind is None or e["type"] == kind]


def event_types(messages: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events(messages)]


def text_of(messages: list[dict[str, Any]]) -> str:
    return "".join(
        e["payload"]["text"] for e in events(messages, "ContentPart") if e["payload"].get("type") == "text"
    )
