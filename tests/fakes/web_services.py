"""A loopback stand-in for Kimi's web services (`[services.moonshot_search]` at `/search`,
`[services.moonshot_fetch]` at `/fetch`): records every POST (headers and JSON body) and answers
what the test set, by default a two-result search and a Markdown page. Runs in a daemon thread,
so tool tests and subprocess tests alike can use it:

    with FakeWebServices() as services:
        services.replies["/search"] = Reply(500, b"down")
        ... POST f"{services.url}/search" ...
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .serving import ServerThread

SEARCH_RESULTS = [
    {
        "site_name": "Example Docs",
        "title": "Installing widgets",
        "url": "https://docs.example.com/widgets",
        "snippet": "How to install widgets on any platform.",
        "date": "2025-01-02",
        "icon": "",
        "mime": "text/html",
    },
    {
        "site_name": "Blog",
        "title": "Widgets 2.0 released",
        "url": "https://blog.example.com/widgets-2",
        "snippet": "Faster and smaller widgets.",
        "content": "Widgets 2.0 is out. It is faster.",
    },
]
FETCHED_MARKDOWN = "# Service page\n\nExtracted by the fetch service.\n"


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0  # seconds to wait before answering (a slow service)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


def search_reply(results: list[dict[str, Any]] | None = None) -> Reply:
    return Reply(200, json.dumps({"search_results": SEARCH_RESULTS if results is None else results}).encode())


@dataclass
class FakeWebServices:
    replies: dict[str, Reply] = field(default_factory=dict)
    queued: dict[str, list[Reply]] = field(default_factory=dict)  # answered first, in order, then `replies`
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replies.setdefault("/search", search_reply())
        self.replies.setdefault("/fetch", Reply(200, FETCHED_MARKDOWN.encode(), "text/markdown; charset=utf-8"))
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                owner.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                queue = owner.queued.get(self.path)
                reply = queue.pop(0) if queue else owner.replies.get(self.path, Reply(404, b'{"error": "no such endpoint"}'))
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._serving = ServerThread(self._server, "fake-web-services")

    def of(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def __enter__(self) -> FakeWebServices:
        self._serving.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._serving.stop()
