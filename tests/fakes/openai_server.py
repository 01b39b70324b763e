"""A real loopback HTTP server that plays scripted chat-completion replies.

It speaks OpenAI-compatible `POST .../chat/completions` SSE and, on paths ending in `/messages`,
Anthropic Messages SSE (`event:` + `data:` lines). Each request takes the next queued reply:

    with FakeLLMServer() as server:
        server.enqueue(text_reply("Hello", "!"), error_reply(429, "slow down", retry_after=2))
        ... point a provider / a `kimi` subprocess at server.base_url ...
        server.requests[0].body["messages"]

Replies: `Stream(events, delay=, delay_before=, done=, drop_after=)` streams events (dicts become
`data: <json>`; str items are written verbatim plus a blank line; bytes are written as-is),
`ErrorReply(status, body, headers)` answers with an HTTP error. It runs in a daemon thread, so it
serves sync tests, async tests and subprocesses alike. Stopping it wakes any delayed reply.

`GET .../models` (OpenAI's and Anthropic's model list) answers only when `models` is set:

    with FakeLLMServer(models=["m1", "m2"], api_keys={"good"}) as server:
        ... GET {server.base_url}/models -> {"object": "list", "data": [{"id": "m1", ...}, ...]}

`api_keys` (when set) makes it answer 401 unless the request carries one of them as
`Authorization: Bearer <key>` or `x-api-key: <key>`. GET requests are recorded in `requests` like
POSTs (`method` tells them apart); other GET paths answer 404 as before.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .serving import serve_in_thread

__all__ = [
    "ErrorReply",
    "FakeLLMServer",
    "FakeOpenAIServer",
    "RecordedRequest",
    "Reply",
    "Stream",
    "anthropic_text_reply",
    "anthropic_tool_reply",
    "chunk",
    "error_reply",
    "text_reply",
    "tool_call_delta",
    "tool_call_reply",
    "usage_chunk",
]

Event = dict[str, Any] | str | bytes


@dataclass
class Stream:
    """A 200 `text/event-stream` reply.

    `delay` is slept before each event, `delay_before` before the status line (to trigger read
    timeouts). `drop_after=n` closes the socket after n events without finishing the chunked
    body (a broken connection). `done` appends `data: [DONE]` on OpenAI paths.
    """

    events: Sequence[Event]
    delay: float = 0.0
    delay_before: float = 0.0
    done: bool = True
    drop_after: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ErrorReply:
    """An HTTP error answer; a dict body is sent as JSON."""

    status: int
    body: dict[str, Any] | str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_before: float = 0.0


Reply = Stream | ErrorReply


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw_body: bytes
    body: Any  # parsed JSON, or None when the body was not JSON


# --------------------------------------------------------------------------- the server


class FakeLLMServer:
    """Thread-backed HTTP server on 127.0.0.1 with an ephemeral port; see the module docstring."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        default: Reply | None = None,
        models: Sequence[str | dict[str, Any]] | None = None,
        api_keys: Iterable[str] | None = None,
    ) -> None:
        self._host = host
        self.default = default  # used when the queue is empty; None answers 400
        # `GET .../models`: ids (or whole model objects); None keeps answering 404
        self.models: list[str | dict[str, Any]] | None = list(models) if models is not None else None
        # keys `GET .../models` accepts; None accepts any request, keyed or not
        self.api_keys: set[str] | None = set(api_keys) if api_keys is not None else None
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._request_seen = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None

    # -- lifecycle

    def start(self) -> FakeLLMServer:
        httpd = _Server((self._host, 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._serving = serve_in_thread(httpd, "fake-llm-server")
        return self

    def stop(self) -> None:
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._serving.stop(before_close=httpd.close_connections)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Root URL, e.g. `http://127.0.0.1:54321` (Anthropic base_url)."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, e.g. `http://127.0.0.1:54321/v1`."""
        return f"{self.url}/v1"

    # -- script and records

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Replies not yet taken."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until `count` requests were received (for use from sync code and threads)."""
        deadline = time.monotonic() + timeout
        with self._request_seen:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"expected {count} requests, got {len(self._requests)}")
                self._request_seen.wait(left)
            return list(self._requests)

    def _take(self, request: RecordedRequest) -> Reply:
        with self._request_seen:
            self._requests.append(request)
            self._request_seen.notify_all()
            if self._queue:
                return self._queue.popleft()
            if self.default is not None:
                return self.default
            number = len(self._requests)
        return error_reply(400, f"fake server: no scripted reply left for request #{number}")

    def _answer_get(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        """Record a GET and pick its answer: the model list, a 401, or a 404."""
        with self._request_seen:
            self._requests.append(request)
            self._request_seen.notify_all()
            models = list(self.models) if self.models is not None else None
            api_keys = set(self.api_keys) if self.api_keys is not None else None
        path = request.path.split("?", 1)[0].rstrip("/")
        if models is None or not path.endswith("/models"):
            return 404, {"error": {"message": f"fake server: no route for GET {request.path}"}}
        if api_keys is not None and _presented_key(request.headers) not in api_keys:
            return 401, {"error": {"message": "fake server: invalid api key", "type": "authentication_error"}}
        data = [m if isinstance(m, dict) else {"id": m, "object": "model", "owned_by": "fake"} for m in models]
        return 200, {"object": "list", "data": data, "has_more": False}


def _presented_key(headers: dict[str, str]) -> str | None:
    """The key a request carries, OpenAI-style (Bearer) or Anthropic-style (`x-api-key`)."""
    auth = headers.get("authorization", "")
    if auth.startswith("Bearer "):
        return auth[len("Bearer "):]
    return headers.get("x-api-key")


FakeOpenAIServer = FakeLLMServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeLLMServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # clients hanging up (timeouts, aclose) are expected, not failures
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self.connections_lock:
            conns = list(self.connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Dropped(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # idle keep-alive connections do not pin threads forever

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def do_GET(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, data = self.server.fake._answer_get(RecordedRequest("GET", self.path, headers, b"", None))
        self._send_json(status, data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        reply = fake._take(RecordedRequest("POST", self.path, headers, raw, body))
        anthropic = self.path.rstrip("/").endswith("/messages")
        try:
            if reply.delay_before and self._sleep(reply.delay_before):
                return
            if isinstance(reply, ErrorReply):
                self._send_error_reply(reply)
            else:
                self._send_stream(reply, anthropic=anthropic)
        except (_Dropped, OSError):
            self.close_connection = True

    # -- writing

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; True means it is stopping (give up on the reply)."""
        stopping = self.server.fake._stopping.wait(seconds)
        if stopping:
            self.close_connection = True
        return stopping

    def _send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_error_reply(self, reply: ErrorReply) -> None:
        if isinstance(reply.body, dict):
            self._send_json(reply.status, reply.body, reply.headers)
            return
        payload = reply.body.encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, reply: Stream, *, anthropic: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        for index, event in enumerate(reply.events):
            if reply.drop_after is not None and index >= reply.drop_after:
                self._drop()
            if reply.delay and self._sleep(reply.delay):
                return
            self._write_chunk(_encode_event(event, anthropic=anthropic))
        if reply.drop_after is not None:
            self._drop()
        if reply.done and not anthropic:
            self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        if not data:
            return
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Close abruptly, leaving the chunked body unfinished."""
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise _Dropped


def _encode_event(event: Event, *, anthropic: bool) -> bytes:
    if isinstance(event, bytes):
        return event
    if isinstance(event, str):
        return (event + "\n\n").encode()
    data = json.dumps(event, ensure_ascii=False)
    if anthropic and "type" in event:
        return f"event: {event['type']}\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()


# --------------------------------------------------------------------------- OpenAI builders


def chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: Sequence[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    id: str = "chatcmpl-fake",
    model: str = "fake-model",
    reasoning_key: str = "reasoning_content",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta[reasoning_key] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = list(tool_calls)
    out: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def tool_call_delta(
    index: int,
    *,
    id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    """One `delta.tool_calls[]` entry; the first one of a call carries id, type and name."""
    out: dict[str, Any] = {"index": index}
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        out["function"] = function
    return out


def usage_chunk(
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int | None = None,
    *,
    moonshot: bool = False,
    id: str = "chatcmpl-fake",
) -> dict[str, Any]:
    """The final usage chunk (empty `choices`), cached tokens OpenAI- or Moonshot-style."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        if moonshot:
            usage["cached_tokens"] = cached_tokens
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [],
        "usage": usage,
    }


def text_reply(
    *pieces: str,
    reasoning: Iterable[str] = (),
    usage: tuple[int, int] | tuple[int, int, int] | None = (10, 5),
    id: str = "chatcmpl-fake",
    delay: float = 0.0,
) -> Stream:
    """Reasoning chunks, then one content chunk per piece, finish_reason, usage, [DONE]."""
    events: list[Event] = [chunk(reasoning=r, id=id) for r in reasoning]
    events += [chunk(content=p, id=id) for p in pieces]
    events.append(chunk(finish_reason="stop", id=id))
    if usage is not None:
        events.append(usage_chunk(*usage, id=id))
    return Stream(events, delay=delay)


def tool_call_reply(
    *calls: tuple[str, str, str],
    text: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    id: str = "chatcmpl-fake",
) -> Stream:
    """Optional text, then each `(call_id, name, arguments)` as an opening delta plus arguments."""
    events: list[Event] = []
    if text:
        events.append(chunk(content=text, id=id))
    for index, (call_id, name, arguments) in enumerate(calls):
        events.append(chunk(tool_calls=[tool_call_delta(index, id=call_id, name=name, arguments="")], id=id))
        events.append(chunk(tool_calls=[tool_call_delta(index, arguments=arguments)], id=id))
    events.append(chunk(finish_reason="tool_calls", id=id))
    if usage is not None:
        events.append(usage_chunk(*usage, id=id))
    return Stream(events)


def error_reply(
    status: int,
    message: str,
    *,
    retry_after: float | str | None = None,
    type: str = "error",
) -> ErrorReply:
    """An OpenAI-shaped error body `{"error": {"message", "type"}}`."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return ErrorReply(status, {"error": {"message": message, "type": type}}, headers)


# --------------------------------------------------------------------------- Anthropic builders


def _message_start(
    message_id: str, input_tokens: int, cache_read: int, cache_creation: int
) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "fake-claude",
            "content": [],
            "stop_reason": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_creation,
            },
        },
    }


def _message_end(output_tokens: int, stop_reason: str) -> list[Event]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def anthropic_text_reply(
    *pieces: str,
    thinking: str | None = None,
    signature: str | None = None,
    message_id: str = "msg_fake",
    usage: tuple[int, int, int, int] = (10, 5, 0, 0),
) -> Stream:
    """Optional thinking block (with signature), then a text block; `usage` is (input, output,
    cache_read, cache_creation)."""
    input_tokens, output_tokens, cache_read, cache_creation = usage
    events: list[Event] = [
        _message_start(message_id, input_tokens, cache_read, cache_creation),
        {"type": "ping"},
    ]
    index = 0
    if thinking is not None:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": ""},
            }
        )
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "thinking_delta", "thinking": thinking},
            }
        )
        if signature:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": signature},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    if pieces:
        events.append(
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
        )
        for piece in pieces:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    return Stream(events + _message_end(output_tokens, "end_turn"))


def anthropic_tool_reply(
    *calls: tuple[str, str, Sequence[str]],
    text: str | None = None,
    message_id: str = "msg_fake",
) -> Stream:
    """Optional text block, then a tool_use block per `(id, name, json_fragments)`."""
    events: list[Event] = [_message_start(message_id, 10, 0, 0)]
    index = 0
    if text:
        events += [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0},
        ]
        index = 1
    for call_id, name, fragments in calls:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            }
        )
        for fragment in fragments:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": fragment},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    return Stream(events + _message_end(7, "tool_use"))
