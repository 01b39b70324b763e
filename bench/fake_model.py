"""A loopback OpenAI-compatible chat-completions server tuned for speed (asyncio streams, SSE).

Run it as its own process (`python -m bench.fake_model`): it prints `PORT <n>` and serves until
its stdin closes, so its CPU work never competes with the benchmark client's event loop or GIL.

The reply is chosen by a command in the last user message (so any agent that forwards the
prompt to an OpenAI-compatible model can be measured):

    bench:burst n=2000               2,000 chunks "c0000 " … "c1999 ", pre-encoded, one write
    bench:paced n=500 interval_ms=1  one chunk per interval; each chunk's text is its emit time,
                                     "<time.perf_counter()>|" padded with "~" to PACED_WIDTH chars
    bench:echo token=T n=50          chunks "T.000 " … "T.049 ", yielding to the loop between them
    anything else                    one chunk "ok"

HTTP/1.1 keep-alive with chunked transfer encoding; `GET …/models` lists one model.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import sys
import time
from typing import Any

PACED_WIDTH = 24
PACED_PATTERN = re.compile(r"(\d+\.\d{6})\|")
_COMMAND = re.compile(r"bench:(\w+)((?:[ \t]+\w+=\S+)*)")
_CHUNK_PREFIX = (
    b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"bench",'
    b'"choices":[{"index":0,"delta":{"content":'
)
_CHUNK_SUFFIX = b'},"finish_reason":null}]}\n\n'
_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


# --------------------------------------------------------------------------- reply texts


def burst_texts(n: int) -> list[str]:
    return [f"c{i:04d} " for i in range(n)]


def echo_texts(token: str, n: int) -> list[str]:
    return [f"{token}.{i:03d} " for i in range(n)]


def paced_text(now: float) -> str:
    return f"{now:.6f}|".ljust(PACED_WIDTH, "~")


def parse_command(text: str) -> tuple[str, dict[str, str]]:
    match = _COMMAND.search(text)
    if match is None:
        return "", {}
    args = dict(pair.split("=", 1) for pair in match.group(2).split())
    return match.group(1), args


# --------------------------------------------------------------------------- SSE framing


def _http_chunk(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(body), body)


def content_event(text: str) -> bytes:
    return _CHUNK_PREFIX + json.dumps(text).encode() + _CHUNK_SUFFIX


def _final_events(completion_tokens: int) -> bytes:
    final = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": completion_tokens,
            "total_tokens": 1000 + completion_tokens,
        },
    }
    return b"data: " + json.dumps(final, separators=(",", ":")).encode() + b"\n\ndata: [DONE]\n\n"


@functools.lru_cache(maxsize=8)
def _burst_body(n: int) -> bytes:
    events = b"".join(content_event(t) for t in burst_texts(n))
    return _http_chunk(events) + _http_chunk(_final_events(n)) + b"0\r\n\r\n"


# --------------------------------------------------------------------------- the reference client


async def direct_paced(port: int, n: int, interval_ms: float, timeout: float = 30.0) -> list[float]:
    """Read a paced stream straight from the fake model (no agent in between): the emit → receive
    latencies in ms of each chunk, i.e. the floor that loopback HTTP and scheduling on this
    machine put under any agent's number."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        body = json.dumps(
            {
                "model": "bench",
                "stream": True,
                "messages": [{"role": "user", "content": f"bench:paced n={n} interval_ms={interval_ms:g}"}],
            }
        ).encode()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        latencies: list[float] = []
        text, pos = "", 0
        deadline = time.perf_counter() + timeout
        while len(latencies) < n:
            data = await asyncio.wait_for(reader.read(65536), max(0.01, deadline - time.perf_counter()))
            now = time.perf_counter()
            if not data:
                break
            text += data.decode("latin-1")
            for match in PACED_PATTERN.finditer(text, pos):
                latencies.append((now - float(match.group(1))) * 1000.0)
                pos = match.end()
        return latencies
    finally:
        writer.close()


# --------------------------------------------------------------------------- the server


def _last_user_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in reversed(messages or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


async def _reply(writer: asyncio.StreamWriter, body: Any) -> None:
    command, args = parse_command(_last_user_text(body))
    if command == "burst":
        writer.write(_HEAD + _burst_body(int(args.get("n", 2000))))
    elif command == "paced":
        n = int(args.get("n", 500))
        interval = float(args.get("interval_ms", 1.0)) / 1000.0
        writer.write(_HEAD)
        await writer.drain()
        start = time.perf_counter()
        for i in range(n):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(_http_chunk(content_event(paced_text(time.perf_counter()))))
        writer.write(_http_chunk(_final_events(n)) + b"0\r\n\r\n")
    elif command == "echo":
        texts = echo_texts(args.get("token", "x"), int(args.get("n", 50)))
        writer.write(_HEAD)
        for text in texts:
            writer.write(_http_chunk(content_event(text)))
            await asyncio.sleep(0)
        writer.write(_http_chunk(_final_events(len(texts))) + b"0\r\n\r\n")
    else:
        writer.write(_HEAD + _http_chunk(content_event("ok") + _final_events(1)) + b"0\r\n\r\n")
    await writer.drain()


def _plain(status: str, payload: Any) -> bytes:
    data = json.dumps(payload).encode()
    return b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status.encode(),
        len(data),
        data,
    )


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, *_ = lines[0].split(" ")
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path.rstrip("/").endswith("/models"):
                writer.write(
                    _plain("200 OK", {"object": "list", "data": [{"id": "bench", "object": "model"}]})
                )
            elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    writer.write(_plain("400 Bad Request", {"error": {"message": "body is not JSON"}}))
                    continue
                await _reply(writer, body)
            else:
                writer.write(_plain("404 Not Found", {"error": {"message": f"no route {method} {path}"}}))
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_serve_connection, "127.0.0.1", port)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {bound}\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with server:
        while await stdin.read(4096):  # serve until the parent closes our stdin (or dies)
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description="Loopback OpenAI-compatible SSE server for the benchmarks.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(_main(args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
