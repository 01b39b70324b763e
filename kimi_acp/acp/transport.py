"""stdio for the ACP server: one JSON-RPC message per line, written without queueing.

This is the SDK's message-level `Transport` seam (send/receive/close). Compared with the SDK's
own stdio transport it (a) answers a malformed line with a -32700 error instead of dropping it,
(b) writes each message in the same loop step it is produced — no per-message queue, future and
drain, which matters for a 2,000-chunk answer — and (c) can carry messages read before the SDK
was loaded (the fast `initialize` path in `entry.py`).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from typing import Any

from ..stdio import StdoutWriter
from ..wire import jsonrpc as rpc

log = logging.getLogger(__name__)


class StdioTransport:
    def __init__(self, reader: Any, writer: StdoutWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._pushed_back: deque[dict[str, Any]] = deque()
        self._closed = False

    # ------------------------------------------------------------------ Transport protocol

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message, or None at end of input."""
        if self._pushed_back:
            return self._pushed_back.popleft()
        while not self._closed:
            try:
                line = await self._reader.readline()
            except ValueError:  # longer than the reader's limit
                self.write(rpc.error_message(None, rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: message too large")))
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                log.warning("answering an unparsable line with -32700")
                self.write(rpc.error_message(None, rpc.JsonRpcError(rpc.PARSE_ERROR, "Parse error")))
                continue
            if not isinstance(message, dict):
                self.write(rpc.error_message(None, rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: expected an object")))
                continue
            return message
        return None

    async def send(self, message: dict[str, Any]) -> None:
        self.write(message)

    async def close(self) -> None:
        self._closed = True
        await self._writer.drain()

    # ------------------------------------------------------------------ ours

    def write(self, message: dict[str, Any]) -> None:
        """Write one message now (synchronously); safe to call from stream subscribers."""
        self._writer.write(rpc.dumps(message))

    def push_back(self, message: dict[str, Any]) -> None:
        """Return a message read early so `receive` hands it out first."""
        self._pushed_back.append(message)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write(rpc.notification_message(method, params))
