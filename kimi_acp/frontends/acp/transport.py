"""stdio for the ACP server: one JSON-RPC message per line, each request answered exactly once.

This is the SDK's message-level `Transport` seam (send/receive/close). Compared with the SDK's
own stdio transport it
(a) checks every line before the SDK sees it — malformed JSON, absurd nesting, an `id` that is a
    boolean, object or array, a `method` that is not a string, an id without a method — and
    answers with the JSON-RPC error itself, so the SDK only handles well-formed messages;
(b) keeps a ledger of the requests it handed out and not yet answered: a second answer to the
    same request is dropped, and at shutdown every request still open gets an error, so a client
    never waits for an answer that cannot come;
(c) writes each message in the same loop step it is produced — no per-message queue, future and
    drain, which matters for a 2,000-chunk answer;
(d) can carry messages read before the SDK was loaded (the fast `initialize` path in `entry.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

from ...startup.stdio import StdoutWriter
from ...wire import jsonrpc as rpc

log = logging.getLogger(__name__)
REQUEST_CANCELLED = -32800  # ACP's (and LSP's) "request cancelled"


def _valid_id(value: Any) -> bool:
    """ACP request ids: a string, an integer or null (the schema's RequestId)."""
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_message(message: Any) -> rpc.JsonRpcError | None:
    """Why a decoded line is not a message the SDK can handle, or None when it is.

    A malformed *response* (no method, with result or error) raises rpc.InvalidResponse: it is
    dropped, never answered."""
    if not isinstance(message, dict):
        return rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: a JSON-RPC message must be an object")
    has_id = "id" in message
    request_id = message.get("id")
    echo = request_id if has_id and _valid_id(request_id) else None
    if "method" not in message:
        if "result" in message or "error" in message:
            if not has_id or not _valid_id(request_id) or request_id is None:
                raise rpc.InvalidResponse("a response needs the id of the request it answers")
            return None
        return rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: missing method", request_id=echo)
    if has_id and not _valid_id(request_id):
        return rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: id must be a string, an integer or null")
    if message.get("jsonrpc") != rpc.JSONRPC_VERSION:
        return rpc.JsonRpcError(rpc.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id=echo)
    method = message["method"]
    if not isinstance(method, str) or not method:
        return rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: method must be a non-empty string", request_id=echo)
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return rpc.JsonRpcError(rpc.INVALID_PARAMS, f"Invalid params for {method}: params must be an object", request_id=echo)
    return None


class StdioTransport:
    def __init__(self, reader: Any, writer: StdoutWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False
        self._open_requests: Counter[Any] = Counter()  # id -> requests with that id not yet answered
        self._all_answered = asyncio.Event()
        self._all_answered.set()

    # ------------------------------------------------------------------ Transport protocol

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message, or None at end of input."""
        while not self._closed:
            try:
                line = await self._reader.readline()
            except ValueError:  # longer than the reader's limit
                self._reply_error(None, rpc.JsonRpcError(rpc.INVALID_REQUEST, "Invalid request: message too large"))
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = rpc.loads_line(line)
                problem = check_message(message)
            except rpc.JsonRpcError as exc:
                log.warning("answering an unreadable line with %d", exc.code)
                self._reply_error(exc.request_id, exc)
                continue
            except rpc.InvalidResponse as exc:
                log.warning("ignoring a malformed response from the client: %s", exc)
                continue
            if problem is not None:
                if not isinstance(message, dict) or "id" in message or problem.code != rpc.INVALID_PARAMS:
                    self._reply_error(problem.request_id, problem)
                else:  # a notification is never answered, not even with an error
                    log.warning("ignoring notification %s: %s", message.get("method"), problem.message)
                continue
            return self._admit(message)
        return None

    async def send(self, message: dict[str, Any]) -> None:
        if "method" not in message and "id" in message and not self._settle(message["id"]):
            log.warning("dropping a second answer to request %r", message["id"])
            return
        self.write(message)

    async def close(self) -> None:
        self._closed = True
        await self._writer.drain()

    # ------------------------------------------------------------------ the ledger

    def _admit(self, message: dict[str, Any]) -> dict[str, Any]:
        if "method" in message and "id" in message:
            self._open_requests[message["id"]] += 1
            self._all_answered.clear()
        if "method" in message and message.get("params") is None:
            message = {**message, "params": {}}  # JSON-RPC lets a client omit empty params
        return message

    def _settle(self, request_id: Any) -> bool:
        """Count an answer to `request_id`; False when no request is waiting for one."""
        if self._open_requests[request_id] <= 0:
            del self._open_requests[request_id]
            return False
        self._open_requests[request_id] -= 1
        if self._open_requests[request_id] == 0:
            del self._open_requests[request_id]
        if not self._open_requests:
            self._all_answered.set()
        return True

    async def answer_open_requests(self, grace_s: float) -> None:
        """Shutdown: let running handlers answer for up to `grace_s`, then answer the rest."""
        try:
            await asyncio.wait_for(self._all_answered.wait(), grace_s)
        except TimeoutError:
            pass
        error = rpc.JsonRpcError(REQUEST_CANCELLED, "Request cancelled: the server is shutting down")
        for request_id, count in list(self._open_requests.items()):
            for _ in range(count):
                self.write(rpc.error_message(request_id, error))
        self._open_requests.clear()
        self._all_answered.set()

    # ------------------------------------------------------------------ ours

    def _reply_error(self, request_id: Any, error: rpc.JsonRpcError) -> None:
        self.write(rpc.error_message(request_id, error))

    def write(self, message: dict[str, Any]) -> None:
        """Write one message now (synchronously); safe to call from stream subscribers."""
        try:
            data = rpc.dumps(message)
        except (TypeError, ValueError, RecursionError) as exc:
            log.error("cannot encode an outgoing %s: %s", message.get("method") or "response", exc)
            if "method" in message or "id" not in message:
                return
            error = rpc.JsonRpcError(rpc.INTERNAL_ERROR, "Internal error: the answer could not be encoded")
            data = rpc.dumps(rpc.error_message(message["id"], error))
        self._writer.write(data)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write(rpc.notification_message(method, params))
